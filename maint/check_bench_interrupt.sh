#!/bin/bash
# check_bench_interrupt.sh — part of `make check`: Ctrl-C stops nbrma-bench and everything
# it started. Starts `nbrma-bench --groups latency --quick` as its own process group (a
# job of a shell with job control, as a terminal's foreground job is), waits until the
# first `# running` line (which must say where the run is: "[job 1/N, group latency 1/1,
# ..elapsed]") and the job's first bench_mpich rank, then sends SIGINT to that
# process group, as a terminal's Ctrl-C does. Passes when, within 30 s, nbrma-bench has
# exited with a non-zero status and no process it started is left: no bench_mpich,
# bench_nbrma, timeout, mpiexec or hydra_pmi_proxy (found by a marker variable in their
# environment, which every process nbrma-bench starts inherits). Leftovers are killed.
#
# Prints one "check_bench_interrupt: PASS|FAIL|SKIP ..." line; exits 0 (pass), 1 (fail)
# or 77 (skip: nbrma-bench or bench_mpich not built, no mpiexec).
set -u
set -m  # job control: the background job below gets its own process group

top_builddir=${top_builddir:-.}
bench=$top_builddir/test/bench/nbrma-bench
limit=30
name=check_bench_interrupt

skip() { echo "$name: SKIP: $*"; exit 77; }
[ -x "$bench" ] || skip "$bench not built (make)"
[ -x "$top_builddir/test/bench/bench_mpich" ] || skip "test/bench/bench_mpich not built (make)"
launcher=$(sed -n 's/^MPIEXEC="\(.*\)"$/\1/p' "$bench")
command -v "${launcher:-mpiexec.mpich}" > /dev/null 2>&1 || skip "no ${launcher:-mpiexec.mpich}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_bench_interrupt.XXXXXX") || exit 1
marker="NBRMA_BENCH_INTERRUPT_TEST=$$.$RANDOM"

# The pids of the processes carrying the marker (every process nbrma-bench started).
marked() {
    local environ pid
    for environ in /proc/[0-9]*/environ; do
        pid=${environ#/proc/}
        pid=${pid%/environ}
        [ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] && continue
        tr '\0' '\n' 2> /dev/null < "$environ" | grep -qx "$marker" && echo "$pid"
    done
}
describe() {  # pid list -> "pid name, ..."
    local pid out=""
    for pid in "$@"; do out="$out${out:+, }$pid $(cat "/proc/$pid/comm" 2> /dev/null)"; done
    echo "$out"
}
finish() {  # STATUS MESSAGE: print the verdict, clean up what is left, exit
    local left
    left=$(marked)
    # shellcheck disable=SC2086  # a list of pids
    [ -n "$left" ] && kill -KILL $left 2> /dev/null
    case $1 in
        0) echo "$name: PASS: $2" ;;
        77) echo "$name: SKIP: $2" ;;
        *) echo "$name: FAIL: $2"
           echo "$name: nbrma-bench's stderr:"; sed 's/^/    /' "$tmp/err" ;;
    esac
    rm -rf "$tmp"
    exit "$1"
}

# SIGINT back to its default for nbrma-bench: a shell started in the background without
# job control (`(cmd &)` in a script) ignores SIGINT, and a non-interactive bash cannot
# trap a signal ignored when it started, where a terminal's foreground job never is.
env --default-signal=INT "$marker" NBRMA_BENCH_TIMEOUT=120 "$bench" --groups latency --quick \
    --plots "$tmp/out" > "$tmp/out.txt" 2> "$tmp/err" < /dev/null &
pid=$!
set +m  # (the job keeps its process group; no job-control notices)
pgid=$(ps -o pgid= -p "$pid" | tr -d ' ')
[ "$pgid" = "$pid" ] || finish 1 "nbrma-bench ($pid) is not its own process group ($pgid)"

# Wait for the first "# running" line and a rank of that job (at most 60 s).
ranks=""
for _ in $(seq 1 600); do
    if grep -q '^# running' "$tmp/err"; then
        ranks=$(for p in $(marked); do
            case $(cat "/proc/$p/comm" 2> /dev/null) in bench_mpich | bench_nbrma) echo "$p" ;; esac
        done)
        [ -n "$ranks" ] && break
    fi
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
done
kill -0 "$pid" 2> /dev/null || finish 77 "nbrma-bench ended before a job's ranks could be seen"
[ -n "$ranks" ] || finish 1 "no '# running' line and rank within 60 s"
started=$(marked)
echo "$name: running: $(describe $started)"
# Where the run is: the first job of the latency group, of all the jobs the run has.
line=$(grep -m 1 '^# running' "$tmp/err")
echo "$line" | grep -Eq '^# running \[job 1/[1-9][0-9]*, group latency 1/1, [0-9]+m[0-9]{2}s elapsed\]: ' ||
    finish 1 "the first '# running' line does not say where the run is: $line"

kill -INT -- "-$pgid"
echo "$name: SIGINT sent to process group $pgid"

# nbrma-bench exits, and everything it started goes, within $limit s.
status=""
left=""
for _ in $(seq 1 $((limit * 10))); do
    if [ -z "$status" ] && ! kill -0 "$pid" 2> /dev/null; then
        wait "$pid"
        status=$?
    fi
    left=$(marked)
    [ -n "$status" ] && [ -z "$left" ] && break
    sleep 0.1
done
if [ -z "$status" ]; then
    finish 1 "nbrma-bench still running $limit s after SIGINT; left: $(describe $left)"
elif [ -n "$left" ]; then
    finish 1 "nbrma-bench exited (status $status) but left, $limit s after SIGINT: $(describe $left)"
elif [ "$status" -eq 0 ]; then
    finish 1 "nbrma-bench exited with status 0 after SIGINT"
fi
finish 0 "nbrma-bench exited with status $status after SIGINT and left no process"
