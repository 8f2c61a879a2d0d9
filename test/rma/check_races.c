/*
 * check_races: labelled programs for nbrma's run-time RMA race checker (NBRMA_CHECK=races).
 *
 * `check_races <scenario>` sets NBRMA_CHECK=races before MPI_Init and runs one scenario of
 * the table below, or every RACE scenario (`check_races racy`) or every NONE scenario
 * (`check_races clean`), one after the other in one job. Each runs on a new window of 256
 * KiB a rank (MPI_Win_allocate, disp_unit 1; rank 0 is the target, ranks 1 and 2 the
 * origins), frees it, and then sums over the ranks what the MPI_T counter
 * "nbrma_check_races" (the races each process detected) grew by meanwhile. A RACE scenario
 * passes iff that sum is > 0, a NONE scenario iff it is 0; rank 0 prints each sum.
 *
 * Each label is what the MPI standard says (MPI 4.0 chapter 12, "Semantics and
 * Correctness", with the default window info: accumulate_ops=same_op_no_op,
 * accumulate_ordering=rar,raw,war,waw, unless the scenario gives another): a RACE scenario has two
 * conflicting accesses to the same bytes (at least one writing, not two accumulates of the same
 * predefined datatype with the same op or one MPI_NO_OP) that no MPI synchronization orders, in
 * every interleaving; a NONE scenario is correctly synchronized. The racy accesses only write bytes
 * of a window: no scenario crashes or hangs either way.
 *
 * `check_races <scenario|racy|clean> info` leaves NBRMA_CHECK as it is and turns the checker on
 * with the window info key nbrma_check=races on every window instead.
 *
 * A job with a thread scenario runs at MPI_THREAD_MULTIPLE (the thread scenarios SKIP where
 * MPI provides less), one without at MPI_THREAD_SINGLE. `check_races <scenario|racy|clean>
 * single` (also `... info single`) runs at MPI_THREAD_SINGLE whatever it runs (a group without
 * its thread scenarios; a thread scenario named SKIPs): there the entry points run a checked
 * window's calls on their one-thread path, which at MPI_THREAD_MULTIPLE leaves them to the
 * progress lock. A scenario refuses fewer ranks than it needs; more ranks take part in the
 * collectives only.
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#include "rmatest.h"

enum { NONE = 0, RACE = 1 };

/* `info` mode: every window asks for the checker with its info key */
static int by_info_key;

/* The info a window of the scenarios is made with: nbrma_check=races in `info` mode, and
 * key=value when key is not NULL; MPI_INFO_NULL for neither. */
static MPI_Info window_info(const char *key, const char *value) {
    MPI_Info info = MPI_INFO_NULL;
    if (!by_info_key && !key) return info;
    MPI_CHK(MPI_Info_create(&info));
    if (by_info_key) MPI_CHK(MPI_Info_set(info, "nbrma_check", "races"));
    if (key) MPI_CHK(MPI_Info_set(info, key, value));
    return info;
}
static void free_info(MPI_Info *info) {
    if (*info != MPI_INFO_NULL) MPI_CHK(MPI_Info_free(info));
}

typedef struct {
    const char *name;
    int min_ranks;
    int label;    /* RACE or NONE */
    int threaded; /* needs MPI_THREAD_MULTIPLE */
    void (*run)(void);
    const char *description;
    const char *info_key, *info_value; /* the window's info, if not the default */
} scenario_t;

/* ------------------------------------------------------------------ shared setup */
#define TARGET 0
#define LARGE (256 << 10) /* a large origin buffer's bytes (sampled by the checker) */
#define WIN_BYTES LARGE

static int me, np;
static MPI_Win win;

/* Origin and result buffers: they stay valid until the operations complete. Slot k of
 * obuf is written once before its operation, with a value naming the rank and the slot. */
static int64_t obuf[4], rbuf[4];
static int ibuf[2][2], iresult[2][2];
static unsigned ubuf[2];

static int64_t value(int slot) { return 1000 * me + slot + 1; }

/* MPI_Put of one int64_t (8 bytes) at displacement disp of rank 0, from obuf[slot]. */
static void put_at(MPI_Win w, MPI_Aint disp, int slot) {
    obuf[slot] = value(slot);
    MPI_CHK(MPI_Put(&obuf[slot], 1, MPI_INT64_T, TARGET, disp, 1, MPI_INT64_T, w));
}

/* The operations of the two-origin scenarios, on bytes [0,8) of rank 0 (or [8,16), [4,12)). */
static void op_put0(void) { put_at(win, 0, 0); }
static void op_put8(void) { put_at(win, 8, 0); }
static void op_put4(void) { put_at(win, 4, 0); }
static void op_get0(void) {
    MPI_CHK(MPI_Get(&rbuf[0], 1, MPI_INT64_T, TARGET, 0, 1, MPI_INT64_T, win));
}
static void acc_int(MPI_Op op) { /* 2 x MPI_INT at displacement 0 */
    ibuf[0][0] = me;
    ibuf[0][1] = me + 1;
    MPI_CHK(MPI_Accumulate(ibuf[0], 2, MPI_INT, TARGET, 0, 2, MPI_INT, op, win));
}
static void gacc_int(MPI_Op op) {
    ibuf[1][0] = me;
    ibuf[1][1] = me + 1;
    MPI_CHK(MPI_Get_accumulate(ibuf[1], 2, MPI_INT, iresult[1], 2, MPI_INT, TARGET, 0, 2, MPI_INT,
                               op, win));
}
static void op_acc_sum(void) { acc_int(MPI_SUM); }
static void op_acc_max(void) { acc_int(MPI_MAX); }
static void op_acc_sum_unsigned(void) {
    ubuf[0] = (unsigned)me;
    ubuf[1] = (unsigned)me + 1;
    MPI_CHK(MPI_Accumulate(ubuf, 2, MPI_UNSIGNED, TARGET, 0, 2, MPI_UNSIGNED, MPI_SUM, win));
}
static void op_gacc_sum(void) { gacc_int(MPI_SUM); }
static void op_gacc_no_op(void) { gacc_int(MPI_NO_OP); }
static void fop(MPI_Op op) {
    obuf[1] = value(1);
    MPI_CHK(MPI_Fetch_and_op(&obuf[1], &rbuf[1], MPI_INT64_T, TARGET, 0, op, win));
}
static void op_fop_sum(void) { fop(MPI_SUM); }
static void op_fop_replace(void) { fop(MPI_REPLACE); }

/* Rank 1 runs op1 and rank 2 op2, each in its own lock epoch of lock_type on rank 0. */
static void two_origins(int lock_type, void (*op1)(void), void (*op2)(void)) {
    if (me != 1 && me != 2) return;
    MPI_CHK(MPI_Win_lock(lock_type, TARGET, 0, win));
    (me == 1 ? op1 : op2)();
    MPI_CHK(MPI_Win_unlock(TARGET, win));
}

/* A group of the window holding one or two ranks (the second < 0: one). */
static MPI_Group group_of(int a, int b) {
    MPI_Group all, g;
    int ranks[2] = {a, b};
    MPI_CHK(MPI_Win_get_group(win, &all));
    MPI_CHK(MPI_Group_incl(all, b < 0 ? 1 : 2, ranks, &g));
    MPI_CHK(MPI_Group_free(&all));
    return g;
}

/* ------------------------------------------------------------------ scenarios */
/* passive target, one lock epoch per origin */
static void put_put_shared(void) { two_origins(MPI_LOCK_SHARED, op_put0, op_put0); }
static void put_put_exclusive(void) { two_origins(MPI_LOCK_EXCLUSIVE, op_put0, op_put0); }
static void put_put_disjoint(void) { two_origins(MPI_LOCK_SHARED, op_put0, op_put8); }
static void put_put_overlap(void) { two_origins(MPI_LOCK_SHARED, op_put0, op_put4); }
static void put_get_shared(void) { two_origins(MPI_LOCK_SHARED, op_put0, op_get0); }
static void get_get_shared(void) { two_origins(MPI_LOCK_SHARED, op_get0, op_get0); }
static void acc_same_op(void) { two_origins(MPI_LOCK_SHARED, op_acc_sum, op_acc_sum); }
static void acc_different_op(void) { two_origins(MPI_LOCK_SHARED, op_acc_sum, op_acc_max); }
static void acc_different_type(void) {
    two_origins(MPI_LOCK_SHARED, op_acc_sum, op_acc_sum_unsigned);
}
static void acc_and_no_op(void) { two_origins(MPI_LOCK_SHARED, op_acc_sum, op_gacc_no_op); }
static void put_acc(void) { two_origins(MPI_LOCK_SHARED, op_put0, op_acc_sum); }
static void get_acc_put(void) { two_origins(MPI_LOCK_SHARED, op_gacc_sum, op_put0); }
static void fop_same_op(void) { two_origins(MPI_LOCK_SHARED, op_fop_sum, op_fop_sum); }
static void fop_different_op(void) { two_origins(MPI_LOCK_SHARED, op_fop_sum, op_fop_replace); }

/* lock_all on every rank; rank 1 puts, then rank 2 puts the same bytes after a barrier.
 * flush_first: rank 1 flushes before the barrier (else after it); rput: rank 1 uses
 * MPI_Rput + MPI_Wait (local completion only); barrier: 0 leaves the barrier out, 1 is
 * MPI_Barrier, 2 MPI_Ibarrier + MPI_Wait, 3 MPI_Iallreduce + an MPI_Test loop, 4
 * MPI_Alltoallv, 5 MPI_Iscan + MPI_Wait (rank 2's sum needs rank 1's part). */
static void lock_all_sequence(int flush_first, int rput, int barrier) {
    MPI_CHK(MPI_Win_lock_all(0, win));
    if (me == 1) {
        if (rput) {
            MPI_Request req;
            obuf[0] = value(0);
            MPI_CHK(MPI_Rput(&obuf[0], 1, MPI_INT64_T, TARGET, 0, 1, MPI_INT64_T, win, &req));
            MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else {
            op_put0();
        }
        if (flush_first) MPI_CHK(MPI_Win_flush(TARGET, win));
    }
    if (barrier == 1) MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (barrier == 2) { /* a nonblocking barrier, completed by MPI_Wait */
        MPI_Request req;
        MPI_CHK(MPI_Ibarrier(MPI_COMM_WORLD, &req));
        MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    }
    if (barrier == 3) { /* a nonblocking allreduce, completed by an MPI_Test loop */
        MPI_Request req;
        int one = 1, sum = 0, done = 0;
        MPI_CHK(MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req));
        while (!done) MPI_CHK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
        CHECK(sum == np, "rank %d: MPI_Iallreduce summed %d, not %d", me, sum, np);
    }
    if (barrier == 4) { /* every rank sends its rank to every rank */
        int *counts = malloc(3 * sizeof(int) * (size_t)np), *at = counts + np, *got = at + np;
        for (int r = 0; r < np; ++r) counts[r] = 1, at[r] = r;
        int *mine = malloc(sizeof(int) * (size_t)np);
        for (int r = 0; r < np; ++r) mine[r] = me;
        MPI_CHK(MPI_Alltoallv(mine, counts, at, MPI_INT, got, counts, at, MPI_INT, MPI_COMM_WORLD));
        for (int r = 0; r < np; ++r)
            CHECK(got[r] == r, "rank %d: MPI_Alltoallv brought %d from rank %d", me, got[r], r);
        free(mine);
        free(counts);
    }
    if (barrier == 5) {
        MPI_Request req;
        int one = 1, sum = 0;
        MPI_CHK(MPI_Iscan(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req));
        MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK(sum == me + 1, "rank %d: MPI_Iscan summed %d, not %d", me, sum, me + 1);
    }
    if (me == 1 && !flush_first) MPI_CHK(MPI_Win_flush(TARGET, win));
    if (me == 2) {
        op_put0();
        MPI_CHK(MPI_Win_flush(TARGET, win));
    }
    MPI_CHK(MPI_Win_unlock_all(win));
}
static void lock_all_flush_barrier(void) { lock_all_sequence(1, 0, 1); }
static void lock_all_barrier_no_flush(void) { lock_all_sequence(0, 0, 1); }
static void lock_all_no_barrier(void) { lock_all_sequence(1, 0, 0); }
static void rput_wait_barrier(void) { lock_all_sequence(1, 1, 1); }
static void rput_wait_no_flush(void) { lock_all_sequence(0, 1, 1); }
static void lock_all_flush_ibarrier(void) { lock_all_sequence(1, 0, 2); }
static void lock_all_ibarrier_no_flush(void) { lock_all_sequence(0, 0, 2); }
static void lock_all_flush_iallreduce(void) { lock_all_sequence(1, 0, 3); }
static void lock_all_flush_alltoallv(void) { lock_all_sequence(1, 0, 4); }
static void lock_all_alltoallv_no_flush(void) { lock_all_sequence(0, 0, 4); }
static void lock_all_flush_iscan(void) { lock_all_sequence(1, 0, 5); }

/* lock_all on every rank; rank 1 puts the same bytes and flushes three times (a call that
 * repeats its last completed one), puts them once more and flushes before the barrier
 * (last_flushed) or after it; then rank 2 puts the same bytes. */
static void repeated_puts(int last_flushed) {
    MPI_CHK(MPI_Win_lock_all(0, win));
    if (me == 1) {
        for (int i = 0; i < 3; ++i) {
            op_put0();
            MPI_CHK(MPI_Win_flush(TARGET, win));
        }
        op_put0();
        if (last_flushed) MPI_CHK(MPI_Win_flush(TARGET, win));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 1 && !last_flushed) MPI_CHK(MPI_Win_flush(TARGET, win));
    if (me == 2) {
        op_put0();
        MPI_CHK(MPI_Win_flush(TARGET, win));
    }
    MPI_CHK(MPI_Win_unlock_all(win));
}
static void repeated_put_flushed(void) { repeated_puts(1); }
static void repeated_put_no_flush(void) { repeated_puts(0); }

/* Ranks 1 and 2 put the same bytes under an exclusive lock in turn (a barrier after each),
 * then both at once under lock_type: the second round's calls are the ones the entry
 * points run on their one-thread path (the window and the type looked up last), which
 * must check them as the general path checked the first round's. */
static void second_round(int lock_type) {
    for (int origin = 1; origin <= 2; ++origin) {
        if (me == origin) {
            MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
            op_put0();
            MPI_CHK(MPI_Win_unlock(TARGET, win));
        }
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    }
    two_origins(lock_type, op_put0, op_put0);
}
static void second_round_shared(void) { second_round(MPI_LOCK_SHARED); }
static void second_round_exclusive(void) { second_round(MPI_LOCK_EXCLUSIVE); }

/* lock_all on every rank; rank 1 puts and flushes, then sends a message to rank 2, which
 * puts the same bytes once it has received it (replace: both exchange a token with
 * MPI_Sendrecv_replace instead). */
static void message_sequence(int replace) {
    int token = me;
    MPI_CHK(MPI_Win_lock_all(0, win));
    if (me == 1) {
        op_put0();
        MPI_CHK(MPI_Win_flush(TARGET, win));
        if (replace)
            MPI_CHK(MPI_Sendrecv_replace(&token, 1, MPI_INT, 2, 0, 2, 0, MPI_COMM_WORLD,
                                         MPI_STATUS_IGNORE));
        else
            MPI_CHK(MPI_Send(&token, 1, MPI_INT, 2, 0, MPI_COMM_WORLD));
    } else if (me == 2) {
        if (replace)
            MPI_CHK(MPI_Sendrecv_replace(&token, 1, MPI_INT, 1, 0, 1, 0, MPI_COMM_WORLD,
                                         MPI_STATUS_IGNORE));
        else
            MPI_CHK(MPI_Recv(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(token == 1, "rank 2: the token from rank 1 is %d", token);
        op_put0();
        MPI_CHK(MPI_Win_flush(TARGET, win));
    }
    MPI_CHK(MPI_Win_unlock_all(win));
}
static void flush_send_recv(void) { message_sequence(0); }
static void flush_sendrecv_replace(void) { message_sequence(1); }

/* rank 1 alone, one exclusive lock epoch: a put and then an access of the same bytes */
static void same_origin(int flush, int accumulates) {
    if (me != 1) return;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
    accumulates ? op_acc_sum() : op_put0();
    if (flush) MPI_CHK(MPI_Win_flush(TARGET, win));
    accumulates ? op_gacc_sum() : op_get0();
    MPI_CHK(MPI_Win_unlock(TARGET, win));
}
/* rank 1 alone, one exclusive lock epoch: accumulates of two ops to the same bytes (in
 * order under the default accumulate_ordering, not under none or without waw) */
static void same_origin_acc_ops(void) {
    if (me != 1) return;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
    op_acc_sum();
    op_acc_max();
    MPI_CHK(MPI_Win_unlock(TARGET, win));
}
static void same_origin_no_flush(void) { same_origin(0, 0); }
static void same_origin_flush(void) { same_origin(1, 0); }
static void same_origin_acc(void) { same_origin(0, 1); }

/* active target */
static void fence_3(void) {
    MPI_CHK(MPI_Win_fence(0, win));
    if (me == 1 || me == 2) op_put0();
    MPI_CHK(MPI_Win_fence(0, win));
}
static void fence_separated(void) {
    MPI_CHK(MPI_Win_fence(0, win));
    if (me == 1) op_put0();
    MPI_CHK(MPI_Win_fence(0, win));
    if (me == 2) op_put0();
    MPI_CHK(MPI_Win_fence(0, win));
}

/* rank 0 exposes its window to {1, 2} at once (together) or to {1} and then to {2} */
static void pscw(int together) {
    if (me == 0) {
        MPI_Group g = group_of(1, together ? 2 : -1);
        MPI_CHK(MPI_Win_post(g, 0, win));
        MPI_CHK(MPI_Win_wait(win));
        MPI_CHK(MPI_Group_free(&g));
        if (!together) {
            g = group_of(2, -1);
            MPI_CHK(MPI_Win_post(g, 0, win));
            MPI_CHK(MPI_Win_wait(win));
            MPI_CHK(MPI_Group_free(&g));
        }
    } else if (me == 1 || me == 2) {
        MPI_Group g = group_of(TARGET, -1);
        MPI_CHK(MPI_Win_start(g, 0, win));
        op_put0();
        MPI_CHK(MPI_Win_complete(win));
        MPI_CHK(MPI_Group_free(&g));
    }
}
static void pscw_two_origins(void) { pscw(1); }
static void pscw_sequential(void) { pscw(0); }

/* a dynamic window: rank 0 attaches 64 bytes, ranks 1 and 2 put to them */
static void dynamic_put_put_locked(int lock_type) {
    MPI_Win dwin;
    MPI_Aint addr = 0;
    char *mem = NULL;
    MPI_Info info = window_info(NULL, NULL);
    MPI_CHK(MPI_Win_create_dynamic(info, MPI_COMM_WORLD, &dwin));
    free_info(&info);
    MPI_CHK(MPI_Win_set_errhandler(dwin, MPI_ERRORS_RETURN));
    if (me == TARGET) {
        mem = calloc(1, WIN_BYTES);
        MPI_CHK(MPI_Win_attach(dwin, mem, WIN_BYTES));
        MPI_CHK(MPI_Get_address(mem, &addr));
    }
    MPI_CHK(MPI_Bcast(&addr, 1, MPI_AINT, TARGET, MPI_COMM_WORLD));
    if (me == 1 || me == 2) {
        MPI_CHK(MPI_Win_lock(lock_type, TARGET, 0, dwin));
        put_at(dwin, addr, 0);
        MPI_CHK(MPI_Win_unlock(TARGET, dwin));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD)); /* the puts are done before the detach */
    if (me == TARGET) MPI_CHK(MPI_Win_detach(dwin, mem));
    MPI_CHK(MPI_Win_free(&dwin));
    free(mem);
}
static void dynamic_put_put(void) { dynamic_put_put_locked(MPI_LOCK_SHARED); }
static void dynamic_exclusive(void) { dynamic_put_put_locked(MPI_LOCK_EXCLUSIVE); }

/* two threads of rank 1 put the same bytes of rank 0 in one lock_all epoch */
typedef struct {
    int slot, flush;
    pthread_barrier_t *meet; /* NULL: none */
} thread_arg_t;

static void *thread_put(void *p) {
    const thread_arg_t *a = p;
    put_at(win, 0, a->slot);
    if (a->flush) MPI_CHK(MPI_Win_flush(TARGET, win));
    if (a->meet) pthread_barrier_wait(a->meet);
    return NULL;
}

/* concurrent: both threads put, meet at a pthread barrier, and only then is the epoch
 * flushed; else thread A puts and flushes, is joined, then thread B puts and flushes */
static void threads_put_put(int concurrent) {
    if (me != 1) return;
    pthread_t t[2];
    pthread_barrier_t meet;
    thread_arg_t args[2] = {{2, !concurrent, concurrent ? &meet : NULL},
                            {3, !concurrent, concurrent ? &meet : NULL}};
    if (concurrent) pthread_barrier_init(&meet, NULL, 2);
    MPI_CHK(MPI_Win_lock_all(0, win));
    if (concurrent) {
        for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, thread_put, &args[i]);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        MPI_CHK(MPI_Win_flush(TARGET, win));
    } else {
        for (int i = 0; i < 2; i++) {
            pthread_create(&t[i], NULL, thread_put, &args[i]);
            pthread_join(t[i], NULL);
        }
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    if (concurrent) pthread_barrier_destroy(&meet);
}
static void threads_no_flush(void) { threads_put_put(1); }
static void threads_flush_between(void) { threads_put_put(0); }

/* rank 1 puts in a shared lock epoch and unlocks; a barrier; rank 2 puts the same bytes in
 * an exclusive one */
static void put_after_unlock_shared_then_exclusive(void) {
    if (me == 1) {
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, TARGET, 0, win));
        op_put0();
        MPI_CHK(MPI_Win_unlock(TARGET, win));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 2) {
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
        op_put0();
        MPI_CHK(MPI_Win_unlock(TARGET, win));
    }
}

/* rank 1 alone, one exclusive epoch: its origin buffer changed before or after
 * MPI_Win_flush_local; a get's result buffer stored into before the flush; an Rput's
 * origin buffer changed after MPI_Wait (allowed: the request completed it) */
static void origin_change(int before_flush_local) {
    if (me != 1) return;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
    op_put0();
    if (before_flush_local) obuf[0] = value(3);
    MPI_CHK(MPI_Win_flush_local(TARGET, win));
    if (!before_flush_local) obuf[0] = value(3);
    MPI_CHK(MPI_Win_unlock(TARGET, win));
}
static void origin_changed_before_flush_local(void) { origin_change(1); }
static void origin_changed_after_flush_local(void) { origin_change(0); }

/* The same with a put of 200 bytes (more than a word, all of them kept), one byte in the
 * middle changed. */
static void mid_origin_change(int before_flush_local) {
    if (me != 1) return;
    unsigned char buffer[200];
    memset(buffer, 7, sizeof buffer);
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
    MPI_CHK(MPI_Put(buffer, 200, MPI_BYTE, TARGET, 0, 200, MPI_BYTE, win));
    if (before_flush_local) buffer[101] = 8;
    MPI_CHK(MPI_Win_flush_local(TARGET, win));
    if (!before_flush_local) buffer[101] = 8;
    MPI_CHK(MPI_Win_unlock(TARGET, win));
}
static void mid_origin_changed_before_flush_local(void) { mid_origin_change(1); }
static void mid_origin_changed_after_flush_local(void) { mid_origin_change(0); }

/* The same with a put of LARGE bytes from a buffer of its own mapping (the checker takes a
 * sample of a buffer this size, its ends among it), refilled before or after
 * MPI_Win_flush_local. */
static void *large_buffer(void) {
    void *buffer = mmap(NULL, LARGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(buffer != MAP_FAILED, "mmap of %d bytes failed", LARGE);
    if (buffer == MAP_FAILED) MPI_Abort(MPI_COMM_WORLD, 1);
    memset(buffer, me, LARGE);
    return buffer;
}
static void large_origin_change(int before_flush_local) {
    if (me != 1) return;
    unsigned char *buffer = large_buffer();
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
    MPI_CHK(MPI_Put(buffer, LARGE, MPI_BYTE, TARGET, 0, LARGE, MPI_BYTE, win));
    if (before_flush_local) memset(buffer, 0xa5, LARGE);
    MPI_CHK(MPI_Win_flush_local(TARGET, win));
    if (!before_flush_local) memset(buffer, 0xa5, LARGE);
    MPI_CHK(MPI_Win_unlock(TARGET, win));
    munmap(buffer, LARGE);
}
static void large_origin_refilled_before_flush_local(void) { large_origin_change(1); }
static void large_origin_refilled_after_flush_local(void) { large_origin_change(0); }

static void result_stored_before_flush(void) {
    if (me != 1) return;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
    MPI_CHK(MPI_Get(&rbuf[0], 1, MPI_INT64_T, TARGET, 0, 1, MPI_INT64_T, win));
    rbuf[0] = value(2);
    MPI_CHK(MPI_Win_flush(TARGET, win));
    MPI_CHK(MPI_Win_unlock(TARGET, win));
}

static void rput_wait_then_change(void) {
    if (me != 1) return;
    MPI_Request req;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
    obuf[0] = value(0);
    MPI_CHK(MPI_Rput(&obuf[0], 1, MPI_INT64_T, TARGET, 0, 1, MPI_INT64_T, win, &req));
    MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    obuf[0] = value(3);
    MPI_CHK(MPI_Win_unlock(TARGET, win));
}

/* ------------------------------------------------------------------ the table */
#define S(name, ranks, label, threaded, description) \
    { #name, ranks, label, threaded, name, description, NULL, NULL }
/* A scenario of function `run` on a window created with info key=value. */
#define SI(name, run, ranks, label, key, value, description) \
    { #name, ranks, label, 0, run, description, key, value }
static const scenario_t scenarios[] = {
    S(put_put_shared, 3, RACE, 0, "ranks 1, 2: shared lock, put the same 8 bytes"),
    S(put_put_exclusive, 3, NONE, 0, "ranks 1, 2: exclusive lock, put the same 8 bytes"),
    S(put_put_disjoint, 3, NONE, 0, "ranks 1, 2: shared lock, put bytes [0,8) and [8,16)"),
    S(put_get_shared, 3, RACE, 0, "shared lock: rank 1 puts, rank 2 gets the same 8 bytes"),
    S(get_get_shared, 3, NONE, 0, "shared lock: ranks 1, 2 get the same 8 bytes"),
    S(acc_same_op, 3, NONE, 0, "shared lock: 2 x MPI_INT MPI_SUM accumulates, same bytes"),
    S(acc_different_op, 3, RACE, 0, "shared lock: MPI_SUM vs MPI_MAX accumulate (MPI_INT)"),
    S(acc_different_type, 3, RACE, 0, "shared lock: MPI_SUM of 2 MPI_INT vs 2 MPI_UNSIGNED"),
    S(acc_and_no_op, 3, NONE, 0, "shared lock: accumulate MPI_SUM vs get_accumulate MPI_NO_OP"),
    S(put_acc, 3, RACE, 0, "shared lock: put vs accumulate MPI_SUM on the same bytes"),
    S(get_acc_put, 3, RACE, 0, "shared lock: get_accumulate MPI_SUM vs put"),
    S(fop_same_op, 3, NONE, 0, "shared lock: fetch_and_op MPI_SUM twice (MPI_INT64_T)"),
    S(fop_different_op, 3, RACE, 0, "shared lock: fetch_and_op MPI_SUM vs MPI_REPLACE"),
    S(lock_all_flush_barrier, 3, NONE, 0, "lock_all: rank 1 put, flush; barrier; rank 2 put"),
    S(lock_all_barrier_no_flush, 3, RACE, 0,
      "lock_all: rank 1 put; barrier; rank 1 flush, rank 2 put"),
    S(lock_all_no_barrier, 3, RACE, 0, "lock_all: ranks 1, 2 put, flush, no barrier"),
    S(repeated_put_flushed, 3, NONE, 0, "lock_all: rank 1 (put, flush) x 4; barrier; rank 2 put"),
    S(repeated_put_no_flush, 3, RACE, 0,
      "lock_all: rank 1 (put, flush) x 3, put; barrier; rank 1 flush, rank 2 put"),
    S(second_round_shared, 3, RACE, 0,
      "ranks 1, 2: exclusive lock, put, in turn; then both shared lock, put"),
    S(second_round_exclusive, 3, NONE, 0,
      "ranks 1, 2: exclusive lock, put, in turn; then both exclusive lock, put"),
    S(lock_all_flush_ibarrier, 3, NONE, 0,
      "lock_all: rank 1 put, flush; MPI_Ibarrier + MPI_Wait; rank 2 put"),
    S(lock_all_ibarrier_no_flush, 3, RACE, 0,
      "lock_all: rank 1 put; MPI_Ibarrier + MPI_Wait; rank 1 flush, rank 2 put"),
    S(lock_all_flush_iallreduce, 3, NONE, 0,
      "lock_all: rank 1 put, flush; MPI_Iallreduce + MPI_Test loop; rank 2 put"),
    S(lock_all_flush_alltoallv, 3, NONE, 0,
      "lock_all: rank 1 put, flush; MPI_Alltoallv; rank 2 put"),
    S(lock_all_alltoallv_no_flush, 3, RACE, 0,
      "lock_all: rank 1 put; MPI_Alltoallv; rank 1 flush, rank 2 put"),
    S(lock_all_flush_iscan, 3, NONE, 0,
      "lock_all: rank 1 put, flush; MPI_Iscan + MPI_Wait; rank 2 put"),
    S(same_origin_no_flush, 2, RACE, 0, "rank 1, one exclusive epoch: put, get same bytes"),
    S(same_origin_flush, 2, NONE, 0, "rank 1, one exclusive epoch: put, flush, get"),
    S(same_origin_acc, 2, NONE, 0, "rank 1, one epoch: accumulate MPI_SUM, get_accumulate MPI_SUM"),
    S(fence_3, 3, RACE, 0, "fence; ranks 1, 2 put the same bytes; fence"),
    S(fence_separated, 3, NONE, 0, "fence; rank 1 puts; fence; rank 2 puts; fence"),
    S(pscw_two_origins, 3, RACE, 0, "rank 0 posts to {1,2}; both put the same bytes"),
    S(pscw_sequential, 3, NONE, 0, "rank 0 posts to {1}, waits, then posts to {2}"),
    S(rput_wait_barrier, 3, NONE, 0, "lock_all: rank 1 rput, wait, flush; barrier; rank 2 put"),
    S(rput_wait_no_flush, 3, RACE, 0, "lock_all: rank 1 rput, wait; barrier; rank 2 put"),
    S(dynamic_put_put, 3, RACE, 0, "dynamic window: ranks 1, 2 put under shared locks"),
    S(dynamic_exclusive, 3, NONE, 0, "dynamic window: ranks 1, 2 put under exclusive locks"),
    S(threads_no_flush, 2, RACE, 1, "rank 1, lock_all: two threads put, meet, then flush"),
    S(threads_flush_between, 2, NONE, 1, "rank 1, lock_all: thread A put, flush; B put, flush"),
    S(put_after_unlock_shared_then_exclusive, 3, NONE, 0,
      "rank 1 shared lock, put, unlock; barrier; rank 2 exclusive lock, put"),
    S(put_put_overlap, 3, RACE, 0, "shared lock: puts of bytes [0,8) and [4,12)"),
    S(flush_send_recv, 3, NONE, 0, "lock_all: rank 1 put, flush, send; rank 2 recv, put"),
    S(flush_sendrecv_replace, 3, NONE, 0,
      "lock_all: rank 1 put, flush; ranks 1, 2 MPI_Sendrecv_replace; rank 2 put"),
    S(origin_changed_before_flush_local, 2, RACE, 0,
      "rank 1: put, origin buffer changed, then flush_local"),
    S(origin_changed_after_flush_local, 2, NONE, 0,
      "rank 1: put, flush_local, then origin buffer changed"),
    S(mid_origin_changed_before_flush_local, 2, RACE, 0,
      "rank 1: put of 200 bytes, byte 101 changed, then flush_local"),
    S(mid_origin_changed_after_flush_local, 2, NONE, 0,
      "rank 1: put of 200 bytes, flush_local, then byte 101 changed"),
    S(result_stored_before_flush, 2, RACE, 0, "rank 1: get, result buffer stored into, flush"),
    S(rput_wait_then_change, 2, NONE, 0, "rank 1: rput, wait, then origin buffer changed"),
    S(large_origin_refilled_before_flush_local, 2, RACE, 0,
      "rank 1: put of 256 KiB, origin buffer refilled, then flush_local"),
    S(large_origin_refilled_after_flush_local, 2, NONE, 0,
      "rank 1: put of 256 KiB, flush_local, then origin buffer refilled"),
    SI(acc_and_no_op_same_op, acc_and_no_op, 3, RACE, "accumulate_ops", "same_op",
       "accumulate_ops=same_op: accumulate MPI_SUM vs get_accumulate MPI_NO_OP"),
    S(same_origin_acc_ops, 2, NONE, 0, "rank 1, one epoch: accumulate MPI_SUM, then MPI_MAX"),
    SI(same_origin_acc_unordered, same_origin_acc_ops, 2, RACE, "accumulate_ordering", "none",
       "accumulate_ordering=none: rank 1, one epoch: accumulate MPI_SUM, then MPI_MAX"),
    SI(same_origin_acc_no_waw, same_origin_acc_ops, 2, RACE, "accumulate_ordering", "rar,raw,war",
       "accumulate_ordering=rar,raw,war: rank 1, one epoch: accumulate MPI_SUM, then MPI_MAX"),
};
#undef S
#define NSCENARIOS ((int)(sizeof scenarios / sizeof scenarios[0]))

/* ------------------------------------------------------------------ erroneous waits */
/* The checker's wait/test wrappers look at the requests before MPICH does: a request array
 * that is not there (erroneous) must still get MPICH's error, not a crash. */
static void null_request_arrays(void) {
    MPI_Request *volatile none = NULL; /* volatile: no compile-time warning of the NULL */
    int index = 0, flag = 0;
    CHECK(MPI_Waitall(2, none, MPI_STATUSES_IGNORE) != MPI_SUCCESS,
          "MPI_Waitall(2, NULL) succeeded");
    CHECK(MPI_Waitany(2, none, &index, MPI_STATUS_IGNORE) != MPI_SUCCESS,
          "MPI_Waitany(2, NULL) succeeded");
    CHECK(MPI_Testall(2, none, &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS,
          "MPI_Testall(2, NULL) succeeded");
}

/* ------------------------------------------------------------------ a freed origin buffer */
/* A large origin buffer unmapped before its call completed (erroneous) is not read by the
 * checker at the completion (no crash) and not counted. Only where the put copied the data
 * at the call (shared memory, inline progress): over UCX the transport may still read it.
 * Returns the races this process counted meanwhile (0 expected). */
static unsigned long long counter_read(void);
static unsigned long long unmapped_origin(int have_counter) {
    const char *transport = getenv("NBRMA_TRANSPORT"), *progress = getenv("NBRMA_PROGRESS");
    if ((transport && strcmp(transport, "shm") != 0) || getenv("NBRMA_VIRTUAL_NODES") ||
        (progress && strcmp(progress, "inline") != 0))
        return 0;
    const unsigned long long before = have_counter ? counter_read() : 0;
    char *base;
    MPI_Info info = window_info(NULL, NULL);
    MPI_CHK(MPI_Win_allocate(LARGE, 1, info, MPI_COMM_WORLD, &base, &win));
    free_info(&info);
    if (me == 1) {
        unsigned char *buffer = large_buffer();
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win));
        MPI_CHK(MPI_Put(buffer, LARGE, MPI_BYTE, TARGET, 0, LARGE, MPI_BYTE, win));
        CHECK(munmap(buffer, LARGE) == 0, "munmap failed");
        MPI_CHK(MPI_Win_unlock(TARGET, win));
    }
    MPI_CHK(MPI_Win_free(&win));
    return have_counter ? counter_read() - before : 0;
}

/* ------------------------------------------------------------------ the race counter */
static const char pvar_name[] = "nbrma_check_races";
static MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
static MPI_T_pvar_handle handle = MPI_T_PVAR_HANDLE_NULL;

/* Opens a handle on the counter (started unless continuous); 0 if there is none. */
static int counter_open(void) {
    int provided, index = -1, count = 0, continuous = 1;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return 0;
    if (MPI_T_pvar_get_index(pvar_name, MPI_T_PVAR_CLASS_COUNTER, &index) != MPI_SUCCESS) return 0;
    MPI_CHK(MPI_T_pvar_get_info(index, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                &continuous, NULL));
    MPI_CHK(MPI_T_pvar_session_create(&session));
    MPI_CHK(MPI_T_pvar_handle_alloc(session, index, NULL, &handle, &count));
    if (count != 1) return 0;
    if (!continuous) MPI_CHK(MPI_T_pvar_start(session, handle));
    return 1;
}

static unsigned long long counter_read(void) {
    unsigned long long v = 0;
    MPI_CHK(MPI_T_pvar_read(session, handle, &v));
    return v;
}

static void counter_close(void) {
    if (session != MPI_T_PVAR_SESSION_NULL) MPI_CHK(MPI_T_pvar_session_free(&session));
    MPI_T_finalize();
}

/* ------------------------------------------------------------------ main */
/* Marks the scenarios `check_races <name>` runs: one scenario by name, or a group, "racy"
 * (every RACE scenario) or "clean" (every NONE scenario). 0 if the name is neither. */
static int select_scenarios(const char *name, int chosen[]) {
    int n = 0;
    for (int i = 0; name && i < NSCENARIOS; i++) {
        chosen[i] = rt_scenario_chosen(name, scenarios[i].name, scenarios[i].label == RACE);
        n += chosen[i];
    }
    return n;
}

/* Runs scenario s on a new window and checks the races the ranks counted meanwhile
 * against its label. */
static void run_scenario(const scenario_t *s, int have_counter) {
    char *base;
    const unsigned long long before = have_counter ? counter_read() : 0;
    MPI_Info info = window_info(s->info_key, s->info_value);
    MPI_CHK(MPI_Win_allocate(WIN_BYTES, 1, info, MPI_COMM_WORLD, &base, &win));
    free_info(&info);
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    s->run();
    MPI_CHK(MPI_Win_free(&win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    unsigned long long races = have_counter ? counter_read() - before : 0, total = 0;
    MPI_CHK(MPI_Allreduce(&races, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (me != 0) return;
    printf("scenario %-40s %s, races found: %llu\n", s->name, s->label == RACE ? "RACE" : "NONE",
           total);
    if (s->label == RACE && total == 0) {
        fprintf(stderr, "scenario %s: expected a race, the checker found none\n", s->name);
        rt_errs++;
    } else if (s->label == NONE && total != 0) {
        fprintf(stderr, "scenario %s: expected no race, the checker reported %llu\n", s->name,
                total);
        rt_errs++;
    }
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : NULL;
    int chosen[NSCENARIOS], threaded = 0, ranks = 0;
    const int n = select_scenarios(name, chosen);
    int single = 0;
    for (int i = 2; i < argc; i++) {
        single |= strcmp(argv[i], "single") == 0;
        by_info_key |= strcmp(argv[i], "info") == 0;
    }
    for (int i = 0; i < NSCENARIOS; i++) {
        if (single && scenarios[i].threaded && strcmp(name, scenarios[i].name) != 0)
            chosen[i] = 0; /* (a group's thread scenarios left out; one named SKIPs) */
        if (!chosen[i]) continue;
        threaded |= scenarios[i].threaded;
        if (scenarios[i].min_ranks > ranks) ranks = scenarios[i].min_ranks;
    }
    int provided = MPI_THREAD_SINGLE;
    if (single) threaded = 0;
    if (!by_info_key) setenv("NBRMA_CHECK", "races", 1);
    MPI_Init_thread(&argc, &argv, threaded ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    if (n == 0) {
        if (me == 0) {
            fprintf(stderr, "check_races: unknown scenario \"%s\"; give racy, clean, or one of:\n",
                    name ? name : "(none given)");
            for (int i = 0; i < NSCENARIOS; i++)
                fprintf(stderr, "  %-40s %d %s  %s\n", scenarios[i].name, scenarios[i].min_ranks,
                        scenarios[i].label == RACE ? "RACE" : "NONE", scenarios[i].description);
            rt_errs++;
        }
        return rt_finalize();
    }
    if (np < ranks) {
        if (me == 0) {
            fprintf(stderr, "check_races %s needs at least %d ranks, got %d\n", name, ranks, np);
            rt_errs++;
        }
        return rt_finalize();
    }

    null_request_arrays();
    const int have_counter = counter_open();
    int all_have = 0;
    MPI_CHK(MPI_Allreduce(&have_counter, &all_have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (!all_have) {
        if (me == 0) {
            fprintf(stderr, "check_races: pvar %s not found\n", pvar_name);
            rt_errs++;
        }
    } else {
        const unsigned long long unmapped = unmapped_origin(have_counter);
        CHECK(unmapped == 0,
              "rank %d counted %llu races for an origin buffer unmapped before "
              "the unlock",
              me, unmapped);
        for (int i = 0; i < NSCENARIOS; i++) {
            if (!chosen[i]) continue;
            if (scenarios[i].threaded && provided < MPI_THREAD_MULTIPLE) {
                if (me == 0)
                    printf("SKIP: scenario %s needs MPI_THREAD_MULTIPLE\n", scenarios[i].name);
                continue;
            }
            run_scenario(&scenarios[i], have_counter);
        }
    }
    counter_close();
    return rt_finalize();
}
