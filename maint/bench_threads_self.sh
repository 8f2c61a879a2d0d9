#!/bin/bash
# bench_threads_self.sh — the "Threads of one process" tables of doc/benchmarks.md: how
# the message rate of threads of one process, each on a window of its own, grows from 1
# to 2 threads (and 4) when every core is the process's (maint/bench_threads_self.c: one
# rank, MPI_COMM_SELF windows, an 8-byte put per iteration with a flush, in a lock_all
# epoch of its own, or in an exclusive lock epoch of its own). Built against this tree
# (nbrma on MPICH) and, where installed, against Open MPI (osc/sm); ROUNDS runs (default
# 5) per mode, thread count and MPI, alternated; one markdown table of the medians and
# each one's ratio to its 1-thread rate. With --sizes, put + flush from 1 and 2 threads
# by size (8 bytes to 256 KiB), on windows of their own and on one window the threads
# share, with the lowest run's ratio to the median (an outlier is a run below half of
# it). Run from a built tree:
# maint/bench_threads_self.sh [--sizes] [ROUNDS] [ITERATIONS (default 1000000; with
# --sizes, the count up to 1 KiB, fewer for larger puts)].
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
sizes=
if [ "${1:-}" = --sizes ]; then
    sizes="8 64 512 4096 32768 262144"
    shift
fi
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
# run PEER THREADS ITERATIONS MODE SIZE WINDOWS: one run's "threads T: RATE msg/s"
run() {
    case $1 in
        nbrma) mpiexec.mpich -n 1 -bind-to none "$work/nbrma" "${@:2}" ;;
        osc-sm) mpirun.openmpi --allow-run-as-root -n 1 --bind-to none --mca osc sm \
            "$work/ompi" "${@:2}" ;;
    esac | sed -n "s/^threads [0-9]*: \([0-9.e+]*\) msg\/s/\1/p"
}
if [ -n "$sizes" ]; then
    for i in $(seq "$rounds"); do
        for size in $sizes; do
            # ITERATIONS up to 1 KiB, then fewer as the size grows (a round of 1 KiB x
            # ITERATIONS bytes, 30 ms or so at the default: short rounds are noise)
            count=$(( size <= 1024 ? iterations : iterations * 1024 / size ))
            [ $count -lt 1000 ] && count=1000
            for windows in own one; do
                for threads in 1 2; do
                    for peer in $peers; do
                        echo "$peer $size $windows $threads $(run $peer $threads $count \
                            put_flush $size $windows)" >> "$work/rates"
                    done
                done
            done
        done
    done
    python3 - "$work/rates" $peers <<'SIZES'
import statistics, sys
rates = {}
for line in open(sys.argv[1]):
    peer, size, windows, threads, rate = line.split()
    rates.setdefault((peer, int(size), windows, int(threads)), []).append(float(rate))
peers = sys.argv[2:]
print("| size | windows | " + " | ".join(
    "%s 1 thread | %s 2 threads | 2 / 1 | lowest / median" % (p, p) for p in peers) + " |")
print("|---:|---|" + "---:|---:|---:|---:|" * len(peers))
for size in sorted({k[1] for k in rates}):
    for windows in ("own", "one"):
        cells = []
        for p in peers:
            one = statistics.median(rates[(p, size, windows, 1)])
            two = rates[(p, size, windows, 2)]
            cells.append("%.3g | %.3g | %.2f | %.2f" % (one, statistics.median(two),
                         statistics.median(two) / one, min(two) / statistics.median(two)))
        print("| %d | %s | %s |" % (size, windows, " | ".join(cells)))
SIZES
    exit 0
fi
modes="put_flush lock_all lock"
for i in $(seq "$rounds"); do
    for mode in $modes; do
        for threads in 1 2 4; do
            for peer in $peers; do
                echo "$peer $mode $threads $(run $peer $threads $iterations $mode 8 own)" \
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
