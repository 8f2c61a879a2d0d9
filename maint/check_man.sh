#!/bin/sh
# check_man.sh — the man pages (maint/man/, written into man/ by `make`) against the API,
# part of `make check`. It fails when
#   - an MPIX_ function of maint/rma_api.txt, or an MPIX_/nbrma_ function include/nbrma.h
#     declares, has no page man/<function>.3 (nor has nbrma(7), nbrma-info(1) or
#     nbrma-bench(1) theirs);
#   - a section-3 page's SYNOPSIS prototype differs from the declaration in
#     include/nbrma.h (whitespace aside), or a parameter of it has no entry in the page's
#     INPUT/OUTPUT PARAMETERS;
#   - a page does not render without warnings (groff -ww -man -z; package groff-base);
#   - a source maint/man/<page>.txt gives no page (not listed in maint/man/Makefile.mk),
#     or a page refers to an nbrma page, as name(section), that does not exist.
# Needs top_srcdir and top_builddir (set by `make check`; default: the current directory).
set -u

srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
header=$srcdir/include/nbrma.h
api=$srcdir/maint/rma_api.txt
mandir=$builddir/man
failures=0
fail() {
    echo "check_man: FAIL: $*"
    failures=$((failures + 1))
}

if ! command -v groff > /dev/null 2>&1; then
    echo "check_man: FAIL: groff not found (Debian package groff-base: maint/install-deps.sh)"
    exit 1
fi

# The functions nbrma.h declares: "int MPIX_...(" or "int nbrma_...(" at a line's start.
declared=$(sed -n 's/^[a-z][a-z ]* \**\(MPIX_[A-Za-z_]*\|nbrma_[a-z_]*\)(.*/\1/p' "$header")
listed=$(awk '!/^#/ && $1 ~ /^MPIX_/ { print $1 }' "$api")
[ -n "$declared" ] || fail "found no function declared in $header"
[ -n "$listed" ] || fail "found no MPIX_ function in $api"

# A declaration, or the prototype of a page's SYNOPSIS, on one line with single spaces.
normalize() { tr '\n' ' ' | sed 's/[[:space:]]\{1,\}/ /g; s/( /(/g; s/ )/)/g; s/ *; *$//; s/^ //'; }
declaration() {  # from "<type> NAME(" at a line's start to the ';'
    awk -v name="$1" '
        !inside && match($0, "^[a-z][a-z ]* \\**" name "\\(") { inside = 1 }
        inside { print; if (index($0, ";")) exit }' "$header" | normalize
}
synopsis() {  # the page's prototype: from "<type> NAME(" in SYNOPSIS to the ';'
    awk -v name="$2" '
        /^\.SH/ { in_synopsis = ($0 == ".SH SYNOPSIS") }
        in_synopsis && !inside && match($0, "^[a-z][a-z ]* \\**" name "\\(") { inside = 1 }
        inside { print; if (index($0, ";")) exit }' "$1" | normalize
}
parameters() {  # the names of a normalized prototype's parameters
    printf '%s\n' "$1" | sed 's/^[^(]*(//; s/)$//' | tr ',' '\n' |
        sed 's/.*[ *]\([A-Za-z_][A-Za-z0-9_]*\)$/\1/' | grep -v '^void$'
}

checked=""
for function in $listed $declared; do
    case " $checked " in *" $function "*) continue ;; esac
    checked="$checked $function"
    page=$mandir/$function.3
    if [ ! -f "$page" ]; then
        fail "$function has no man page ($page; its source: maint/man/$function.3.txt)"
        continue
    fi
    wanted=$(declaration "$function")
    if [ -z "$wanted" ]; then
        fail "$function (maint/rma_api.txt) is not declared in include/nbrma.h"
        continue
    fi
    shown=$(synopsis "$page" "$function")
    if [ "$shown" != "$wanted" ]; then
        fail "$page: SYNOPSIS differs from include/nbrma.h"
        echo "  page:   $shown"
        echo "  header: $wanted"
        continue
    fi
    for parameter in $(parameters "$wanted"); do
        awk -v term="\\\\fB$parameter\\\\fR" '
            /^\.SH/ { in_parameters = ($0 ~ /PARAMETERS/) }
            in_parameters && previous == ".TP" && $0 == term { found = 1 }
            { previous = $0 }
            END { exit !found }' "$page" ||
            fail "$page: parameter $parameter of the prototype is not under INPUT/OUTPUT PARAMETERS"
    done
done

for page in nbrma.7 nbrma-info.1 nbrma-bench.1; do
    [ -f "$mandir/$page" ] || fail "no man page $mandir/$page (its source: maint/man/$page.txt)"
done

# Every source is built (listed in maint/man/Makefile.mk), and every page of nbrma's
# that a page refers to, as name(section), exists.
for source in "$srcdir"/maint/man/*.[1-8].txt; do
    page=$(basename "$source" .txt)
    [ -f "$mandir/$page" ] || fail "$source has no page $mandir/$page (not in maint/man/Makefile.mk?)"
done
for reference in $(cat "$mandir"/*.[1-8] 2>/dev/null |
    grep -o '\(MPIX_[A-Za-z_]*\|nbrma[a-z_-]*\)\(\\fR\)\{0,1\}([1-8])' | sed 's/\\fR//' | sort -u); do
    page=$(echo "$reference" | sed 's/(\([1-8]\))$/.\1/')
    [ -f "$mandir/$page" ] || fail "a page refers to $reference, which has no page"
done

# One groff run for every page: its warnings name the file and line.
set -- "$mandir"/*.[1-8]
pages=0
[ -f "$1" ] && pages=$#
if [ "$pages" -gt 0 ]; then
    warnings=$(LC_ALL=C.UTF-8 groff -ww -man -z "$@" 2>&1) || fail "groff failed: $warnings"
    [ -z "$warnings" ] || fail "groff warns:
$warnings"
fi

echo "check_man: $pages pages, $(echo "$checked" | wc -w) functions checked, $failures failures"
[ "$failures" -eq 0 ] || exit 1
exit 0
