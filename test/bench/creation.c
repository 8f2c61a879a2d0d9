/*
 * creation.c — the cost of making and freeing a window, group "creation" of nbrma-bench
 * (see bench.h). Needs 4 ranks; the 2-rank rows run on ranks 0 and 1 (MPI_Comm_split)
 * while ranks 2 and 3 wait in an MPI_Ibarrier, sleeping between polls.
 *
 * Benchmark win_create_free, parameter <flavor>-<n>ranks: the time of one window
 * creation and its MPI_Win_free, collective over a communicator of n = 2 ranks (ranks 0
 * and 1 of MPI_COMM_WORLD) or 4 (MPI_COMM_WORLD itself), per flavor, 4000 bytes per rank:
 *   create    MPI_Win_create over a buffer malloc'd once (the same buffer every time)
 *   allocate  MPI_Win_allocate
 *   shared    MPI_Win_allocate_shared
 *   dynamic   MPI_Win_create_dynamic + MPI_Win_attach of the 4000-byte buffer, then
 *             MPI_Win_detach before MPI_Win_free (a window that can be used, as the
 *             other flavors' are)
 *   alloc_mem MPI_Win_create over 4000 bytes from MPI_Alloc_mem (allocated once)
 * Benchmark win_create_free_large, parameter <flavor>-<size>MiB: the same on ranks 0 and 1
 * with windows of 1 MiB, 16 MiB, 256 MiB and 1 GiB; create, dynamic and alloc_mem windows
 * lie over the start of a 1 GiB heap buffer or MPI_Alloc_mem block that each rank wrote
 * once (an application's data), allocate and shared windows are new memory each time.
 * usec per create+free: the median over 5 batches (3 with --quick) of a batch's mean (the
 * slowest member's time of the batch over its iterations); the "#" line before gives min
 * and max. Every batch runs N iterations back to back, N from 2 untimed warm-up iterations
 * (the faster one; only 1 where it already exceeds a batch's budget): as many as fit
 * 0.05 s per batch with --quick (0.4 s without), at least 1, at most 1000; --iterations N:
 * exactly N per batch. On 2 cores the 4-rank rows oversubscribe: two ranks share each
 * core, MPICH's collectives (MPICH's own window creation, and the ones nbrma's creation
 * calls) spin until preempted, and a 4-rank row moves in steps of the scheduler tick
 * (4 ms), tens of milliseconds per creation; 1 iteration per batch then.
 * Series: the blocking one (mpich on bench_mpich, nbrma-blocking on bench_nbrma).
 * Data check, on each warm-up iteration's window (outside the timed batches): every rank
 * zeroes its 4000 bytes, puts a position-dependent pattern into its right neighbour's
 * window (lock exclusive / put / unlock), and after a barrier finds its left neighbour's
 * pattern in its own memory and reads back with MPI_Get what it put; one CHECK line per
 * series (benchmark win_create_free).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

static const char *const names[] = {"win_create_free", "win_create_free_large"};
enum { NUM_BENCHMARKS = 2 };

enum flavor { CREATE, ALLOCATE, SHARED, DYNAMIC, ALLOC_MEM, NUM_FLAVORS };
static const char *const flavor_names[] = {"create", "allocate", "shared", "dynamic",
                                           "alloc_mem"};
/* win_create_free_large: window sizes in MiB (2 ranks) */
static const int large_mib[] = {1, 16, 256, 1024};
#define NUM_LARGE ((int)(sizeof large_mib / sizeof large_mib[0]))
static const int comm_sizes[] = {2, 4};
#define NUM_COMM_SIZES ((int)(sizeof comm_sizes / sizeof comm_sizes[0]))

#define WINDOW_BYTES 4000
#define BATCHES 5       /* 3 with --quick */
#define WARMUP 2        /* 1 where the first exceeds a batch's budget */
#define MAX_ITERATIONS 1000

struct window {
    MPI_Win win;
    unsigned char *base; /* this rank's 4000 bytes */
};

/* One window of `bytes` of flavor f over comm; `buffer` is the memory of create, dynamic
 * and alloc_mem (MPI_Alloc_mem's for alloc_mem). */
static void window_create(enum flavor f, MPI_Comm comm, unsigned char *buffer, MPI_Aint bytes,
                          struct window *w) {
    switch (f) {
    case CREATE:
    case ALLOC_MEM:
        BENCH_MPI(MPI_Win_create(buffer, bytes, 1, MPI_INFO_NULL, comm, &w->win));
        w->base = buffer;
        break;
    case ALLOCATE:
        BENCH_MPI(MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, comm, &w->base, &w->win));
        break;
    case SHARED:
        BENCH_MPI(MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, comm, &w->base, &w->win));
        break;
    case DYNAMIC:
        BENCH_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &w->win));
        BENCH_MPI(MPI_Win_attach(w->win, buffer, bytes));
        w->base = buffer;
        break;
    default:
        break;
    }
}

static void window_free(enum flavor f, struct window *w) {
    if (f == DYNAMIC) BENCH_MPI(MPI_Win_detach(w->win, w->base));
    BENCH_MPI(MPI_Win_free(&w->win));
}

static unsigned char pattern(int position, int rank, int salt) {
    return (unsigned char)((position * 7 + rank * 11 + salt * 3 + 1) & 0xff);
}

/* The data check on a fresh window (collective over comm): the number of wrong bytes. */
static long check_window(enum flavor f, MPI_Comm comm, struct window *w, int salt) {
    int me, n;
    BENCH_MPI(MPI_Comm_rank(comm, &me));
    BENCH_MPI(MPI_Comm_size(comm, &n));
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    BENCH_MPI(MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN));
    /* A dynamic window's displacements are the target's addresses. */
    MPI_Aint disp = 0;
    if (f == DYNAMIC) {
        MPI_Aint mine;
        BENCH_MPI(MPI_Get_address(w->base, &mine));
        MPI_Aint *all = bench_malloc("creation", (size_t)n * sizeof *all);
        BENCH_MPI(MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, comm));
        disp = all[right];
        free(all);
    }
    unsigned char out[WINDOW_BYTES], back[WINDOW_BYTES];
    for (int i = 0; i < WINDOW_BYTES; i++) out[i] = pattern(i, me, salt);
    memset(back, 0, sizeof back);

    BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->win));
    memset(w->base, 0, WINDOW_BYTES);
    BENCH_MPI(MPI_Win_unlock(me, w->win));
    BENCH_MPI(MPI_Barrier(comm));
    BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w->win));
    BENCH_MPI(MPI_Put(out, WINDOW_BYTES, MPI_BYTE, right, disp, WINDOW_BYTES, MPI_BYTE, w->win));
    BENCH_MPI(MPI_Win_unlock(right, w->win));
    BENCH_MPI(MPI_Barrier(comm));

    long wrong = 0;
    BENCH_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
    for (int i = 0; i < WINDOW_BYTES; i++)
        if (w->base[i] != pattern(i, left, salt)) wrong++;
    BENCH_MPI(MPI_Win_unlock(me, w->win));
    BENCH_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w->win));
    BENCH_MPI(MPI_Get(back, WINDOW_BYTES, MPI_BYTE, right, disp, WINDOW_BYTES, MPI_BYTE, w->win));
    BENCH_MPI(MPI_Win_unlock(right, w->win));
    if (memcmp(back, out, WINDOW_BYTES) != 0) wrong++;
    BENCH_MPI(MPI_Barrier(comm)); /* nobody frees while a get is in flight */
    if (wrong)
        fprintf(stderr, "creation: rank %d: %s window over %d ranks: %ld wrong bytes\n", me,
                flavor_names[f], n, wrong);
    return wrong;
}

/* The slowest member's seconds, known to every member. */
static double slowest(double seconds, MPI_Comm comm) {
    double worst = 0;
    BENCH_MPI(MPI_Allreduce(&seconds, &worst, 1, MPI_DOUBLE, MPI_MAX, comm));
    return worst;
}

/* One row (collective over comm) of benchmark names[which] with windows of `bytes`:
 * RESULT on comm's rank 0; the wrong bytes seen. */
static long run_row(const char *series, int which, enum flavor f, MPI_Comm comm,
                    unsigned char *buffer, MPI_Aint bytes, const struct bench_options *options) {
    int me, n;
    BENCH_MPI(MPI_Comm_rank(comm, &me));
    BENCH_MPI(MPI_Comm_size(comm, &n));
    char parameter[32];
    if (which == 0)
        snprintf(parameter, sizeof parameter, "%s-%dranks", flavor_names[f], n);
    else
        snprintf(parameter, sizeof parameter, "%s-%ldMiB", flavor_names[f], (long)(bytes >> 20));
    bench_set_step(series, parameter);

    const int batches = options->quick ? 3 : BATCHES;
    const double budget = (options->quick ? 0.15 : 2.0) / batches; /* seconds per batch */
    long wrong = 0;
    double warm = 1e30;
    for (int i = 0; i < WARMUP && (i == 0 || warm <= budget); i++) {
        struct window w;
        BENCH_MPI(MPI_Barrier(comm));
        double start = MPI_Wtime();
        window_create(f, comm, buffer, bytes, &w);
        double spent = MPI_Wtime() - start;
        wrong += check_window(f, comm, &w, (int)f * 4 + n + i);
        start = MPI_Wtime();
        window_free(f, &w);
        spent = slowest(spent + MPI_Wtime() - start, comm);
        if (spent < warm) warm = spent;
    }
    int iterations = options->iterations;
    if (iterations <= 0) {
        iterations = warm > 0 ? (int)(budget / warm) : MAX_ITERATIONS;
        if (iterations < 1) iterations = 1;
        if (iterations > MAX_ITERATIONS) iterations = MAX_ITERATIONS;
    }

    double usec[BATCHES];
    for (int b = 0; b < batches; b++) {
        BENCH_MPI(MPI_Barrier(comm));
        const double start = MPI_Wtime();
        for (int i = 0; i < iterations; i++) {
            struct window w;
            window_create(f, comm, buffer, bytes, &w);
            window_free(f, &w);
        }
        usec[b] = slowest(MPI_Wtime() - start, comm) * 1e6 / iterations;
    }
    if (me == 0) {
        qsort(usec, batches, sizeof *usec, bench_compare_doubles);
        printf("# %s %s %s: median %.1f, min %.1f, max %.1f usec over %d batches of %d\n", series,
               names[which], parameter, usec[batches / 2], usec[0], usec[batches - 1], batches,
               iterations);
        bench_result(series, names[which], parameter, usec[batches / 2], "usec");
    }
    return wrong;
}

void bench_list_creation(void) {
    char parameter[32];
    for (int c = 0; c < NUM_COMM_SIZES; c++)
        for (int f = 0; f < NUM_FLAVORS; f++) {
            snprintf(parameter, sizeof parameter, "%s-%dranks", flavor_names[f], comm_sizes[c]);
            bench_row(names[0], parameter, "usec");
        }
    for (int s = 0; s < NUM_LARGE; s++)
        for (int f = 0; f < NUM_FLAVORS; f++) {
            snprintf(parameter, sizeof parameter, "%s-%dMiB", flavor_names[f], large_mib[s]);
            bench_row(names[1], parameter, "usec");
        }
}

/* win_create_free_large on ranks 0 and 1 (comm): the application's memory (a heap buffer
 * and an MPI_Alloc_mem block of the largest size) is allocated and written once, as an
 * application's data would be; windows of 1 MiB to 1 GiB are made over its start. */
static long run_large(const char *series, MPI_Comm comm, const struct bench_options *options) {
    const MPI_Aint most = (MPI_Aint)large_mib[NUM_LARGE - 1] << 20;
    unsigned char *heap = bench_malloc("creation", (size_t)most), *special = NULL;
    BENCH_MPI(MPI_Alloc_mem(most, MPI_INFO_NULL, &special));
    memset(heap, 1, (size_t)most);
    memset(special, 1, (size_t)most);
    long wrong = 0;
    for (int s = 0; s < NUM_LARGE; s++)
        for (int f = 0; f < NUM_FLAVORS; f++)
            wrong += run_row(series, 1, (enum flavor)f, comm, f == ALLOC_MEM ? special : heap,
                             (MPI_Aint)large_mib[s] << 20, options);
    BENCH_MPI(MPI_Free_mem(special));
    free(heap);
    return wrong;
}

int bench_creation(const struct bench_options *options) {
    int rank, size;
    bench_start_group("creation", options, names, NUM_BENCHMARKS, &rank, &size);
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (rank == 0) {
        printf("# creation: %d ranks on %ld cores, %d-byte windows, %s\n", size, cores,
               WINDOW_BYTES, options->quick ? "quick" : "full");
        fflush(stdout);
    }
    long wrong = 0;
    const int small = bench_selected(options, names[0]), large = bench_selected(options, names[1]);
    if (small || large) {
        unsigned char *buffer = bench_malloc("creation", WINDOW_BYTES), *special = NULL;
        memset(buffer, 0, WINDOW_BYTES);
        BENCH_MPI(MPI_Alloc_mem(WINDOW_BYTES, MPI_INFO_NULL, &special));
        for (int c = 0; c < NUM_COMM_SIZES; c++) {
            const int members = comm_sizes[c];
            MPI_Comm comm = MPI_COMM_WORLD;
            if (members < size)
                BENCH_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank < members ? 0 : MPI_UNDEFINED, rank,
                                         &comm));
            if (comm != MPI_COMM_NULL) {
                for (int f = 0; f < NUM_FLAVORS && small; f++)
                    wrong += run_row(BENCH_BLOCKING_SERIES, 0, (enum flavor)f, comm,
                                     f == ALLOC_MEM ? special : buffer, WINDOW_BYTES, options);
                if (members == 2 && large)
                    wrong += run_large(BENCH_BLOCKING_SERIES, comm, options);
                if (comm != MPI_COMM_WORLD) BENCH_MPI(MPI_Comm_free(&comm));
            }
            /* ranks left out wait here, sleeping between polls, not spinning on a core */
            MPI_Request request;
            BENCH_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &request));
            bench_wait_polling(&request, rank < members ? 0 : 1000);
        }
        free(buffer);
        BENCH_MPI(MPI_Free_mem(special));
        long total = 0;
        BENCH_MPI(MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
        if (rank == 0) bench_check(BENCH_BLOCKING_SERIES, names[small ? 0 : 1], total == 0);
        wrong = total;
    }
    return wrong ? 3 : 0;
}
