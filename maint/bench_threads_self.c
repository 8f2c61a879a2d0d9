/*
 * bench_threads_self.c — how threads of one process working on windows of their own
 * scale, with every core the process's: one rank, T threads, each with its own
 * MPI_Win_allocate window over MPI_COMM_SELF. An iteration is one MPI_Put of SIZE bytes
 * (default 8) into the thread's own window and, by MODE:
 *   put_flush  MPI_Win_flush, in one MPI_Win_lock_all epoch (the default);
 *   lock_all   the epoch's own MPI_Win_lock_all before it and MPI_Win_unlock_all after;
 *   lock       an exclusive MPI_Win_lock before it and MPI_Win_unlock after.
 * With WINDOWS "one" (put_flush only: two epochs of one process toward one target are
 * erroneous), the threads share one window instead, each putting into a slice of its
 * own, in one MPI_Win_lock_all epoch the main thread opens around the round.
 * (nbrma-bench's threads group puts into a second rank, which takes a core of its own
 * on a 2-core machine, so its threads share one core.) Run by maint/bench_threads_self.sh.
 *
 * Usage: bench_threads_self THREADS ITERATIONS [MODE [SIZE [own|one]]]. Prints
 * "threads T: RATE msg/s", the best of 3 rounds (threads let go together; a round lasts
 * from the first thread's first iteration to the last thread's last), and fails if a
 * window does not hold its thread's last put after a round.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 16

static int iterations, size = 8, one_window;
static enum { PUT_FLUSH, LOCK_ALL, LOCK } mode;
static pthread_barrier_t start;

/* A cache line each: a thread's stores to its origin buffer must not take the line
 * another thread's buffer is in (the buffer is aligned to 64 bytes, and so is its
 * length in the window). */
struct worker {
    MPI_Win win;
    MPI_Aint disp; /* where the thread's slice of the window begins */
    uint64_t *value; /* the put's origin buffer; its first word is the iteration */
    double began, ended;
} __attribute__((aligned(64)));

static void *work(void *arg) {
    struct worker *w = arg;
    if (mode == PUT_FLUSH && !one_window) MPI_Win_lock_all(0, w->win);
    pthread_barrier_wait(&start);
    w->began = MPI_Wtime();
    for (int i = 1; i <= iterations; i++) {
        w->value[0] = (uint64_t)i;
        if (mode == LOCK_ALL) MPI_Win_lock_all(0, w->win);
        if (mode == LOCK) MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w->win);
        MPI_Put(w->value, size, MPI_BYTE, 0, w->disp, size, MPI_BYTE, w->win);
        if (mode == PUT_FLUSH) MPI_Win_flush(0, w->win);
        if (mode == LOCK_ALL) MPI_Win_unlock_all(w->win);
        if (mode == LOCK) MPI_Win_unlock(0, w->win);
    }
    w->ended = MPI_Wtime();
    if (mode == PUT_FLUSH && !one_window) MPI_Win_unlock_all(w->win);
    return NULL;
}

int main(int argc, char **argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    const int threads = argc > 1 ? atoi(argv[1]) : 1;
    iterations = argc > 2 ? atoi(argv[2]) : 1000000;
    const char *name = argc > 3 ? argv[3] : "put_flush";
    size = argc > 4 ? atoi(argv[4]) : 8;
    const char *windows = argc > 5 ? argv[5] : "own";
    one_window = strcmp(windows, "one") == 0;
    int known = one_window || strcmp(windows, "own") == 0;
    if (strcmp(name, "put_flush") == 0)
        mode = PUT_FLUSH;
    else if (strcmp(name, "lock_all") == 0)
        mode = LOCK_ALL;
    else if (strcmp(name, "lock") == 0)
        mode = LOCK;
    else
        known = 0;
    if (provided != MPI_THREAD_MULTIPLE || threads < 1 || threads > MAX_THREADS ||
        iterations < 1 || size < 8 || size > (1 << 26) || !known ||
        (one_window && mode != PUT_FLUSH)) {
        fprintf(stderr, "usage: bench_threads_self THREADS (1-%d) ITERATIONS "
                        "[put_flush|lock_all|lock [SIZE (8 bytes-64 MiB) [own|one]]] (one: "
                        "put_flush only); needs MPI_THREAD_MULTIPLE\n", MAX_THREADS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const MPI_Aint slice = ((MPI_Aint)size + 63) / 64 * 64;
    struct worker workers[MAX_THREADS];
    char *bases[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    MPI_Win shared = MPI_WIN_NULL;
    if (one_window)
        MPI_Win_allocate(slice * threads, 1, MPI_INFO_NULL, MPI_COMM_SELF, &bases[0], &shared);
    for (int t = 0; t < threads; t++) {
        if (one_window) {
            workers[t].win = shared;
            workers[t].disp = slice * t;
            bases[t] = bases[0] + slice * t;
        } else {
            MPI_Win_allocate(slice, 1, MPI_INFO_NULL, MPI_COMM_SELF, &bases[t], &workers[t].win);
            workers[t].disp = 0;
        }
        if (posix_memalign((void **)&workers[t].value, 64, (size_t)slice) != 0) {
            fprintf(stderr, "bench_threads_self: no memory for the origin buffers\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        memset(workers[t].value, 0, (size_t)slice);
    }
    double best = 0;
    int ok = 1;
    for (int round = 0; round < 3; round++) {
        pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
        if (one_window) MPI_Win_lock_all(0, shared);
        for (int t = 0; t < threads; t++) {
            memset(bases[t], 0, sizeof(uint64_t));
            pthread_create(&ids[t], NULL, work, &workers[t]);
        }
        pthread_barrier_wait(&start);
        double began = 0, ended = 0;
        for (int t = 0; t < threads; t++) {
            pthread_join(ids[t], NULL);
            if (t == 0 || workers[t].began < began) began = workers[t].began;
            if (t == 0 || workers[t].ended > ended) ended = workers[t].ended;
        }
        if (one_window) MPI_Win_unlock_all(shared);
        const double rate = (double)threads * iterations / (ended - began);
        if (rate > best) best = rate;
        pthread_barrier_destroy(&start);
        for (int t = 0; t < threads; t++) {
            uint64_t last;
            memcpy(&last, bases[t], sizeof(last));
            if (last != (uint64_t)iterations) ok = 0;
        }
    }
    for (int t = 0; t < threads; t++) {
        if (!one_window) MPI_Win_free(&workers[t].win);
        free(workers[t].value);
    }
    if (one_window) MPI_Win_free(&shared);
    if (!ok) {
        fprintf(stderr, "bench_threads_self: a window does not hold its last put\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    printf("threads %d: %.4g msg/s\n", threads, best);
    MPI_Finalize();
    return 0;
}
