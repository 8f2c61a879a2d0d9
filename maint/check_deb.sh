#!/bin/sh
# check_deb.sh — check the Debian binary packages maint/build-deb.sh left in DIR, without
# installing them (nothing on the system changes):
#
#   ./maint/check_deb.sh [DIR]      (default DIR: build-deb/ in the source tree)
#
# - what each package holds: libnbrma0 the library and nbrma-helper; libnbrma-dev the
#   header, libnbrma.so, libnbrma.a, nbrma.pc and a section-3 page per MPIX_ and nbrma_ call;
#   nbrma-tools nbrma-info, nbrma-bench and the nbrma(7) page the section-3 pages cite;
# - the relations: libnbrma-dev recommends nbrma-tools (where nbrma(7) is), and
#   libnbrma0's dependency on libmpich12 is bounded above (nbrma is built for MPICH
#   4.0's ABI: "<< 4.1");
# - the packages work: libnbrma0 and libnbrma-dev unpacked into a temporary root,
#   debian/tests/put_epoch.c is built with mpicc.mpich and the unpacked nbrma.pc (its
#   paths under that root), linked to the unpacked libnbrma.so.0, and run with 2 ranks,
#   in the default progress mode and with NBRMA_PROGRESS=interrupt (NBRMA_HELPER: the
#   unpacked nbrma-helper); the unpacked nbrma-info answers --version.
# Prints a line per check and "check_deb: N passed, N failed"; exits 1 if any failed.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-"$top/build-deb"}
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
passed=0
failed=0

check() { # check DESCRIPTION COMMAND...
    description=$1
    shift
    if "$@" >/dev/null 2>&1; then
        echo "PASS $description"
        passed=$((passed + 1))
    else
        echo "FAIL $description"
        failed=$((failed + 1))
    fi
}

package() { # the .deb of package $1
    ls "$dir/$1"_*_"$arch".deb 2>/dev/null | head -n 1
}

holds() { # holds PACKAGE PATH...: every PATH is in PACKAGE's data
    deb=$(package "$1")
    shift
    [ -n "$deb" ] || return 1
    listing=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
    for path in "$@"; do
        printf '%s\n' "$listing" | grep -qx "$path" || {
            echo "check_deb: $path missing" >&2
            return 1
        }
    done
}

field_has() { # field_has PACKAGE FIELD TEXT
    deb=$(package "$1")
    [ -n "$deb" ] && dpkg-deb -f "$deb" "$2" | grep -qF "$3"
}

libdir=/usr/lib/$multiarch
for name in libnbrma0 libnbrma-dev nbrma-tools; do
    check "$name: built" test -n "$(package "$name")"
done
check "libnbrma0: library and helper" holds libnbrma0 "$libdir/libnbrma.so.0" \
    /usr/libexec/nbrma-helper
check "libnbrma-dev: header, libraries, nbrma.pc" holds libnbrma-dev /usr/include/nbrma.h \
    "$libdir/libnbrma.so" "$libdir/libnbrma.a" "$libdir/pkgconfig/nbrma.pc"
# shellcheck disable=SC2046  # one word per page
check "libnbrma-dev: a section-3 page per MPIX_ and nbrma_ call" holds libnbrma-dev \
    $(for page in "$top"/man/*.3; do echo "/usr/share/man/man3/$(basename "$page").gz"; done)
check "nbrma-tools: nbrma-info, nbrma-bench, nbrma(7)" holds nbrma-tools /usr/bin/nbrma-info \
    /usr/bin/nbrma-bench /usr/share/man/man7/nbrma.7.gz
check "libnbrma-dev recommends nbrma-tools" field_has libnbrma-dev Recommends nbrma-tools
check "libnbrma0 needs libmpich12 << 4.1" field_has libnbrma0 Depends "libmpich12 (<< 4.1)"
check "libnbrma-dev needs libmpich-dev << 4.1" field_has libnbrma-dev Depends \
    "libmpich-dev (<< 4.1)"

# ---- the unpacked packages at work
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
for name in libnbrma0 libnbrma-dev nbrma-tools; do
    deb=$(package "$name")
    [ -n "$deb" ] && dpkg-deb -x "$deb" "$root"
done
export PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_PATH="$root$libdir/pkgconfig"
export LD_LIBRARY_PATH="$root$libdir"
build() {
    # shellcheck disable=SC2046  # the flags are words
    mpicc.mpich -o "$root/put_epoch" "$top/debian/tests/put_epoch.c" \
        $(pkg-config --cflags --libs nbrma) &&
        ldd "$root/put_epoch" | grep -q "$root$libdir/libnbrma.so.0"
}
check "put_epoch builds against the unpacked nbrma.pc and libnbrma.so.0" build
check "put_epoch runs on nbrma (2 ranks)" mpiexec.mpich -n 2 "$root/put_epoch"
check "put_epoch runs with the unpacked nbrma-helper (NBRMA_PROGRESS=interrupt)" \
    env NBRMA_PROGRESS=interrupt NBRMA_HELPER="$root/usr/libexec/nbrma-helper" \
    mpiexec.mpich -n 2 "$root/put_epoch" helper
version() { "$root/usr/bin/nbrma-info" --version | grep -q '^nbrma-info (nbrma) '; }
check "nbrma-info --version" version

echo "check_deb: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
