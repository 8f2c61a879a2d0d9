#!/bin/sh
# install-deps.sh — install, from Debian's archive, everything nbrma's build, tests and
# benchmarks need (Debian 12 "bookworm": MPICH 4.0.2, UCX 1.13). libasan8, libubsan1 and
# libtsan2 (gcc 12's sanitizer runtimes, for make check-asan and make check-tsan) come
# with g++ anyway; they are listed so that a missing one is installed rather than found
# at link time. python3 parses nbrma-info's JSON (maint/check_nbrma_info.sh) and groff-base
# renders the man pages (maint/check_man.sh) in make check. gdb (and procps, to find
# the processes) prints the stacks of an MPI test that hangs (test/rma/runtests).
#
# --with-openmpi also installs Open MPI (openmpi-bin, libopenmpi-dev), the best peer of
# the benchmarks: configure then builds bench_ompi and nbrma-bench adds Open MPI's
# osc/sm and osc/rdma series. Installing Open MPI makes it Debian's default MPI (its
# alternatives have the higher priority), so the script then sets the alternatives mpi,
# mpirun and mpi-<multiarch> (mpicc, mpiexec, the mpi.h directory) back to MPICH's
# (update-alternatives --set), where they are not MPICH's already; nbrma itself always
# uses the .mpich names.
#
# Idempotent: when every package is already installed (and, with --with-openmpi, the
# alternatives are MPICH's) it does nothing and touches no package index. Otherwise it
# runs apt-get and update-alternatives as root, or through sudo; it runs
# `apt-get update` only when the install fails without it (e.g. a fresh container
# whose package lists are empty).
#
# Usage: maint/install-deps.sh [--with-openmpi]
set -eu

packages="mpich libmpich-dev libucx-dev ucx-utils libhwloc-dev libibverbs-dev
          googletest libgtest-dev autoconf automake libtool pkg-config make g++
          libasan8 libubsan1 libtsan2 gnuplot-nox python3 groff-base
          gfortran gdb procps"
with_openmpi=0
for arg in "$@"; do
    case $arg in
        --with-openmpi) with_openmpi=1 ;;
        -h | --help) sed -n '2,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "install-deps: unknown argument '$arg' (usage: $0 [--with-openmpi])" >&2; exit 2 ;;
    esac
done
[ $with_openmpi -eq 1 ] && packages="$packages openmpi-bin libopenmpi-dev"

# The MPI alternatives (mpi, mpirun, mpi-<multiarch>) whose value is not MPICH's, as
# "name path-of-mpich's-alternative" lines.
not_mpich() {
    update-alternatives --get-selections 2>/dev/null |
        awk '$1 == "mpi" || $1 == "mpirun" || $1 ~ /^mpi-.*-linux-gnu/ { print $1, $3 }' |
        while read -r name value; do
            case $value in *mpich*) continue ;; esac
            mpich=$(update-alternatives --query "$name" | sed -n 's/^Alternative: \(.*mpich.*\)$/\1/p' | head -n 1)
            [ -n "$mpich" ] && echo "$name $mpich"
        done
}
as_root_command() {
    if [ "$(id -u)" -eq 0 ]; then
        echo ""
    elif command -v sudo >/dev/null 2>&1; then
        echo "sudo"
    else
        echo "install-deps: need root or sudo to $1" >&2
        exit 1
    fi
}
mpich_alternatives() {
    [ $with_openmpi -eq 1 ] || return 0
    switch=$(not_mpich)
    [ -n "$switch" ] || { echo "install-deps: MPI alternatives are MPICH's"; return 0; }
    as_root=$(as_root_command "set the MPI alternatives back to MPICH") || exit 1
    echo "$switch" | while read -r name path; do
        echo "install-deps: update-alternatives --set $name $path"
        $as_root update-alternatives --set "$name" "$path"
    done
}

missing=""
for package in $packages; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
    [ "$status" = installed ] || missing="$missing $package"
done

if [ -z "$missing" ]; then
    echo "install-deps: all dependencies installed"
    mpich_alternatives
    exit 0
fi
echo "install-deps: installing:$missing"
as_root=$(as_root_command "install:$missing") || exit 1

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
mpich_alternatives
echo "install-deps: done"
