#!/bin/bash
# bench_thread_cost.sh — what thread safety costs: the latency group's 8-byte rows
# (every RMA row, the two-sided ping-pong rows and the allreduce row) of bench_nbrma, on
# the library before a change and after it, with MPI_Init and with
# MPI_Init_thread(MPI_THREAD_MULTIPLE), run back to back on this machine.
#
# Usage: maint/bench_thread_cost.sh [--old COMMIT] [--new COMMIT] [--dir DIR]
#                                   [--rounds N] [--only NAMES] [--full]
#   --old COMMIT   the library before (default da33c7c, the last commit before
#                  MPI_THREAD_MULTIPLE support)
#   --new COMMIT   the library after (default: this working tree as it is built; run
#                  `make` first)
#   --dir DIR      where the copies are built, one per commit: DIR/<commit> is a git
#                  worktree (detached) built with ./autogen.sh && ./configure -q &&
#                  make -j2, reused when already built (default /tmp/nbrma-thread-cost)
#   --rounds N     rounds (default 6); each runs the four jobs: old and new library back
#                  to back at one thread level, then at the other; which library and
#                  which level go first alternates from round to round
#   --only NAMES   passed to bench_nbrma --only (a comma-separated list of latency
#                  benchmarks; default: the whole group, of which the 8-byte rows count)
#   --full         the full-length latency group (2 s a row) instead of --quick (0.25 s)
#   --callgrind    instead of timing: instructions per iteration of rank 0 (valgrind
#                  --tool=callgrind --collect-atstart=no; latency.c counts its timed
#                  loops only), which the machine's load does not change. Per row (--only,
#                  default the passive rows osu_{put,get,acc,fop}_lock, osu_{put,acc}_flush,
#                  osu_put_lock_all) and configuration, one run with --iterations 20000:
#                  Ir / 20000, the blocking and nonblocking series together (their sum).
#                  Exact for rows whose origin never waits for its peer; rows that do
#                  (fence, PSCW, ping-pong, allreduce) count the polling of the wait, which
#                  varies from run to run by 2x: time them.
#
# Both libraries run the same benchmark: this tree's test/bench sources are copied over
# every built copy before it is built (bench_nbrma of the old commit is the new benchmark
# linked with the old library). Each job is
#   mpiexec.mpich -n 2 -bind-to core DIR/<commit>/test/bench/bench_nbrma --group latency
#       --quick [--thread-multiple]
# and every RESULT with parameter 8 (raw-shm excepted) is kept. The table gives, per row
# and thread level, the median over the rounds of the old and the new library and
# new/old, against the goal set for thread support: MPI_Init rows within 5% (new/old <= 1.05),
# MPI_THREAD_MULTIPLE rows within 25% (<= 1.25), and the spread (max/min − 1 over the
# rounds, the larger of old's and new's: how far apart the rounds were on this machine);
# then per thread level the geometric mean of new/old and how many rows meet the goal. The raw results stay in DIR/results.txt
# ("<round> <old|new> <single|multiple> <series> <benchmark> <usec>").
# Exit status: 0 (the goal is reported, not enforced), 2 on a build or run error.
set -u

old_commit=da33c7c
new_commit=""
dir=/tmp/nbrma-thread-cost
rounds=6
only=""
length=--quick
callgrind=0

die() { echo "bench_thread_cost: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --old | --new | --dir | --rounds | --only)
            [ $# -ge 2 ] || die "$1 needs a value"
            case "$1" in
                --old) old_commit=$2 ;;
                --new) new_commit=$2 ;;
                --dir) dir=$2 ;;
                --rounds) rounds=$2 ;;
                --only) only=$2 ;;
            esac
            shift ;;
        --full) length="" ;;
        --callgrind) callgrind=1 ;;
        -h | --help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) die "unknown argument '$1' (try --help)" ;;
    esac
    shift
done
case "$rounds" in '' | *[!0-9]* | 0) die "--rounds needs a positive integer" ;; esac

top=$(cd "$(dirname "$0")/.." && pwd)
git -C "$top" rev-parse --git-dir > /dev/null 2>&1 || die "$top is not a git checkout"
MPIEXEC=${MPIEXEC:-mpiexec.mpich}
command -v "$MPIEXEC" > /dev/null || die "$MPIEXEC not found"
mkdir -p "$dir" || die "cannot create $dir"
dir=$(cd "$dir" && pwd)

# build COMMIT: a worktree DIR/<commit> with this tree's benchmark sources, built; prints
# the path of its bench_nbrma.
build() {
    local commit sha tree
    commit=$1
    sha=$(git -C "$top" rev-parse --short=12 "$commit^{commit}") || die "no commit '$commit'"
    tree="$dir/$sha"
    if [ ! -d "$tree" ]; then
        git -C "$top" worktree add --detach "$tree" "$sha" > /dev/null 2>&1 ||
            die "git worktree add $tree $sha failed"
    fi
    # The same benchmark on both sides (cmp: an unchanged copy does not rebuild).
    local f
    for f in "$top"/test/bench/*.c "$top"/test/bench/*.h "$top"/test/bench/Makefile.mk \
        "$top"/test/bench/nbrma-bench.in; do
        cmp -s "$f" "$tree/test/bench/${f##*/}" || cp "$f" "$tree/test/bench/" || die "cp $f"
    done
    echo "# building $commit ($sha) in $tree" >&2
    (
        cd "$tree" || exit 1
        if [ ! -f Makefile ]; then
            ./autogen.sh > build.log 2>&1 && ./configure -q >> build.log 2>&1 || exit 1
        fi
        make -j2 >> build.log 2>&1
    ) || die "build of $sha failed: see $tree/build.log"
    [ -x "$tree/test/bench/bench_nbrma" ] || die "no $tree/test/bench/bench_nbrma"
    echo "$tree/test/bench/bench_nbrma"
}

old_bin=$(build "$old_commit") || exit 2
if [ -n "$new_commit" ]; then
    new_bin=$(build "$new_commit") || exit 2
    new_label=$(git -C "$top" rev-parse --short=12 "$new_commit")
else
    new_bin="$top/test/bench/bench_nbrma"
    [ -x "$new_bin" ] || die "$new_bin not built (run make, or give --new COMMIT)"
    new_label="$(git -C "$top" rev-parse --short=12 HEAD)$(git -C "$top" diff --quiet HEAD -- src include || echo +changes) (this tree)"
fi
old_label=$(git -C "$top" rev-parse --short=12 "$old_commit")
echo "# old: $old_label, $old_bin" >&2
echo "# new: $new_label, $new_bin" >&2

# ---- --callgrind: instruction counts ----------------------------------------------------
if [ $callgrind -eq 1 ]; then
    command -v valgrind > /dev/null || die "valgrind not found"
    rows=${only:-osu_put_lock,osu_get_lock,osu_acc_lock,osu_fop_lock,osu_put_flush,osu_acc_flush,osu_put_lock_all}
    iterations=20000
    # ir BIN MODE ROW: rank 0's instructions (Ir) in the row's timed loops.
    ir() {
        local bin=$1 mode=$2 row=$3 args=(--group latency --only "$3" --iterations "$iterations")
        local log="$dir/cg-$$.log"
        [ "$mode" = multiple ] && args+=(--thread-multiple)
        timeout -k 10 600 "$MPIEXEC" -n 1 valgrind --tool=callgrind --collect-atstart=no \
            --callgrind-out-file=/dev/null "$bin" "${args[@]}" : -n 1 "$bin" "${args[@]}" \
            > /dev/null 2> "$log" < /dev/null || { tail -n 5 "$log" >&2; die "callgrind run of $row failed"; }
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log" | head -n 1
        rm -f "$log"
    }
    printf "old = %s, new = %s; rank 0's instructions per iteration (callgrind)\n" "$old_label" "$new_label"
    printf "%-8s %-18s %9s %9s %8s  %s\n" level benchmark old new new/old goal
    for mode in single multiple; do
        for row in ${rows//,/ }; do
            per=()
            for lib in old new; do
                if [ "$lib" = old ]; then bin=$old_bin; else bin=$new_bin; fi
                a=$(ir "$bin" "$mode" "$row") || exit 2
                [ -n "$a" ] || die "no instruction count for $row"
                per+=("$(awk -v a="$a" -v n="$iterations" 'BEGIN { printf "%.0f", a / n }')")
            done
            awk -v m="$mode" -v r="$row" -v o="${per[0]}" -v n="${per[1]}" 'BEGIN {
                goal = m == "single" ? 1.05 : 1.25; q = o > 0 ? n / o : 0
                printf "%-8s %-18s %9d %9d %8.3f  <= %.2f %s\n", m, r, o, n, q, goal, q <= goal ? "ok" : "OVER" }'
        done
    done
    exit 0
fi

results="$dir/results.txt"
: > "$results"
# run ROUND LIB MODE
run() {
    local round=$1 lib=$2 mode=$3 bin args=() out
    if [ "$lib" = old ]; then bin=$old_bin; else bin=$new_bin; fi
    [ "$mode" = multiple ] && args+=(--thread-multiple)
    [ -n "$only" ] && args+=(--only "$only")
    out="$dir/run-$round-$lib-$mode.out"
    # shellcheck disable=SC2086  # length is one word or none
    if ! timeout -k 10 300 "$MPIEXEC" -n 2 -bind-to core "$bin" --group latency $length \
        "${args[@]}" > "$out" 2> "$out.err" < /dev/null; then
        echo "bench_thread_cost: round $round $lib $mode failed:" >&2
        tail -n 5 "$out.err" >&2
        exit 2
    fi
    grep -q '^CHECK [^ ]* FAILED' "$out" && echo "bench_thread_cost: data check FAILED in $out" >&2
    awk -v r="$round" -v lib="$lib" -v mode="$mode" \
        '$1 == "RESULT" && $2 != "raw-shm" && $4 == "8" { print r, lib, mode, $2, $3, $5 }' \
        "$out" >> "$results"
}

started=$(date +%s)
for ((round = 1; round <= rounds; round++)); do
    # Alternate which library and which thread level go first.
    if ((round % 2)); then libs="old new"; modes="single multiple"; else libs="new old"; modes="multiple single"; fi
    # Old and new back to back for one thread level, then for the other.
    for mode in $modes; do
        for lib in $libs; do
            echo "# round $round/$rounds: $lib library, $mode" >&2
            run "$round" "$lib" "$mode"
        done
    done
done
echo "# $rounds rounds in $(($(date +%s) - started)) s; raw results in $results" >&2

# The table: medians over the rounds.
awk -v old_label="$old_label" -v new_label="$new_label" -v rounds="$rounds" '
    function median(list,   n, v, i, j, t) {
        n = split(list, v, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    # max/min - 1 of a list of samples, in %: how much the rounds disagree.
    function spread(list,   n, v, i, lo, hi) {
        n = split(list, v, " "); lo = hi = v[1] + 0
        for (i = 2; i <= n; i++) { if (v[i] + 0 < lo) lo = v[i] + 0; if (v[i] + 0 > hi) hi = v[i] + 0 }
        return lo > 0 ? 100 * (hi / lo - 1) : 0
    }
    {
        key = $3 SUBSEP $4 SUBSEP $5
        if (!(key in seen)) { seen[key] = 1; order[++nkeys] = key }
        samples[key, $2] = samples[key, $2] " " $6
    }
    END {
        printf "old = %s, new = %s; median of %d rounds (usec, the latency group'"'"'s own per-row figure)\n", old_label, new_label, rounds
        printf "%-8s %-17s %-18s %9s %9s %8s %7s  %s\n", "level", "series", "benchmark", "old", "new", "new/old", "spread", "goal"
        for (i = 1; i <= nkeys; i++) {
            split(order[i], k, SUBSEP)
            if (!((order[i], "old") in samples) || !((order[i], "new") in samples)) continue
            o = median(samples[order[i], "old"]); n = median(samples[order[i], "new"])
            goal = k[1] == "single" ? 1.05 : 1.25
            r = o > 0 ? n / o : 0
            ok = r <= goal ? "ok" : "OVER"
            so = spread(samples[order[i], "old"]); sn = spread(samples[order[i], "new"])
            printf "%-8s %-17s %-18s %9.4g %9.4g %8.3f %6.0f%%  <= %.2f %s\n", k[1], k[2], k[3], o, n, r, (so > sn ? so : sn), goal, ok
            if (r > 0) { logsum[k[1]] += log(r); count[k[1]]++; if (ok == "ok") met[k[1]]++ }
        }
        for (m = 1; m <= 2; m++) {
            level = m == 1 ? "single" : "multiple"
            if (count[level] > 0)
                printf "%s (%s): geometric mean new/old = %.3f; %d of %d rows within the goal (<= %.2f)\n",
                    level, level == "single" ? "MPI_Init" : "MPI_THREAD_MULTIPLE",
                    exp(logsum[level] / count[level]), met[level] + 0, count[level],
                    level == "single" ? 1.05 : 1.25
        }
    }' "$results"
