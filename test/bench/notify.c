/*
 * notify.c — notified RMA (doc/design.md §8), group "notify" of nbrma-bench (see
 * bench.h). Needs 3 ranks; the 2-rank rows run on ranks 0 and 1 while rank 2 sleeps.
 *
 * Benchmarks (parameter: bytes per halo or per message):
 *   halo1d_2ranks, halo1d_3ranks  the notified-RMA paper's 1-D halo exchange on a line of 2 or 3 ranks
 *                (not periodic, as in the seed): every iteration each rank sends its two
 *                boundaries to its neighbours and waits for theirs. usec per iteration,
 *                the slowest rank's, best of 3 runs. Ghosts are double-buffered by the
 *                iteration's parity, so a fast rank cannot overwrite what a slow one
 *                still reads. At most 200 iterations (--quick; else 1000) per run, fewer
 *                where 5 warm-up iterations say a run would take over 0.1 s (0.5 s).
 *   prodcons     rank 0 sends messages to rank 1 through a ring of 64 slots in rank 1's
 *                window; rank 1 hands each slot back. Messages per second, best of 3
 *                runs of at most 5000 (20000) messages, fewer where a warm-up of 128
 *                says a run would take over 0.1 s (0.5 s).
 * Series:
 *   mpich, nbrma-blocking  the seed's "existing implementation": MPI_Put of the data,
 *                MPI_Win_flush, MPI_Put of a signal (the iteration or message count) into
 *                a signal window, MPI_Win_flush; the target polls its signal words
 *                (MPI_Win_sync and MPI_Iprobe between polls, the latter for MPICH's
 *                progress; sched_yield too when the job has more ranks than cores, as
 *                nbrma's own waits do). Run on MPICH's RMA and on nbrma.
 *   nbrma-notify  MPIX_Put_notify into the target's counter (one per neighbour side;
 *                prodcons: data and credits) and MPIX_Win_notify_ithreshold + MPI_Wait
 *                (halo: MPI_Waitall over both sides).
 * Both series run inside one MPI_Win_lock_all(MPI_MODE_NOCHECK) epoch per run. The
 * environment variable NBRMA_BENCH_SERIES_SUFFIX is appended to every series name:
 * nbrma-bench sets it for its jobs over tcp ("-tcp": MPICH with MPIR_CVAR_NOLOCAL=1;
 * "-ucx": nbrma with NBRMA_TRANSPORT=ucx), the seed's setting, where a flush costs a
 * round trip.
 * Data checks: the first, middle and last byte of every ghost and message carry the
 * sender's stamp for that iteration or message; a CHECK line per series and benchmark.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

static const char *const names[] = {"halo1d_2ranks", "halo1d_3ranks", "prodcons"};
enum { HALO2, HALO3, PRODCONS, NUM_BENCHMARKS };

static const int halo_sizes[] = {8, 64, 512, 4096, 32768, 262144, 1048576};
#define NUM_HALO_SIZES ((int)(sizeof halo_sizes / sizeof halo_sizes[0]))
static const int message_sizes[] = {8, 4096};
#define NUM_MESSAGE_SIZES ((int)(sizeof message_sizes / sizeof message_sizes[0]))
#define SLOTS 64
#define REPEATS 3

enum style { FLUSH_SIGNAL, NOTIFY };

static int oversubscribed; /* more ranks than cores: polling loops yield */

/* The three sample bytes of a buffer of `bytes` carry `stamp`. */
static void stamp_fill(unsigned char *p, int bytes, unsigned char stamp) { memset(p, stamp, bytes); }
static int stamp_ok(const volatile unsigned char *p, int bytes, unsigned char stamp) {
    return p[0] == stamp && p[bytes / 2] == stamp && p[bytes - 1] == stamp;
}

/* Wait until every watched signal word reaches its value: the target's polling. */
static void poll_signals(MPI_Win signal_win, const volatile long long *words, const int *watch,
                         long long value) {
    for (;;) {
        int ready = 1;
        for (int s = 0; s < 2; s++)
            if (watch[s] && words[s] < value) ready = 0;
        if (ready) return;
        BENCH_MPI(MPI_Win_sync(signal_win));
        /* MPICH applies puts that arrive as active messages only in its progress, which
         * MPI_Win_sync does not run */
        int flag;
        BENCH_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        if (oversubscribed) sched_yield();
    }
}

#ifdef NBRMA_NONBLOCKING_SERIES
static void wait_counter(MPI_Win win, int idx, long long value) {
    MPI_Request request;
    BENCH_MPI(MPIX_Win_notify_ithreshold(win, idx, value, &request));
    BENCH_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
}
#endif

/* ------------------------------------------------------------------ 1-D halo */
struct halo {
    MPI_Comm comm;
    int me, n, left, right; /* neighbours on the line, or -1 */
    int bytes, iterations; /* iterations: at most, unless fixed (--iterations) */
    int fixed;
    double seconds; /* a run's time budget: fewer iterations where they are slow */
    int it; /* iterations so far, across sizes: signal words and counters only grow */
    MPI_Win win, signal_win; /* ghosts[parity][side]; signal words[side] */
    unsigned char *ghosts, *send; /* send[parity][side] */
    long long *signals;
    long long signal_out[2][2];   /* [parity][side]: stable until the flush */
    int mismatches;
};

/* side 0: the ghost filled by the left neighbour, 1: by the right one */
static MPI_Aint ghost_at(const struct halo *h, int parity, int side) {
    return ((MPI_Aint)parity * 2 + side) * h->bytes;
}

static void halo_iteration(struct halo *h, enum style style, int it) {
    const int parity = it % 2;
    const unsigned char mine = bench_stamp(it, h->me);
    unsigned char *send = h->send + ghost_at(h, parity, 0);
    stamp_fill(send, 2 * h->bytes, mine);
    const int watch[2] = {h->left >= 0, h->right >= 0};
    if (style == FLUSH_SIGNAL) {
        /* my left boundary is my left neighbour's right ghost, and the other way round */
        if (h->left >= 0)
            BENCH_MPI(MPI_Put(send, h->bytes, MPI_BYTE, h->left, ghost_at(h, parity, 1), h->bytes,
                              MPI_BYTE, h->win));
        if (h->right >= 0)
            BENCH_MPI(MPI_Put(send + h->bytes, h->bytes, MPI_BYTE, h->right,
                              ghost_at(h, parity, 0), h->bytes, MPI_BYTE, h->win));
        BENCH_MPI(MPI_Win_flush_all(h->win));
        h->signal_out[parity][0] = h->signal_out[parity][1] = it;
        if (h->left >= 0)
            BENCH_MPI(MPI_Put(&h->signal_out[parity][0], 1, MPI_LONG_LONG, h->left, 1, 1,
                              MPI_LONG_LONG, h->signal_win));
        if (h->right >= 0)
            BENCH_MPI(MPI_Put(&h->signal_out[parity][1], 1, MPI_LONG_LONG, h->right, 0, 1,
                              MPI_LONG_LONG, h->signal_win));
        BENCH_MPI(MPI_Win_flush_all(h->signal_win));
        poll_signals(h->signal_win, h->signals, watch, it);
    } else {
#ifdef NBRMA_NONBLOCKING_SERIES
        if (h->left >= 0)
            BENCH_MPI(MPIX_Put_notify(send, h->bytes, MPI_BYTE, h->left, ghost_at(h, parity, 1),
                                      h->bytes, MPI_BYTE, 1, h->win));
        if (h->right >= 0)
            BENCH_MPI(MPIX_Put_notify(send + h->bytes, h->bytes, MPI_BYTE, h->right,
                                      ghost_at(h, parity, 0), h->bytes, MPI_BYTE, 0, h->win));
        MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        for (int s = 0; s < 2; s++)
            if (watch[s]) BENCH_MPI(MPIX_Win_notify_ithreshold(h->win, s, it, &requests[s]));
        MPI_Status statuses[2]; /* MPI_STATUSES_IGNORE trips GCC 12 -Wstringop-overflow */
        BENCH_MPI(MPI_Waitall(2, requests, statuses));
#endif
    }
    const int neighbour[2] = {h->left, h->right};
    for (int s = 0; s < 2; s++)
        if (watch[s] && !stamp_ok(h->ghosts + ghost_at(h, parity, s), h->bytes,
                                  bench_stamp(it, neighbour[s])))
            h->mismatches++;
}

/* One series of one halo benchmark over comm (every member calls): the best of REPEATS
 * runs of the slowest rank's time per iteration. */
static double halo_run(struct halo *h, enum style style) {
    double best = 1e30;
    int iterations = h->iterations;
    for (int repeat = 0; repeat < REPEATS; repeat++) {
        double warm_start = MPI_Wtime(), warm_time = 0;
        for (int warm = 0; warm < 5; warm++) halo_iteration(h, style, ++h->it);
        warm_time = (MPI_Wtime() - warm_start) / 5;
        BENCH_MPI(MPI_Allreduce(MPI_IN_PLACE, &warm_time, 1, MPI_DOUBLE, MPI_MAX, h->comm));
        if (!h->fixed && repeat == 0 && warm_time * iterations > h->seconds) {
            iterations = (int)(h->seconds / warm_time);
            if (iterations < 10) iterations = 10;
        }
        BENCH_MPI(MPI_Barrier(h->comm));
        const double start = MPI_Wtime();
        for (int i = 0; i < iterations; i++) halo_iteration(h, style, ++h->it);
        double mine = (MPI_Wtime() - start) / iterations * 1e6, slowest = 0;
        BENCH_MPI(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, h->comm));
        if (slowest < best) best = slowest;
    }
    return best;
}

static int halo_benchmark(const struct bench_options *options, int which, MPI_Comm comm,
                          const char *series, enum style style) {
    struct halo h;
    memset(&h, 0, sizeof h);
    h.comm = comm;
    BENCH_MPI(MPI_Comm_rank(comm, &h.me));
    BENCH_MPI(MPI_Comm_size(comm, &h.n));
    h.left = h.me > 0 ? h.me - 1 : -1;
    h.right = h.me + 1 < h.n ? h.me + 1 : -1;
    const int max_bytes = halo_sizes[NUM_HALO_SIZES - 1];
    bench_win_allocate((MPI_Aint)4 * max_bytes, 1, NULL, comm, &h.ghosts, &h.win);
    bench_win_allocate(2 * sizeof(long long), sizeof(long long), NULL, comm, &h.signals,
                       &h.signal_win);
    h.send = bench_malloc("notify", (size_t)4 * max_bytes);
#ifdef NBRMA_NONBLOCKING_SERIES
    if (style == NOTIFY) BENCH_MPI(MPIX_Win_notify_set_num(h.win, 2));
#endif
    BENCH_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, h.signal_win));
    h.signals[0] = h.signals[1] = 0;
    BENCH_MPI(MPI_Win_unlock_all(h.signal_win));
    BENCH_MPI(MPI_Barrier(comm));
    BENCH_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, h.win));
    BENCH_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, h.signal_win));
    h.fixed = options->iterations > 0;
    h.seconds = options->quick ? 0.1 : 0.5;
    for (int k = 0; k < NUM_HALO_SIZES; k++) {
        h.bytes = halo_sizes[k];
        h.iterations = h.fixed ? options->iterations : options->quick ? 200 : 1000;
        const double usec = halo_run(&h, style);
        if (h.me == 0) {
            char parameter[32];
            snprintf(parameter, sizeof parameter, "%d", h.bytes);
            bench_result(series, names[which], parameter, usec, "usec");
        }
    }
    BENCH_MPI(MPI_Win_unlock_all(h.signal_win));
    BENCH_MPI(MPI_Win_unlock_all(h.win));
    int mismatches = 0;
    BENCH_MPI(MPI_Allreduce(&h.mismatches, &mismatches, 1, MPI_INT, MPI_SUM, comm));
    if (h.me == 0) bench_check(series, names[which], mismatches == 0);
    BENCH_MPI(MPI_Win_free(&h.signal_win));
    BENCH_MPI(MPI_Win_free(&h.win));
    free(h.send);
    return mismatches != 0;
}

/* ------------------------------------------------------------------ producer-consumer */
/* Ranks 0 (producer) and 1 (consumer) of comm. Signal words: at the consumer [0] the
 * messages sent, at the producer [1] the messages consumed. Counters: at the consumer 0
 * (data), at the producer 1 (credits). */
static double prodcons_run(MPI_Comm comm, int me, int bytes, int messages, enum style style,
                           MPI_Win win, unsigned char *slots, MPI_Win signal_win,
                           volatile long long *signals, unsigned char *out, long long *first,
                           int *mismatches) {
    long long one_out[2];
    const int watch_data[2] = {1, 0}, watch_credit[2] = {0, 1};
    BENCH_MPI(MPI_Barrier(comm));
    const double start = MPI_Wtime();
    for (long long m = *first; m < *first + messages; m++) {
        const int slot = (int)(m % SLOTS);
        const unsigned char stamp = bench_stamp((int)m, 0);
        if (me == 0) {
            unsigned char *buffer = out + (size_t)slot * bytes;
            if (style == FLUSH_SIGNAL) {
                if (m >= SLOTS) poll_signals(signal_win, signals, watch_credit, m - SLOTS + 1);
                stamp_fill(buffer, bytes, stamp);
                BENCH_MPI(MPI_Put(buffer, bytes, MPI_BYTE, 1, (MPI_Aint)slot * bytes, bytes,
                                  MPI_BYTE, win));
                BENCH_MPI(MPI_Win_flush(1, win));
                one_out[0] = m + 1;
                BENCH_MPI(MPI_Put(&one_out[0], 1, MPI_LONG_LONG, 1, 0, 1, MPI_LONG_LONG, signal_win));
                BENCH_MPI(MPI_Win_flush(1, signal_win));
            } else {
#ifdef NBRMA_NONBLOCKING_SERIES
                if (m >= SLOTS) wait_counter(win, 1, m - SLOTS + 1);
                stamp_fill(buffer, bytes, stamp);
                BENCH_MPI(MPIX_Put_notify(buffer, bytes, MPI_BYTE, 1, (MPI_Aint)slot * bytes, bytes,
                                          MPI_BYTE, 0, win));
#endif
            }
        } else if (me == 1) {
            if (style == FLUSH_SIGNAL)
                poll_signals(signal_win, signals, watch_data, m + 1);
#ifdef NBRMA_NONBLOCKING_SERIES
            else
                wait_counter(win, 0, m + 1);
#endif
            if (!stamp_ok(slots + (size_t)slot * bytes, bytes, stamp)) (*mismatches)++;
            if (style == FLUSH_SIGNAL) {
                one_out[1] = m + 1;
                BENCH_MPI(MPI_Put(&one_out[1], 1, MPI_LONG_LONG, 0, 1, 1, MPI_LONG_LONG, signal_win));
                BENCH_MPI(MPI_Win_flush(0, signal_win));
            } else {
#ifdef NBRMA_NONBLOCKING_SERIES
                BENCH_MPI(MPIX_Put_notify(NULL, 0, MPI_BYTE, 0, 0, 0, MPI_BYTE, 1, win));
#endif
            }
        }
    }
    double mine = MPI_Wtime() - start, slowest = 0;
    BENCH_MPI(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm));
    *first += messages;
    return messages / slowest;
}

static int prodcons_benchmark(const struct bench_options *options, MPI_Comm comm,
                              const char *series, enum style style) {
    int me;
    BENCH_MPI(MPI_Comm_rank(comm, &me));
    const int max_bytes = message_sizes[NUM_MESSAGE_SIZES - 1];
    MPI_Win win, signal_win;
    unsigned char *slots;
    long long *signals;
    bench_win_allocate((MPI_Aint)SLOTS * max_bytes, 1, NULL, comm, &slots, &win);
    bench_win_allocate(2 * sizeof(long long), sizeof(long long), NULL, comm, &signals, &signal_win);
    unsigned char *out = bench_malloc("notify", (size_t)SLOTS * max_bytes);
#ifdef NBRMA_NONBLOCKING_SERIES
    if (style == NOTIFY) BENCH_MPI(MPIX_Win_notify_set_num(win, 2));
#endif
    BENCH_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, signal_win));
    signals[0] = signals[1] = 0;
    BENCH_MPI(MPI_Win_unlock_all(signal_win));
    BENCH_MPI(MPI_Barrier(comm));
    BENCH_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    BENCH_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, signal_win));
    int mismatches = 0;
    long long first = 0;
    const int fixed = options->iterations > 0;
    const double seconds = options->quick ? 0.1 : 0.5; /* a run's budget */
    for (int k = 0; k < NUM_MESSAGE_SIZES; k++) {
        double best = 0;
        const double warm = prodcons_run(comm, me, message_sizes[k], SLOTS * 2, style, win, slots,
                                         signal_win, signals, out, &first, &mismatches);
        int messages = fixed ? options->iterations : options->quick ? 5000 : 20000;
        if (!fixed && messages > warm * seconds) messages = warm * seconds > 500 ? (int)(warm * seconds) : 500;
        for (int repeat = 0; repeat < REPEATS; repeat++) {
            const double rate = prodcons_run(comm, me, message_sizes[k], messages, style, win, slots,
                                             signal_win, signals, out, &first, &mismatches);
            if (rate > best) best = rate;
        }
        if (me == 0) {
            char parameter[32];
            snprintf(parameter, sizeof parameter, "%d", message_sizes[k]);
            bench_result(series, names[PRODCONS], parameter, best, "msg/s");
        }
    }
    BENCH_MPI(MPI_Win_unlock_all(signal_win));
    BENCH_MPI(MPI_Win_unlock_all(win));
    int total = 0;
    BENCH_MPI(MPI_Allreduce(&mismatches, &total, 1, MPI_INT, MPI_SUM, comm));
    if (me == 0) bench_check(series, names[PRODCONS], total == 0);
    BENCH_MPI(MPI_Win_free(&signal_win));
    BENCH_MPI(MPI_Win_free(&win));
    free(out);
    return total != 0;
}

/* ------------------------------------------------------------------ the group */
void bench_list_notify(void) {
    char parameter[32];
    for (int b = HALO2; b <= HALO3; b++)
        for (int k = 0; k < NUM_HALO_SIZES; k++) {
            snprintf(parameter, sizeof parameter, "%d", halo_sizes[k]);
            bench_row(names[b], parameter, "usec");
        }
    for (int k = 0; k < NUM_MESSAGE_SIZES; k++) {
        snprintf(parameter, sizeof parameter, "%d", message_sizes[k]);
        bench_row(names[PRODCONS], parameter, "msg/s");
    }
}

/* Runs `benchmark` for every series this binary has, on the ranks of `comm`. */
static int run_series(const struct bench_options *options, int which, MPI_Comm comm) {
    int failed = 0;
    for (int s = 0; s < 2; s++) {
        const enum style style = s == 0 ? FLUSH_SIGNAL : NOTIFY;
        const char *suffix = getenv("NBRMA_BENCH_SERIES_SUFFIX");
        char series[64];
        snprintf(series, sizeof series, "%s%s", s == 0 ? BENCH_BLOCKING_SERIES : "nbrma-notify",
                 suffix ? suffix : "");
#ifndef NBRMA_NONBLOCKING_SERIES
        if (style == NOTIFY) continue;
#endif
        bench_set_step(series, names[which]);
        failed |= which == PRODCONS ? prodcons_benchmark(options, comm, series, style)
                                    : halo_benchmark(options, which, comm, series, style);
    }
    return failed;
}

int bench_notify(const struct bench_options *options) {
    int rank, size;
    bench_start_group("notify", options, names, NUM_BENCHMARKS, &rank, &size);
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    oversubscribed = cores > 0 && size > cores;
    if (rank == 0) {
        printf("# notify: %d ranks on %ld cores, %s\n", size, cores,
               options->quick ? "quick" : "full");
        fflush(stdout);
    }
    int failed = 0;
    for (int b = 0; b < NUM_BENCHMARKS; b++) {
        if (!bench_selected(options, names[b])) continue;
        const int members = b == HALO3 ? 3 : 2;
        MPI_Comm comm;
        BENCH_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank < members ? 0 : MPI_UNDEFINED, rank, &comm));
        const int saved = oversubscribed;
        oversubscribed = cores > 0 && members > cores;
        if (comm != MPI_COMM_NULL) {
            failed |= run_series(options, b, comm);
            BENCH_MPI(MPI_Comm_free(&comm));
        }
        oversubscribed = saved;
        /* ranks left out wait here, sleeping between polls, not spinning on a core */
        MPI_Request request;
        BENCH_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &request));
        bench_wait_polling(&request, rank < members ? 0 : 1000);
    }
    return failed ? 3 : 0;
}
