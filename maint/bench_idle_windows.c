/*
 * bench_idle_windows.c — what live idle windows cost an interposed MPI call:
 * with 0, 1, 10, 100 and 1000 windows of MPI_Win_allocate alive and idle (no epoch
 * open), the time per call of MPI_Test on MPI_REQUEST_NULL (MPICH answers at once, so
 * what is left is nbrma's "anything pending?") and of MPI_Iprobe finding no message
 * (one MPICH progress step as well). Every rank runs the loops at once; rank 0 prints
 * the median over the repetitions, in nanoseconds per call.
 *
 * Build and run against a built tree (any number of ranks):
 *   mpicc.mpich -O2 maint/bench_idle_windows.c -o /tmp/bench_idle_windows \
 *       -L.libs -Wl,-rpath,$PWD/.libs -lnbrma
 *   mpiexec.mpich -n 2 /tmp/bench_idle_windows [calls per repetition [windows]]
 * With a window count, only that row. Instructions per call, which the machine's load does
 * not change (the MPI_Test loop runs REPETITIONS x calls times, Iprobe a quarter of that):
 *   mpiexec.mpich -n 2 valgrind --tool=callgrind --toggle-collect=MPI_Test \
 *       /tmp/bench_idle_windows 2000 1000
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define REPETITIONS 9

static int compare(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ns per call, median over the repetitions; kind 0: MPI_Test, 1: MPI_Iprobe */
static double measure(int kind, long calls) {
    double times[REPETITIONS];
    for (int r = 0; r < REPETITIONS; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        for (long i = 0; i < calls; ++i) {
            int flag = 0;
            if (kind == 0) {
                MPI_Request request = MPI_REQUEST_NULL;
                MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
            } else {
                MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            }
        }
        times[r] = (MPI_Wtime() - start) * 1e9 / (double)calls;
    }
    qsort(times, REPETITIONS, sizeof times[0], compare);
    return times[REPETITIONS / 2];
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long calls = argc > 1 ? atol(argv[1]) : 200000;
    int counts[] = {0, 1, 10, 100, 1000};
    size_t ncounts = sizeof counts / sizeof counts[0];
    if (argc > 2) { /* that many windows only */
        counts[0] = atoi(argv[2]);
        ncounts = counts[0] >= 0 && counts[0] <= 1000 ? 1 : 0;
    }
    MPI_Win windows[1000];
    int live = 0;
    if (rank == 0) printf("%8s %14s %16s\n", "windows", "MPI_Test ns", "MPI_Iprobe ns");
    for (size_t c = 0; c < ncounts; ++c) {
        while (live < counts[c]) {
            void *base;
            MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &windows[live]);
            ++live;
        }
        /* one epoch on the last window, completed: windows that had work and went idle */
        if (live > 0) {
            MPI_Win_lock(MPI_LOCK_SHARED, (rank + 1) % size, 0, windows[live - 1]);
            MPI_Win_unlock((rank + 1) % size, windows[live - 1]);
        }
        const double test = measure(0, calls);
        const double iprobe = measure(1, calls / 4);
        if (rank == 0) printf("%8d %14.1f %16.1f\n", live, test, iprobe);
        fflush(stdout);
    }
    for (int i = 0; i < live; ++i) MPI_Win_free(&windows[i]);
    MPI_Finalize();
    return 0;
}
