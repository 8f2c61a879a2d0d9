/*
 * bench_check_plain.c — the race checker's cost in a plain program, the control of the
 * nbrma-bench rows maint/bench_check_cost.sh tables: two ranks, one MPI_Win_allocate
 * window of 1 MiB, rank 0 the origin, rank 1 the target, 8 bytes of MPI_BYTE a call; the
 * time per iteration of one loop, printed by rank 0 in microseconds:
 *   lock   MPI_Win_lock(shared) / MPI_Put / MPI_Win_unlock
 *   flush  MPI_Put / MPI_Win_flush inside one shared lock
 *   fence  MPI_Put (rank 0) / MPI_Win_fence (both)
 *   pscw   rank 0 MPI_Win_start / MPI_Put / MPI_Win_complete, rank 1 MPI_Win_post /
 *          MPI_Win_wait
 *
 * Build and run against a built tree (NBRMA_CHECK=races to check):
 *   mpicc.mpich -O2 maint/bench_check_plain.c -o /tmp/bench_check_plain \
 *       -L.libs -Wl,-rpath,$PWD/.libs -lnbrma
 *   mpiexec.mpich -n 2 -bind-to core /tmp/bench_check_plain lock [iterations]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *loop = argc > 1 ? argv[1] : "lock";
    const long iterations = argc > 2 ? atol(argv[2]) : 1000000;
    if (np != 2 || iterations <= 0 ||
        (strcmp(loop, "lock") && strcmp(loop, "flush") && strcmp(loop, "fence") &&
         strcmp(loop, "pscw"))) {
        if (me == 0) fprintf(stderr, "usage: 2 ranks; lock|flush|fence|pscw [iterations]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *base;
    MPI_Win win;
    MPI_Win_allocate(1 << 20, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    char buffer[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    MPI_Group world, peer;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    const int other = 1 - me;
    MPI_Group_incl(world, 1, &other, &peer);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    if (!strcmp(loop, "lock") && me == 0) {
        for (long i = 0; i < iterations; i++) {
            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
            MPI_Put(buffer, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
            MPI_Win_unlock(1, win);
        }
    } else if (!strcmp(loop, "flush") && me == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        for (long i = 0; i < iterations; i++) {
            MPI_Put(buffer, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
            MPI_Win_flush(1, win);
        }
        MPI_Win_unlock(1, win);
    } else if (!strcmp(loop, "fence")) {
        MPI_Win_fence(0, win);
        for (long i = 0; i < iterations; i++) {
            if (me == 0) MPI_Put(buffer, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
            MPI_Win_fence(0, win);
        }
    } else if (!strcmp(loop, "pscw")) {
        for (long i = 0; i < iterations; i++) {
            if (me == 0) {
                MPI_Win_start(peer, 0, win);
                MPI_Put(buffer, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
                MPI_Win_complete(win);
            } else {
                MPI_Win_post(peer, 0, win);
                MPI_Win_wait(win);
            }
        }
    }
    const double elapsed = MPI_Wtime() - start;
    if (me == 0) printf("%s %.4f\n", loop, elapsed / (double)iterations * 1e6);
    MPI_Group_free(&peer);
    MPI_Group_free(&world);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
