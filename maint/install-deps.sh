#!/bin/sh
# install-deps.sh — install, from Debian's archive, everything nbrma's build, tests and
# benchmarks need (Debian 12 "bookworm": MPICH 4.0.2, UCX 1.13). libasan8, libubsan1 and
# libtsan2 (gcc 12's sanitizer runtimes, for make check-asan and make check-tsan) come
# with g++ anyway; they are listed so that a missing one is installed rather than found
# at link time. python3 parses nbrma-info's JSON (maint/check_nbrma_info.sh) and groff-base
# renders the man pages (maint/check_man.sh) in make check. gdb (and procps, to find
# the processes) prints the stacks of an MPI test that hangs (test/rma/runtests).
#
# Idempotent: when every package is already installed it does nothing and touches no
# package index. Otherwise it runs apt-get as root, or through sudo; it runs
# `apt-get update` only when the install fails without it (e.g. a fresh container
# whose package lists are empty).
set -eu

packages="mpich libmpich-dev libucx-dev ucx-utils libhwloc-dev libibverbs-dev
          googletest libgtest-dev autoconf automake libtool pkg-config make g++
          libasan8 libubsan1 libtsan2 gnuplot-nox python3 groff-base
          gfortran gdb procps"

missing=""
for package in $packages; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
    [ "$status" = installed ] || missing="$missing $package"
done

if [ -z "$missing" ]; then
    echo "install-deps: all dependencies installed"
    exit 0
fi
echo "install-deps: installing:$missing"

if [ "$(id -u)" -eq 0 ]; then
    as_root=""
elif command -v sudo >/dev/null 2>&1; then
    as_root="sudo"
else
    echo "install-deps: need root or sudo to install:$missing" >&2
    exit 1
fi

# shellcheck disable=SC2086  # word splitting of the package list is intended
install() {
    $as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends $missing
}

if ! install; then
    echo "install-deps: install failed; refreshing the package lists and retrying" >&2
    $as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    install
fi
echo "install-deps: done"
