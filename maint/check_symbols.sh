#!/bin/sh
# check_symbols.sh — check maint/rma_api.txt against MPICH and against libnbrma.so.
#
# Run by `make check` with top_builddir, top_srcdir and MPICH_LIBDIR in the
# environment (defaults: the build tree is the current directory, the source tree is
# this script's parent, MPICH_LIBDIR from `pkg-config mpich`). Fails (exit 1, naming
# every offending function) when
#   (a) libmpich.so exports an RMA function the table does not list,
#   (b) an `nbrma` entry is not a defined (T) dynamic symbol of libnbrma.so,
#   (c) an `mpich` entry is defined by libnbrma.so (the table is stale),
#   (d) include/nbrma.h declares an MPIX_ function the table does not list,
#   (e) an MPI_ function libnbrma.so defines lacks its PMPI_ twin at the same address,
#       or a PMPI_ function it defines has no MPI_ one (src/mpich/pmpi.hpp),
#   (f) src/ names the PMPI_ twin of a function libnbrma.so defines (that is nbrma
#       itself again: MPICH's implementation is nbrma::mpich::name, src/mpich/entry_points.hpp),
# or when the table itself is malformed (bad handler, duplicate name).
# For testing, NBRMA_SO / MPICH_SO may name other shared objects.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
if [ -z "${MPICH_LIBDIR:-}" ]; then
    MPICH_LIBDIR=$(pkg-config --variable=libdir mpich 2>/dev/null) || MPICH_LIBDIR=""
fi
table="$top_srcdir/maint/rma_api.txt"
header="$top_srcdir/include/nbrma.h"
mpich_so=${MPICH_SO:-$MPICH_LIBDIR/libmpich.so}
nbrma_so=${NBRMA_SO:-$top_builddir/.libs/libnbrma.so}

# The RMA functions, as MPICH names them (but not MPI_Get_address, MPI_Get_count, ...).
rma_regex='^MPI_(Win_|Put|Rput|Rget|Accumulate|Raccumulate|Get_accumulate)|^MPI_(Get|Get_c|Fetch_and_op|Compare_and_swap)$'

fail=0
problem() { echo "check_symbols: $*" >&2; fail=1; }

for file in "$table" "$header" "$mpich_so"; do
    [ -r "$file" ] || { echo "check_symbols: cannot read $file" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/check_symbols.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

# ---- the table: "name handler [binding]" lines, "= description" lines (gen_bindings.py
# reads those), # comments, blank lines ----
awk -v out="$work" '
    /^[ \t]*(#|$|=)/ { next }
    NF < 2 || ($2 != "nbrma" && $2 != "mpich") || (NF > 2 && $2 != "nbrma") {
        printf "rma_api.txt:%d: expected \"name nbrma|mpich\" (a binding after nbrma only): %s\n", NR, $0; bad = 1; next
    }
    $1 in seen { printf "rma_api.txt:%d: %s listed twice\n", NR, $1; bad = 1; next }
    { seen[$1] = 1; print $1 > (out "/all"); print $1 > (out "/" $2) }
    END { exit bad }
' "$table" >&2 || fail=1
touch "$work/all" "$work/nbrma" "$work/mpich"
sort -o "$work/all" "$work/all"
sort -o "$work/nbrma" "$work/nbrma"
sort -o "$work/mpich" "$work/mpich"

defined_symbols() {  # FILE [TYPES]: defined dynamic symbols, without @version
    nm -D --defined-only "$1" | awk -v types="${2:-}" \
        'NF >= 3 && (types == "" || index(types, $2)) { sub(/@.*/, "", $3); print $3 }' | sort -u
}

# ---- (a) every RMA function MPICH exports is in the table ----
defined_symbols "$mpich_so" | grep -E "$rma_regex" > "$work/mpich_rma"
if [ ! -s "$work/mpich_rma" ]; then
    problem "no RMA symbols found in $mpich_so (is it MPICH?)"
fi
for name in $(comm -23 "$work/mpich_rma" "$work/all"); do
    problem "(a) $name is exported by $(basename "$mpich_so") but missing from maint/rma_api.txt"
done

# ---- (d) every MPIX_ function of include/nbrma.h is in the table ----
sed -n 's/^[a-z].*[ *]\(MPIX_[A-Za-z_]*\)[ ]*(.*/\1/p' "$header" | sort -u > "$work/header"
for name in $(comm -23 "$work/header" "$work/all"); do
    problem "(d) $name is declared in include/nbrma.h but missing from maint/rma_api.txt"
done

# ---- (b), (c): libnbrma.so against the table ----
if [ ! -r "$nbrma_so" ]; then
    problem "(b) $nbrma_so not found: build libnbrma first"
else
    defined_symbols "$nbrma_so" T > "$work/nbrma_text"
    defined_symbols "$nbrma_so" > "$work/nbrma_defined"
    for name in $(comm -23 "$work/nbrma" "$work/nbrma_text"); do
        problem "(b) $name is an nbrma function but not defined (T) in $(basename "$nbrma_so")"
    done
    for name in $(comm -12 "$work/mpich" "$work/nbrma_defined"); do
        problem "(c) $name is marked mpich but $(basename "$nbrma_so") defines it: update maint/rma_api.txt"
    done

    # ---- (e) MPI_name and PMPI_name are one function ----
    nm -D --defined-only "$nbrma_so" | awk '$2 == "T" && $3 ~ /^P?MPI_/ { sub(/@.*/, "", $3); print $3, $1 }' |
        sort -u > "$work/nbrma_addresses"
    awk -v lib="$(basename "$nbrma_so")" '
        { address[$1] = $2 }
        END {
            for (name in address) {
                if (name ~ /^MPI_/ && address["P" name] != address[name])
                    printf "(e) %s: %s does not define P%s at the same address (NBRMA_PMPI)\n", name, lib, name
                if (name ~ /^PMPI_/ && !((substr(name, 2)) in address))
                    printf "(e) %s: %s defines it without %s\n", name, lib, substr(name, 2)
            }
        }' "$work/nbrma_addresses" | sort > "$work/twins"
    while read -r line; do problem "$line"; done < "$work/twins"

    # ---- (f) src/ never calls nbrma's own PMPI_ names ----
    interposed=$(sed -n 's/^\(MPI_[A-Za-z_0-9]*\) .*/P\1/p' "$work/nbrma_addresses" | paste -sd'|' -)
    if [ -n "$interposed" ]; then
        grep -rnE "\b($interposed)\b" "$top_srcdir/src" --include='*.cpp' --include='*.hpp' |
            grep -vE '^[^:]*:[0-9]+:[[:space:]]*(//|\*)' > "$work/direct_calls"
        while IFS=: read -r file number code; do
            problem "(f) ${file#"$top_srcdir"/}:$number: calls nbrma's own PMPI_ name (use nbrma::mpich::, src/mpich/entry_points.hpp):$code"
        done < "$work/direct_calls"
    fi
fi

total=$(wc -l < "$work/all")
nbrma=$(wc -l < "$work/nbrma")
mpich=$(wc -l < "$work/mpich")
if [ $fail -eq 0 ]; then
    echo "rma_api: $total functions, $nbrma nbrma, $mpich mpich: ok"
    exit 0
fi
echo "rma_api: $total functions, $nbrma nbrma, $mpich mpich: FAILED" >&2
exit 1
