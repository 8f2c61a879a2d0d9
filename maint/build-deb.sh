#!/bin/sh
# build-deb.sh — build nbrma's Debian binary packages (libnbrma0, libnbrma-dev,
# nbrma-tools) from this source tree, with debian/, and check them with lintian.
#
#   ./maint/build-deb.sh [OUTDIR]      (default OUTDIR: build-deb/ in the source tree)
#
# Installs what the package build needs and is missing (the tools below, then the
# Build-Depends of debian/control), as root or through sudo, like install-deps.sh:
# apt-get runs only when something is missing. Copies the tree's files (git's tracked and
# untracked-but-not-ignored files, so a configured or built tree is left alone and its
# build products are not packaged) into OUTDIR/nbrma-<version>/, runs
# `dpkg-buildpackage -us -uc -b` there (unsigned, binary only; the test suite does not
# run, see debian/rules), so the .deb, .buildinfo and .changes files land in OUTDIR, runs
# lintian on the .changes file and prints the directory; exits 1 if lintian reports an
# error (E:), after printing it.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-"$top/build-deb"}

# ---- tools: apt-get only for what is missing
tools="debhelper dpkg-dev fakeroot lintian build-essential"
missing=""
for package in $tools; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
    [ "$status" = installed ] || missing="$missing $package"
done
if [ "$(id -u)" -eq 0 ]; then as_root=""; else as_root="sudo"; fi
apt_install() {
    # shellcheck disable=SC2086  # word splitting of the package list is intended
    $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -o DPkg::Lock::Timeout=600 -y -q --no-install-recommends "$@" ||
        { $as_root env DEBIAN_FRONTEND=noninteractive apt-get update -o DPkg::Lock::Timeout=600 -q &&
            $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -o DPkg::Lock::Timeout=600 -y -q \
                --no-install-recommends "$@"; }
}
if [ -n "$missing" ]; then
    echo "build-deb: installing:$missing"
    # shellcheck disable=SC2086
    apt_install $missing
fi
# The Build-Depends that are not satisfied, as dpkg-checkbuilddeps names them.
unmet=$(cd "$top" && dpkg-checkbuilddeps 2>&1 | sed -n 's/.*Unmet build dependencies: //p' |
    sed 's/([^)]*)//g; s/|[^ ]*//g')
if [ -n "$unmet" ]; then
    echo "build-deb: installing Build-Depends:$unmet"
    # shellcheck disable=SC2086
    apt_install $unmet
fi

# ---- a clean copy of the tree
version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
upstream=${version%-*}
src="$out/nbrma-$upstream"
rm -rf "$src"
mkdir -p "$src"
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # shellcheck disable=SC2016  # $f is the inner sh's: tracked files deleted in the tree are left out
    (cd "$top" && git ls-files -z --cached --others --exclude-standard |
        xargs -0 sh -c 'for f; do if [ -e "$f" ]; then printf "%s\0" "$f"; fi; done' sh |
        tar --null -T - -cf -) | tar -C "$src" -xf -
else
    (cd "$top" && tar --exclude=./build-deb -cf - .) | tar -C "$src" -xf -
fi

# ---- build and check
(cd "$src" && dpkg-buildpackage -us -uc -b)
changes="$out/nbrma_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).changes"
echo "build-deb: lintian $changes"
lintian_status=0
lintian --display-info "$changes" || lintian_status=$?
rm -rf "$src"
echo "build-deb: packages in $out:"
ls -1 "$out"
if [ "$lintian_status" -ne 0 ]; then
    echo "build-deb: lintian reported errors (exit status $lintian_status)" >&2
    exit 1
fi
