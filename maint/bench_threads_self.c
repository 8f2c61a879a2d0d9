/*
 * bench_threads_self.c — how threads of one process working on windows of their own
 * scale, with every core the process's: one rank, T threads, each with its own
 * MPI_Win_allocate window over MPI_COMM_SELF, locked once (MPI_Win_lock_all); an
 * iteration is one 8-byte MPI_Put into the thread's own window and MPI_Win_flush.
 * (nbrma-bench's threads group puts into a second rank, which takes a core of its own
 * on a 2-core machine, so its threads share one core.) Run by maint/bench_threads_self.sh.
 *
 * Usage: bench_threads_self THREADS ITERATIONS. Prints "threads T: RATE msg/s", the best
 * of 3 rounds (threads let go together, the round ends when the last joins), and fails
 * if a window does not hold its thread's last value after a round.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_THREADS 16

static int iterations;
static pthread_barrier_t start;

/* A cache line each: a thread's stores to its origin buffer must not take the line
 * another thread's buffer is in. */
struct worker {
    MPI_Win win;
    uint64_t value; /* the put's origin buffer */
} __attribute__((aligned(64)));

static void *work(void *arg) {
    struct worker *w = arg;
    MPI_Win_lock_all(0, w->win);
    pthread_barrier_wait(&start);
    for (int i = 1; i <= iterations; i++) {
        w->value = (uint64_t)i;
        MPI_Put(&w->value, 8, MPI_BYTE, 0, 0, 8, MPI_BYTE, w->win);
        MPI_Win_flush(0, w->win);
    }
    MPI_Win_unlock_all(w->win);
    return NULL;
}

int main(int argc, char **argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    const int threads = argc > 1 ? atoi(argv[1]) : 1;
    iterations = argc > 2 ? atoi(argv[2]) : 1000000;
    if (provided != MPI_THREAD_MULTIPLE || threads < 1 || threads > MAX_THREADS ||
        iterations < 1) {
        fprintf(stderr, "usage: bench_threads_self THREADS (1-%d) ITERATIONS; needs "
                        "MPI_THREAD_MULTIPLE\n", MAX_THREADS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    struct worker workers[MAX_THREADS];
    uint64_t *bases[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    for (int t = 0; t < threads; t++)
        MPI_Win_allocate(4096, 8, MPI_INFO_NULL, MPI_COMM_SELF, &bases[t], &workers[t].win);
    double best = 0;
    int ok = 1;
    for (int round = 0; round < 3; round++) {
        pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
        for (int t = 0; t < threads; t++) {
            bases[t][0] = 0;
            pthread_create(&ids[t], NULL, work, &workers[t]);
        }
        pthread_barrier_wait(&start);
        const double t0 = MPI_Wtime();
        for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
        const double rate = (double)threads * iterations / (MPI_Wtime() - t0);
        if (rate > best) best = rate;
        pthread_barrier_destroy(&start);
        for (int t = 0; t < threads; t++)
            if (bases[t][0] != (uint64_t)iterations) ok = 0;
    }
    for (int t = 0; t < threads; t++) MPI_Win_free(&workers[t].win);
    if (!ok) {
        fprintf(stderr, "bench_threads_self: a window does not hold its last put\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    printf("threads %d: %.4g msg/s\n", threads, best);
    MPI_Finalize();
    return 0;
}
