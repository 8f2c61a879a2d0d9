#!/bin/sh
# test_check_symbols.sh — the failures of maint/check_symbols.sh about nbrma's PMPI_
# names are reported (run by `make check`, with the environment check_symbols.sh gets):
#   (e) a shared object with MPI_Win_free but no PMPI_Win_free, and PMPI_Win_lock
#       without MPI_Win_lock (built here from a few lines of C with cc);
#   (f) a source tree whose src/ calls PMPI_Win_free, and names it in a comment too
#       (only the call is reported).
# Exit 0 when check_symbols.sh fails with exactly those reports, 1 otherwise, 77 when
# there is no C compiler or no libnbrma.so to check against.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
checker="$top_srcdir/maint/check_symbols.sh"
nbrma_so="$top_builddir/.libs/libnbrma.so"
command -v cc >/dev/null 2>&1 || { echo "SKIP: no cc"; exit 77; }
[ -r "$nbrma_so" ] || { echo "SKIP: $nbrma_so not built"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/test_check_symbols.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fail=0
expect() {  # OUTPUT-FILE PATTERN WHAT: PATTERN (grep -E) must occur in the output
    grep -Eq "$2" "$1" || { echo "FAIL: $3: no line matching '$2' in:"; sed 's/^/    /' "$1"; fail=1; }
}

# ---- (e) the twins
cat > "$work/twins.c" <<'C'
int MPI_Win_free(void *win) { return win != 0; }
int PMPI_Win_lock(int type) { return type; }
C
cc -shared -fPIC -o "$work/libtwins.so" "$work/twins.c" || exit 1
NBRMA_SO="$work/libtwins.so" sh "$checker" > "$work/e.out" 2>&1
status=$?
[ $status -eq 1 ] || { echo "FAIL: (e) exit status $status, expected 1"; fail=1; }
expect "$work/e.out" '\(e\) MPI_Win_free: libtwins.so does not define PMPI_Win_free' "(e) missing PMPI_"
expect "$work/e.out" '\(e\) PMPI_Win_lock: libtwins.so defines it without MPI_Win_lock' "(e) PMPI_ alone"

# ---- (f) a direct call of an interposed PMPI_ name
mkdir -p "$work/tree/src/mpi" "$work/tree/maint" "$work/tree/include"
cp "$top_srcdir/maint/rma_api.txt" "$work/tree/maint/"
cp "$top_srcdir/include/nbrma.h" "$work/tree/include/"
cat > "$work/tree/src/mpi/direct.cpp" <<'CPP'
// PMPI_Win_free would be nbrma itself: only this comment names it, the next line calls it
int free_window(MPI_Win *win) { return PMPI_Win_free(win); }
CPP
top_srcdir="$work/tree" NBRMA_SO="$nbrma_so" sh "$checker" > "$work/f.out" 2>&1
status=$?
[ $status -eq 1 ] || { echo "FAIL: (f) exit status $status, expected 1"; fail=1; }
expect "$work/f.out" '\(f\) src/mpi/direct.cpp:2: .*calls nbrma.s own PMPI_ name' "(f) direct call"
if grep -q 'direct.cpp:1:' "$work/f.out"; then
    echo "FAIL: (f) reported the comment line"; fail=1
fi
if grep -Eq '\((a|b|c|d|e)\)' "$work/f.out"; then
    echo "FAIL: (f) reported more than the call:"; sed 's/^/    /' "$work/f.out"; fail=1
fi

[ $fail -eq 0 ] && echo "check_symbols (e) and (f) failures reported: ok"
exit $fail
