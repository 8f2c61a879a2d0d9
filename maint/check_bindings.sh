#!/bin/sh
# check_bindings.sh — the generated C entry points (src/mpi/*_bindings.inc) against
# maint/rma_api.txt and the prototypes of MPICH's <mpi.h> and include/nbrma.h, part of
# `make check`: fails when a file differs from what maint/gen_bindings.py writes.
# Needs top_srcdir (set by `make check`; default: the current directory) and python3.
if ! command -v python3 > /dev/null 2>&1; then
    echo "check_bindings: FAIL: python3 not found (maint/install-deps.sh)"
    exit 1
fi
exec python3 "${top_srcdir:-.}/maint/gen_bindings.py" --check --srcdir "${top_srcdir:-.}"
