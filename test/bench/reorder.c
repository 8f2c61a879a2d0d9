/*
 * reorder.c — out-of-order epoch progression with the reorder info keys (SC14 §VI-B,
 * §VIII-A2, Figs 7–11), group "reorder" of nbrma-bench (see bench.h). Needs 3 ranks.
 *
 * Every scenario has one rank that opens two epochs back to back (the second opened
 * after the first is closed), a late peer in the first one (it sleeps D = 1000 us ×
 * --scale with bench_sleep before its part) and an on-time peer in the second; every
 * epoch carries one 1 MiB put. Reported at the rank with both epochs, in usec from the
 * opening of its first epoch, averaged over the iterations (100; --quick 20; a comment
 * line gives the median, minimum and maximum):
 *   second      until its second (later) epoch completed
 *   cumulative  until both completed
 * Scenarios (rank 0 always has both epochs; the late peer is rank 2, which shares a
 * core with rank 0 under -bind-to core and sleeps while late; rank 1 has a core):
 *   aaar_gats  (Fig 7, key access_after_access_reorder) origin 0: access epoch toward
 *              target 2 (posts late), then toward target 1.
 *   aaar_lock  (Fig 8, same key) with three ranks: O0 = rank 1 locks T0 = rank 2
 *              exclusively, puts, flushes (so even a lazily acquired lock is held),
 *              tells O1 = rank 0 (zero-byte message) and holds the lock D longer
 *              (sleeping); O1 then locks T0 and, in a second epoch, T1 =
 *              rank 1 (O0's own window: passive target needs nothing from O0). The
 *              paper has four processes; T1 = O0 keeps it at three.
 *   aaer       (Fig 9, key access_after_exposure_reorder) P2 = rank 0 exposes its window
 *              to P0 = rank 2 (late origin), then as an origin puts to P1 = rank 1.
 *   eaer       (Fig 10, key exposure_after_exposure_reorder) target 0 exposes to O0 =
 *              rank 2 (late), then to O1 = rank 1.
 *   eaar       (Fig 11, key exposure_after_access_reorder) P2 = rank 0 accesses P0 =
 *              rank 2 (posts late), then exposes its window to P1 = rank 1.
 * The second epoch's data goes to memory disjoint from the first's, as the keys
 * require.
 *
 * MPICH 4.0.2 (ch4:ucx) intermittently hangs in aaar_gats: the origin blocks for ever
 * in MPI_Win_start toward target 2 although target 2 has posted, when target 1's post
 * (for the origin's next epoch, a legal early post) arrived first (seen in 4 of 6
 * runs of 20 iterations). So in the mpich build only, target 1 posts after a
 * zero-byte message the origin sends once its first epoch is complete; in a blocking
 * series the second epoch cannot start earlier anyway, so the message only adds its
 * latency (a few us) to "second". The nbrma builds run the scenario unchanged.
 *
 * Series: the blocking calls (mpich, nbrma-blocking; the epochs are strictly one after
 * the other); "nbrma-nonblocking": rank 0 opens and closes both epochs with the
 * MPIX_Win_i* twins and waits for both requests with MPI_Waitany (so each completion
 * time is seen as it happens), reorder keys off: by default (§VI-B) the second epoch
 * may not activate before the first completes; "nbrma-nonblocking+<key>" the same on a
 * window created with the scenario's key set to "true" (+aaar, +aaer, +eaer, +eaar):
 * the second epoch may proceed while the first waits for its late peer. The peers use
 * blocking calls in every series. The mpich binary runs the blocking series only.
 *
 * Data checks: every put carries a byte pattern that changes with the iteration, checked
 * by its target once the epoch is over (passive targets after the iteration, under a
 * shared lock of their own window); a CHECK line per scenario and series.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MIB (1024 * 1024)

/* rank 2, the late peer sharing rank 0's core, sleeps this long between polls. */
#define LATE_POLL_USEC 20.0

enum style { BLOCKING, NONBLOCKING };
enum scenario { AAAR_GATS, AAAR_LOCK, AAER, EAER, EAAR, NUM_SCENARIOS };

static const char *const scenario_names[] = {"aaar_gats", "aaar_lock", "aaer", "eaer", "eaar"};
#ifdef NBRMA_NONBLOCKING_SERIES
static const char *const scenario_keys[] = {
    "access_after_access_reorder", "access_after_access_reorder", "access_after_exposure_reorder",
    "exposure_after_exposure_reorder", "exposure_after_access_reorder"};
static const char *const key_suffix[] = {"+aaar", "+aaar", "+aaer", "+eaer", "+eaar"};
#endif
static const char *const rows[] = {"second", "cumulative"};

struct run {
    const char *series;
    enum style style;
    int rank;
    int iterations, warmup;
    double budget, delay;
    MPI_Win win; /* 2 MiB a rank */
    unsigned char *base;
    unsigned char *buffer[2]; /* origin buffers of the first and second epoch */
    MPI_Group group_of[3];
    long mismatches;
};

/* Rank 0's two epochs of one iteration. */
struct epochs {
    MPI_Request opening[2], closing[2];
    double t_closed[2]; /* when each closing call returned */
};

/* Rank 0, after opening/closing both epochs: the completion times of the two closing
 * requests (already-complete blocking ones count as done when their call returned). */
static void completion_times(struct epochs *e, double done[2]) {
    for (int k = 0; k < 2; k++)
        if (e->closing[k] == MPI_REQUEST_NULL) done[k] = e->t_closed[k];
    for (;;) {
        int index;
        BENCH_MPI(MPI_Waitany(2, e->closing, &index, MPI_STATUS_IGNORE));
        if (index == MPI_UNDEFINED) break;
        done[index] = MPI_Wtime();
    }
}

/* The put of epoch k (0 or 1) of iteration `it` from rank 0's buffers. */
static void put_epoch(struct run *r, int k, int it, int target, MPI_Aint disp) {
    memset(r->buffer[k], bench_stamp(it, k), MIB);
    BENCH_MPI(MPI_Put(r->buffer[k], MIB, MPI_BYTE, target, disp, MIB, MPI_BYTE, r->win));
}

enum epoch_kind { ACCESS, LOCK, EXPOSURE };

/* Rank 0's epoch k (0 or 1) with `peer`, in the run's style: an access epoch (start, put
 * at `disp`, complete), a lock epoch (exclusive lock, put at `disp`, unlock) or an
 * exposure epoch (post, wait). */
static void rank0_epoch(struct run *r, struct epochs *e, int k, enum epoch_kind kind, int peer,
                        MPI_Aint disp, int it) {
    int nonblocking = r->style == NONBLOCKING;
    MPI_Request *opening = &e->opening[k], *closing = &e->closing[k];
    switch (kind) {
        case ACCESS:
            BENCH_SYNC(nonblocking, opening, MPI_Win_start(r->group_of[peer], 0, r->win),
                       MPIX_Win_istart(r->group_of[peer], 0, r->win, opening));
            put_epoch(r, k, it, peer, disp);
            BENCH_SYNC(nonblocking, closing, MPI_Win_complete(r->win),
                       MPIX_Win_icomplete(r->win, closing));
            break;
        case LOCK:
            BENCH_SYNC(nonblocking, opening, MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, r->win),
                       MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, peer, 0, r->win, opening));
            put_epoch(r, k, it, peer, disp);
            BENCH_SYNC(nonblocking, closing, MPI_Win_unlock(peer, r->win),
                       MPIX_Win_iunlock(peer, r->win, closing));
            break;
        case EXPOSURE:
            BENCH_SYNC(nonblocking, opening, MPI_Win_post(r->group_of[peer], 0, r->win),
                       MPIX_Win_ipost(r->group_of[peer], 0, r->win, opening));
            BENCH_SYNC(nonblocking, closing, MPI_Win_wait(r->win), MPIX_Win_iwait(r->win, closing));
            break;
    }
    e->t_closed[k] = MPI_Wtime();
}

/* A peer's exposure epoch for rank 0 (post, wait); checks its first MiB holds `salt`'s
 * stamp. */
static void peer_exposure(struct run *r, int it, int salt) {
    BENCH_MPI(MPI_Win_post(r->group_of[0], 0, r->win));
    BENCH_MPI(MPI_Win_wait(r->win));
    if (!bench_all_equal(r->base, MIB, bench_stamp(it, salt))) r->mismatches++;
}

/* A peer's access epoch toward rank 0, `late_usec` late: one put of `salt`'s stamp at
 * `disp`. */
static void peer_access(struct run *r, int it, int salt, MPI_Aint disp, double late_usec) {
    memset(r->buffer[0], bench_stamp(it, salt), MIB);
    bench_sleep(late_usec);
    BENCH_MPI(MPI_Win_start(r->group_of[0], 0, r->win));
    BENCH_MPI(MPI_Put(r->buffer[0], MIB, MPI_BYTE, 0, disp, MIB, MPI_BYTE, r->win));
    BENCH_MPI(MPI_Win_complete(r->win));
}

/* One iteration of a scenario. Rank 0 returns its two measurements (usec). */
static void iteration(struct run *r, enum scenario s, int it, double out[2]) {
    const int late = 2, peer = 1;
    struct epochs e = {.opening = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
    double done[2] = {0, 0}, t0 = 0;
    switch (s) {
        case AAAR_GATS:
            if (r->rank == 0) {
                t0 = MPI_Wtime();
                rank0_epoch(r, &e, 0, ACCESS, late, 0, it);
#ifndef NBRMA_NONBLOCKING_SERIES
                /* MPICH 4.0.2 workaround, see the header: target 1 posts only now. */
                BENCH_MPI(MPI_Send(NULL, 0, MPI_BYTE, peer, it, MPI_COMM_WORLD));
#endif
                rank0_epoch(r, &e, 1, ACCESS, peer, 0, it);
            } else {
                if (r->rank == late) bench_sleep(r->delay);
#ifndef NBRMA_NONBLOCKING_SERIES
                if (r->rank == peer)
                    BENCH_MPI(
                        MPI_Recv(NULL, 0, MPI_BYTE, 0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
#endif
                peer_exposure(r, it, r->rank == late ? 0 : 1);
            }
            break;
        case AAAR_LOCK: /* O1 = 0, O0 = 1 (also T1), T0 = 2 */
            if (r->rank == 0) {
                BENCH_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                t0 = MPI_Wtime();
                rank0_epoch(r, &e, 0, LOCK, 2, MIB, it);
                rank0_epoch(r, &e, 1, LOCK, 1, 0, it);
            } else if (r->rank == 1) {
                memset(r->buffer[0], bench_stamp(it, 7), MIB);
                BENCH_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 2, 0, r->win));
                BENCH_MPI(MPI_Put(r->buffer[0], MIB, MPI_BYTE, 2, 0, MIB, MPI_BYTE, r->win));
                BENCH_MPI(MPI_Win_flush(2, r->win));
                BENCH_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, it, MPI_COMM_WORLD));
                bench_sleep(r->delay);
                BENCH_MPI(MPI_Win_unlock(2, r->win));
            }
            break;
        case AAER: /* P2 = 0: exposure to late origin 2, then access to target 1 */
            if (r->rank == 0) {
                t0 = MPI_Wtime();
                rank0_epoch(r, &e, 0, EXPOSURE, late, 0, it);
                rank0_epoch(r, &e, 1, ACCESS, peer, 0, it);
            } else if (r->rank == late) {
                peer_access(r, it, 0, 0, r->delay);
            } else {
                peer_exposure(r, it, 1);
            }
            break;
        case EAER: /* target 0: exposure to late origin 2 (first MiB), then to 1 (second) */
            if (r->rank == 0) {
                t0 = MPI_Wtime();
                rank0_epoch(r, &e, 0, EXPOSURE, late, 0, it);
                rank0_epoch(r, &e, 1, EXPOSURE, peer, 0, it);
            } else if (r->rank == late) {
                peer_access(r, it, 0, 0, r->delay);
            } else {
                peer_access(r, it, 1, MIB, 0);
            }
            break;
        case EAAR: /* P2 = 0: access to late target 2, then exposure to origin 1 */
            if (r->rank == 0) {
                t0 = MPI_Wtime();
                rank0_epoch(r, &e, 0, ACCESS, late, 0, it);
                rank0_epoch(r, &e, 1, EXPOSURE, peer, 0, it);
            } else if (r->rank == late) {
                bench_sleep(r->delay);
                peer_exposure(r, it, 0);
            } else {
                peer_access(r, it, 1, MIB, 0);
            }
            break;
        default:
            break;
    }
    if (r->rank != 0) return;
    completion_times(&e, done);
    bench_finish(&e.opening[0]);
    bench_finish(&e.opening[1]);
    out[0] = (done[1] - t0) * 1e6;
    out[1] = ((done[0] > done[1] ? done[0] : done[1]) - t0) * 1e6;
    /* Rank 0's own exposures: check what its origins put. */
    if (s == AAER && !bench_all_equal(r->base, MIB, bench_stamp(it, 0))) r->mismatches++;
    if (s == EAER && (!bench_all_equal(r->base, MIB, bench_stamp(it, 0)) ||
                      !bench_all_equal(r->base + MIB, MIB, bench_stamp(it, 1))))
        r->mismatches++;
    if (s == EAAR && !bench_all_equal(r->base + MIB, MIB, bench_stamp(it, 1))) r->mismatches++;
}

/* Passive targets of aaar_lock, after everyone passed the iteration's end. */
static void check_lock_targets(struct run *r, int it) {
    if (r->rank == 0) return;
    BENCH_MPI(MPI_Win_lock(MPI_LOCK_SHARED, r->rank, 0, r->win));
    if (r->rank == 2 && (!bench_all_equal(r->base, MIB, bench_stamp(it, 7)) ||
                         !bench_all_equal(r->base + MIB, MIB, bench_stamp(it, 0))))
        r->mismatches++;
    if (r->rank == 1 && !bench_all_equal(r->base, MIB, bench_stamp(it, 1))) r->mismatches++;
    BENCH_MPI(MPI_Win_unlock(r->rank, r->win));
}

/* Collective: one scenario in one series, on a window created with `key` set (or not). */
static void run_scenario(struct run *r, enum scenario s, const char *key) {
    const char *name = scenario_names[s];
    bench_set_step(r->series, name);
    bench_win_allocate(2 * MIB, 1, key, MPI_COMM_WORLD, &r->base, &r->win);
    memset(r->base, 0, 2 * MIB);
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));

    double *samples = bench_malloc("reorder", 2 * (size_t)r->iterations * sizeof(double));
    struct bench_loop l = {
        .total = r->warmup + r->iterations, .warmup = r->warmup, .budget = r->budget};
    double poll_usec = r->rank == 2 ? LATE_POLL_USEC : 0;
    while (bench_loop_next(&l, r->rank, poll_usec)) {
        double out[2] = {0, 0};
        iteration(r, s, l.i, out);
        if (s == AAAR_LOCK) {
            bench_boundary(1, poll_usec);
            check_lock_targets(r, l.i);
        }
        int index = bench_loop_slot(&l, r->iterations);
        if (index >= 0) {
            samples[index] = out[0];
            samples[r->iterations + index] = out[1];
        }
    }
    int timed = bench_loop_timed(&l);
    long bad = 0;
    BENCH_MPI(MPI_Reduce(&r->mismatches, &bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    r->mismatches = 0;
    if (r->rank == 0) {
        bench_check(r->series, name, bad == 0);
        if (bad) fprintf(stderr, "reorder: %s %s: %ld data mismatches\n", r->series, name, bad);
        printf("# %s %s: %d timed iterations, D = %.0f us%s%s\n", r->series, name, timed, r->delay,
               key ? ", window info " : "", key ? key : "");
        bench_report_samples(r->series, name, rows, 2, samples, r->iterations, timed);
    }
    free(samples);
    bench_set_step(r->series, "MPI_Win_free");
    BENCH_MPI(MPI_Win_free(&r->win));
    if (bad) r->mismatches = -1; /* remembered for the exit status */
}

int bench_reorder(const struct bench_options *options) {
    int rank, size;
    bench_start_group("reorder", options, scenario_names, NUM_SCENARIOS, &rank, &size);
    struct run r;
    memset(&r, 0, sizeof r);
    r.rank = rank;
    r.iterations = options->iterations > 0 ? options->iterations : options->quick ? 20 : 100;
    r.warmup = options->iterations > 0 ? 1 : 3;
    r.budget = options->iterations > 0 ? 1e9 : options->quick ? 1.5 : 20.0;
    r.delay = 1000.0 * (options->scale > 0 ? options->scale : 1.0);
    r.buffer[0] = bench_malloc("reorder", MIB);
    r.buffer[1] = bench_malloc("reorder", MIB);
    MPI_Group world_group;
    BENCH_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    for (int k = 0; k < 3; k++) BENCH_MPI(MPI_Group_incl(world_group, 1, &k, &r.group_of[k]));
    if (rank == 0) {
        printf("# reorder: %d ranks, D = %.0f us, %s\n", size, r.delay,
               options->quick ? "quick" : "full");
        fflush(stdout);
    }
    int failed = 0;
    for (int s = 0; s < NUM_SCENARIOS; s++) {
        if (!bench_selected(options, scenario_names[s])) continue;
        r.series = BENCH_BLOCKING_SERIES;
        r.style = BLOCKING;
        run_scenario(&r, (enum scenario)s, NULL);
        failed |= r.mismatches != 0;
#ifdef NBRMA_NONBLOCKING_SERIES
        r.mismatches = 0;
        r.series = "nbrma-nonblocking";
        r.style = NONBLOCKING;
        run_scenario(&r, (enum scenario)s, NULL);
        failed |= r.mismatches != 0;
        char series[64];
        snprintf(series, sizeof series, "nbrma-nonblocking%s", key_suffix[s]);
        r.mismatches = 0;
        r.series = series;
        run_scenario(&r, (enum scenario)s, scenario_keys[s]);
        failed |= r.mismatches != 0;
#endif
        r.mismatches = 0;
    }
    for (int k = 0; k < 3; k++) BENCH_MPI(MPI_Group_free(&r.group_of[k]));
    BENCH_MPI(MPI_Group_free(&world_group));
    free(r.buffer[0]);
    free(r.buffer[1]);
    int any_failed = 0;
    BENCH_MPI(MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    return any_failed ? 3 : 0;
}

void bench_list_reorder(void) {
    for (int s = 0; s < NUM_SCENARIOS; s++)
        for (int k = 0; k < 2; k++) bench_row(scenario_names[s], rows[k], "usec");
}
