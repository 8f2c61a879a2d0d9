#!/bin/bash
# bench_check_cost.sh — the race checker's cost table of doc/benchmarks.md ("Race
# checker cost"): PAIRS pairs of `nbrma-bench --quick --groups latency,patterns` runs,
# without and with NBRMA_CHECK=races in the environment, alternated (off, on, off, on,
# ...) so that both see the same machine, then one markdown table: per row the medians of
# the pairs (MPICH: of every run; the latency rows' nbrma series is nbrma-blocking, the
# patterns rows' nbrma-nonblocking), their ratio, and the lowest and highest ratio of one
# pair. Run from a built tree: maint/bench_check_cost.sh [PAIRS (default 5)] [DIR].
#
# maint/bench_check_cost.sh --plain [ROUNDS (default 5)]: the control, a plain program
# (maint/bench_check_plain.c: lock/put/unlock, put + flush, put + fence and PSCW of 8
# bytes, 2 ranks bound to cores), built against this tree and run ROUNDS times per loop
# without and with NBRMA_CHECK=races, alternated; one markdown table of the medians,
# their ratio and the lowest and highest ratio of one round.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --plain ]; then
    rounds=${2:-5}
    work=$(mktemp -d "${TMPDIR:-/tmp}/nbrma-check-plain.XXXXXX")
    mpicc.mpich -O2 "$top/maint/bench_check_plain.c" -o "$work/plain" -L"$top/.libs" \
        -Wl,-rpath,"$top/.libs" -lnbrma
    for loop in lock flush fence pscw; do
        iterations=1000000
        case $loop in fence | pscw) iterations=300000 ;; esac
        for i in $(seq "$rounds"); do
            for mode in off races; do
                NBRMA_CHECK=$mode mpiexec.mpich -n 2 -bind-to core "$work/plain" "$loop" \
                    "$iterations" 2> /dev/null | sed -n "s/^$loop /$loop $mode /p" >> "$work/times"
            done
        done
    done
    python3 - "$work/times" <<'PLAIN'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    loop, mode, value = line.split()
    times.setdefault(loop, {}).setdefault(mode, []).append(float(value))
print("| loop (8 bytes) | unchecked, us | checked, us | on / off | lowest-highest round |")
print("|---|---:|---:|---:|---:|")
for loop, modes in times.items():
    off, on = modes["off"], modes["races"]
    pair = sorted(b / a for a, b in zip(off, on))
    print("| %s | %.4f | %.4f | %.2f | %.2f-%.2f |" % (
        loop, statistics.median(off), statistics.median(on),
        statistics.median(on) / statistics.median(off), pair[0], pair[-1]))
PLAIN
    rm -rf "$work"
    exit 0
fi
pairs=${1:-5}
dir=${2:-$(mktemp -d "${TMPDIR:-/tmp}/nbrma-check-cost.XXXXXX")}
mkdir -p "$dir"
for i in $(seq "$pairs"); do
    for mode in off races; do
        echo "bench_check_cost: pair $i of $pairs, NBRMA_CHECK=$mode" >&2
        # (exits non-zero when any job failed: Open MPI's osc/ucx fails its own data checks
        # on the MPI_CHAR rows; the table reads MPICH's and nbrma's series only)
        NBRMA_CHECK=$mode "$top/test/bench/nbrma-bench" --quick --groups latency,patterns \
            --no-plots --csv "$dir/$mode-$i.csv" > "$dir/$mode-$i.txt" 2>&1 ||
            grep "FAILED" "$dir/$mode-$i.txt" >&2
    done
done
python3 - "$dir" "$pairs" <<'EOF'
import csv, statistics, sys
dir, pairs = sys.argv[1], int(sys.argv[2])
rows = ("lock_put_unlock lock_get_unlock osu_put_lock osu_get_lock osu_acc_lock osu_fop_lock "
        "osu_cas_lock osu_acc_char_lock osu_put_flush osu_get_flush osu_acc_flush osu_fop_flush "
        "osu_cas_flush osu_put_lock_all osu_acc_lock_all osu_put_fence osu_acc_fence osu_put_pscw "
        "osu_acc_pscw osu_put_lock_create osu_put_lock_alloc_mem late_post late_complete "
        "early_fence wait_at_fence late_unlock").split()
patterns = {"late_post", "late_complete", "early_fence", "wait_at_fence", "late_unlock"}
def load(path):
    with open(path) as f:
        return {(r["benchmark"], r["series"], r["parameter"]): float(r["value"])
                for r in csv.DictReader(f)}
runs = {m: [load(f"{dir}/{m}-{i}.csv") for i in range(1, pairs + 1)] for m in ("off", "races")}
order = []
with open(f"{dir}/off-1.csv") as f:
    for r in csv.DictReader(f):
        key = (r["benchmark"], r["parameter"])
        if r["benchmark"] in rows and key not in order:
            order.append(key)
print("| group | row | size | MPICH | nbrma | nbrma + checker | on / off | on / MPICH "
      "| on / off, lowest-highest pair |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
for bench, param in order:
    series = "nbrma-nonblocking" if bench in patterns else "nbrma-blocking"
    def values(mode, s):
        return [run[(bench, s, param)] for run in runs[mode] if (bench, s, param) in run]
    off, on = values("off", series), values("races", series)
    mpich = values("off", "mpich") + values("races", "mpich")
    if len(off) != pairs or len(on) != pairs or not mpich:
        continue
    pair = sorted(b / a for a, b in zip(off, on) if a > 0)
    m_off, m_on, m_mpich = statistics.median(off), statistics.median(on), statistics.median(mpich)
    print("| %s | %s | %s | %.4g | %.4g | %.4g | %.1f | %.2f | %.1f-%.1f |" % (
        "patterns" if bench in patterns else "latency", bench, param, m_mpich, m_off, m_on,
        m_on / m_off, m_on / m_mpich, pair[0], pair[-1]))
EOF
