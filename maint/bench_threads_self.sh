#!/bin/bash
# bench_threads_self.sh — the "Threads of one process" table of doc/benchmarks.md: how
# the message rate of threads of one process, each on a window of its own, grows from 1
# to 2 threads (and 4) when every core is the process's (maint/bench_threads_self.c: one
# rank, MPI_COMM_SELF windows, an 8-byte put per iteration with a flush, in a lock_all
# epoch of its own, or in an exclusive lock epoch of its own). Built against this tree
# (nbrma on MPICH) and, where installed, against Open MPI (osc/sm); ROUNDS runs (default
# 5) per mode, thread count and MPI, alternated; one markdown table of the medians and
# each one's ratio to its 1-thread rate. Run from a built tree:
# maint/bench_threads_self.sh [ROUNDS] [ITERATIONS (default 1000000)].
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5}
iterations=${2:-1000000}
work=$(mktemp -d "${TMPDIR:-/tmp}/nbrma-threads-self.XXXXXX")
trap 'rm -rf "$work"' EXIT
mpicc.mpich -O2 -pthread "$top/maint/bench_threads_self.c" -o "$work/nbrma" -L"$top/.libs" \
    -Wl,-rpath,"$top/.libs" -lnbrma
peers=nbrma
if command -v mpicc.openmpi > /dev/null && command -v mpirun.openmpi > /dev/null; then
    mpicc.openmpi -O2 -pthread "$top/maint/bench_threads_self.c" -o "$work/ompi"
    peers="nbrma osc-sm"
fi
modes="put_flush lock_all lock"
for i in $(seq "$rounds"); do
    for mode in $modes; do
        for threads in 1 2 4; do
            for peer in $peers; do
                case $peer in
                    nbrma) mpiexec.mpich -n 1 -bind-to none "$work/nbrma" "$threads" \
                        "$iterations" "$mode" ;;
                    osc-sm) mpirun.openmpi --allow-run-as-root -n 1 --bind-to none --mca osc sm \
                        "$work/ompi" "$threads" "$iterations" "$mode" ;;
                esac | sed -n "s/^threads \([0-9]*\): \([0-9.e+]*\) msg\/s/$peer $mode \1 \2/p" \
                    >> "$work/rates"
            done
        done
    done
done
python3 - "$work/rates" $peers <<'TABLE'
import statistics, sys
rates = {}
for line in open(sys.argv[1]):
    peer, mode, threads, rate = line.split()
    rates.setdefault((peer, mode), {}).setdefault(int(threads), []).append(float(rate))
peers = sys.argv[2:]
labels = {"put_flush": "put + flush", "lock_all": "lock_all / put / unlock_all",
          "lock": "lock / put / unlock"}
print("| iteration | threads | " +
      " | ".join("%s, msg/s | %s / 1 thread" % (p, p) for p in peers) + " |")
print("|---|---:|" + "---:|---:|" * len(peers))
for mode in ("put_flush", "lock_all", "lock"):
    for threads in sorted(rates[(peers[0], mode)]):
        cells = []
        for p in peers:
            median = statistics.median(rates[(p, mode)][threads])
            cells.append("%.3g | %.2f" % (median, median / statistics.median(rates[(p, mode)][1])))
        print("| %s | %d | %s |" % (labels[mode], threads, " | ".join(cells)))
TABLE
