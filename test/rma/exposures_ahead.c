/*
 * exposures_ahead: targets that open several exposure epochs before any origin opens
 * its access epochs, and an origin with several access epochs pending at once toward
 * different groups (the examples of the SC14 nonblocking-epochs paper).
 *
 * Part A  (ranks 0 and 1): the target makes 5 exposures toward rank 0 (MPIX_Win_ipost +
 *         MPIX_Win_iwait, five times) and only then tells the origin so with a two-sided
 *         message; the origin, after receiving it, runs 5 blocking start/put/complete
 *         epochs. The target's first iwait must not complete before the origin started
 *         (nbrma only); after MPI_Waitall every epoch's data is there.
 * Part A2 (all 3): the same with two targets (ranks 1 and 2, each 5 exposures ahead)
 *         and a nonblocking origin: istart(group {2,1}) / puts / icomplete five times,
 *         all pending, one MPI_Waitall.
 * Part B  (all 3): P0 opens six access epochs in a row toward T0..T5, with P1 in T0, T1,
 *         T2, T3, T5 and P2 in T4, T5 (MPIX_Win_istart / ops / MPIX_Win_icomplete, all
 *         pending at once, one MPI_Waitall); P1 posts its 5 exposures and P2 its 2 early.
 *         Run twice: B1 with the exposures known to be made before P0 starts (message),
 *         B2 with no message (any interleaving).
 * Data: in epoch e toward target t the origin puts a value naming (e, t) into slot e and
 * into slot LAST, accumulates 1 << e into slot MASK, and gets the slot written by its
 * previous epoch toward t (so epoch e must see that epoch's data). Every target checks
 * all its slots: the epochs it was in, in the right order, each exactly once.
 *
 * Without nbrma (-DNO_NBRMA) the stand-ins block, so the targets send their message
 * before posting instead of after (the epochs then match one by one). And MPICH 4.0.2
 * counts post notices per window, not per origin (MPIDIG win_post_proc), so a post that
 * arrives early for a later epoch satisfies a start toward another group and part B
 * hangs now and then; under NO_NBRMA the origin of part B therefore sends each target a
 * go-ahead message before each epoch that includes it, and the target posts only then.
 *
 * Usage: exposures_ahead [create|allocate|shared|dynamic]...   (3 processes)
 */
#include "rmatest.h"

#define NEPOCH_MAX 6
#define WIN_INTS 16
#define LAST 8
#define MASK 9
#define NOTICE_TAG 77
#define GO_TAG 78

static int me, np;
static MPI_Group wgroup;
static int obuf[NEPOCH_MAX][3], gbuf[NEPOCH_MAX][3], abuf[NEPOCH_MAX];

static int value(int part, int e, int t)
{
    return 1000 * (part + 1) + 10 * e + t;
}

static MPI_Group make_group(int n, const int *ranks)
{
    MPI_Group g;
    MPI_CHK(MPI_Group_incl(wgroup, n, ranks, &g));
    return g;
}

static void zero_window(rt_win_t *w)
{
    rt_lock_self(w);
    memset(w->base, 0, sizeof(int) * WIN_INTS);
    rt_unlock_self(w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* the operations of epoch e toward target t; prev = slot written by the previous epoch
 * toward t (or -1: none, read slot LAST - 1, which stays 0) */
static void epoch_ops(rt_win_t *w, int part, int e, int t, int prev)
{
    obuf[e][t] = value(part, e, t);
    abuf[e] = 1 << e;
    gbuf[e][t] = -1;
    MPI_CHK(MPI_Put(&obuf[e][t], 1, MPI_INT, t, rt_disp(w, t, e), 1, MPI_INT, w->win));
    MPI_CHK(MPI_Put(&obuf[e][t], 1, MPI_INT, t, rt_disp(w, t, LAST), 1, MPI_INT, w->win));
    MPI_CHK(MPI_Accumulate(&abuf[e], 1, MPI_INT, t, rt_disp(w, t, MASK), 1, MPI_INT, MPI_SUM,
                           w->win));
    MPI_CHK(MPI_Get(&gbuf[e][t], 1, MPI_INT, t, rt_disp(w, t, prev >= 0 ? prev : LAST - 1), 1,
                    MPI_INT, w->win));
}

/* origin: check what the gets of the epochs toward t returned */
static void check_gets(const char *part_name, int part, int nep, const int *epochs, int t)
{
    int prev = -1;
    for (int i = 0; i < nep; i++) {
        int e = epochs[i];
        int exp = prev >= 0 ? value(part, prev, t) : 0;
        CHECK(gbuf[e][t] == exp,
              "%s: epoch %d toward %d read %d from the previous epoch's slot, expected %d",
              part_name, e, t, gbuf[e][t], exp);
        prev = e;
    }
}

/* target: check the whole window after the nep epochs (listed) that included this rank */
static void check_target(rt_win_t *w, const char *part_name, int part, int nep,
                         const int *epochs)
{
    const int *mem = (const int *) w->base;
    int mask = 0, last = 0;
    for (int k = 0; k < WIN_INTS; k++) {
        int exp = 0;
        for (int i = 0; i < nep; i++)
            if (epochs[i] == k)
                exp = value(part, k, me);
        if (k == LAST || k == MASK)
            continue;
        CHECK(mem[k] == exp, "%s: target %d slot %d = %d, expected %d", part_name, me, k,
              mem[k], exp);
    }
    for (int i = 0; i < nep; i++) {
        mask += 1 << epochs[i];
        last = value(part, epochs[i], me);
    }
    CHECK(mem[MASK] == mask, "%s: target %d mask slot = %#x, expected %#x (epochs seen)",
          part_name, me, (unsigned) mem[MASK], (unsigned) mask);
    CHECK(mem[LAST] == last, "%s: target %d last slot = %d, expected %d (epoch order)",
          part_name, me, mem[LAST], last);
}

/* target side: nexp exposures toward rank 0, made before the origin starts if
 * notify; then wait for them all and check the window. go_ahead: (NO_NBRMA only) wait
 * for the origin's go-ahead before each post. */
static void target_ahead(rt_win_t *w, const char *part_name, int part, int nexp,
                         const int *epochs, int notify, int go_ahead)
{
    MPI_Request reqs[2 * NEPOCH_MAX];
    int zero = 0, token = part;
    MPI_Group g0 = make_group(1, &zero);
#ifdef NO_NBRMA
    if (notify) /* the blocking stand-ins cannot run ahead */
        MPI_CHK(MPI_Send(&token, 1, MPI_INT, 0, NOTICE_TAG, MPI_COMM_WORLD));
#endif
    for (int i = 0; i < nexp; i++) {
#ifdef NO_NBRMA
        if (go_ahead)
            MPI_CHK(MPI_Recv(&token, 1, MPI_INT, 0, GO_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
#else
        (void) go_ahead;
#endif
        MPI_CHK(MPIX_Win_ipost(g0, 0, w->win, &reqs[2 * i]));
        MPI_CHK(MPIX_Win_iwait(w->win, &reqs[2 * i + 1]));
    }
#ifndef NO_NBRMA
    if (notify) {
        /* the origin has not started: no exposure can be over */
        int flag = 0;
        for (int p = 0; p < 100 && !flag; p++)
            MPI_CHK(MPI_Test(&reqs[1], &flag, MPI_STATUS_IGNORE));
        CHECK(!flag, "%s: target %d's first iwait completed before the origin started",
              part_name, me);
        MPI_CHK(MPI_Send(&token, 1, MPI_INT, 0, NOTICE_TAG, MPI_COMM_WORLD));
    }
#endif
    MPI_CHK(MPI_Waitall(2 * nexp, reqs, MPI_STATUSES_IGNORE));
    check_target(w, part_name, part, nexp, epochs);
    MPI_CHK(MPI_Group_free(&g0));
}

static void recv_notices(int n)
{
    for (int i = 0; i < n; i++) {
        int token;
        MPI_CHK(MPI_Recv(&token, 1, MPI_INT, MPI_ANY_SOURCE, NOTICE_TAG, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
    }
}

/* Part A: rank 1 posts 5 exposures ahead; rank 0 runs 5 blocking epochs */
static void part_a(rt_win_t *w, int f)
{
    const int part = 0, nep = 5, epochs[5] = { 0, 1, 2, 3, 4 };
    char name[64];
    snprintf(name, sizeof(name), "%s/A (5 exposures ahead)", rt_flavor_names[f]);
    zero_window(w);
    if (me == 0) {
        int one = 1;
        MPI_Group g1 = make_group(1, &one);
        recv_notices(1);
        for (int e = 0; e < nep; e++) {
            MPI_CHK(MPI_Win_start(g1, 0, w->win));
            epoch_ops(w, part, e, 1, e - 1);
            MPI_CHK(MPI_Win_complete(w->win));
        }
        check_gets(name, part, nep, epochs, 1);
        MPI_CHK(MPI_Group_free(&g1));
    } else if (me == 1) {
        target_ahead(w, name, part, nep, epochs, 1, 0);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* Part A2: ranks 1 and 2 post 5 exposures ahead; rank 0 runs 5 nonblocking epochs
 * toward both (group listed as {2, 1}) */
static void part_a2(rt_win_t *w, int f)
{
    const int part = 1, nep = 5, epochs[5] = { 0, 1, 2, 3, 4 };
    char name[64];
    snprintf(name, sizeof(name), "%s/A2 (two targets, 5 exposures ahead)",
             rt_flavor_names[f]);
    zero_window(w);
    if (me == 0) {
        int ranks[2] = { 2, 1 };
        MPI_Request reqs[2 * NEPOCH_MAX];
        MPI_Group g = make_group(2, ranks);
        recv_notices(2);
        for (int e = 0; e < nep; e++) {
            MPI_CHK(MPIX_Win_istart(g, 0, w->win, &reqs[2 * e]));
            epoch_ops(w, part, e, 2, e - 1);
            epoch_ops(w, part, e, 1, e - 1);
            MPI_CHK(MPIX_Win_icomplete(w->win, &reqs[2 * e + 1]));
        }
        MPI_CHK(MPI_Waitall(2 * nep, reqs, MPI_STATUSES_IGNORE));
        check_gets(name, part, nep, epochs, 1);
        check_gets(name, part, nep, epochs, 2);
        MPI_CHK(MPI_Group_free(&g));
    } else {
        target_ahead(w, name, part, nep, epochs, 1, 0);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* Part B: P0 -> T0..T5; P1 in T0, T1, T2, T3, T5; P2 in T4, T5 */
static int in_group(int e, int t)
{
    return t == 1 ? e != 4 : e >= 4;
}

static void part_b(rt_win_t *w, int f, int notify)
{
    const int part = notify ? 2 : 3;
    static const int p1_epochs[5] = { 0, 1, 2, 3, 5 }, p2_epochs[2] = { 4, 5 };
    char name[64];
    snprintf(name, sizeof(name), "%s/B%d (P0 -> T0..T5, %s)", rt_flavor_names[f],
             notify ? 1 : 2, notify ? "exposures made first" : "no ordering");
    zero_window(w);
    if (me == 0) {
        int r1 = 1, r2 = 2, r12[2] = { 1, 2 };
        MPI_Group t1 = make_group(1, &r1), t2 = make_group(1, &r2), t12 = make_group(2, r12);
        MPI_Group groups[6] = { t1, t1, t1, t1, t2, t12 };
        MPI_Request reqs[2 * 6];
        int prev[3] = { -1, -1, -1 };
        if (notify)
            recv_notices(2);
        for (int e = 0; e < 6; e++) {
#ifdef NO_NBRMA
            for (int t = 1; t <= 2; t++)
                if (in_group(e, t))
                    MPI_CHK(MPI_Send(&e, 1, MPI_INT, t, GO_TAG, MPI_COMM_WORLD));
#endif
            MPI_CHK(MPIX_Win_istart(groups[e], 0, w->win, &reqs[2 * e]));
            for (int t = 1; t <= 2; t++) {
                if (!in_group(e, t))
                    continue;
                epoch_ops(w, part, e, t, prev[t]);
                prev[t] = e;
            }
            MPI_CHK(MPIX_Win_icomplete(w->win, &reqs[2 * e + 1]));
        }
        MPI_CHK(MPI_Waitall(12, reqs, MPI_STATUSES_IGNORE));
        check_gets(name, part, 5, p1_epochs, 1);
        check_gets(name, part, 2, p2_epochs, 2);
        MPI_CHK(MPI_Group_free(&t1));
        MPI_CHK(MPI_Group_free(&t2));
        MPI_CHK(MPI_Group_free(&t12));
    } else if (me == 1) {
        target_ahead(w, name, part, 5, p1_epochs, notify, 1);
    } else {
        target_ahead(w, name, part, 2, p2_epochs, notify, 1);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void run_parts(rt_win_t *w, int f, void *arg)
{
    (void) arg;
    MPI_CHK(MPI_Win_get_group(w->win, &wgroup));
    part_a(w, f);
    part_a2(w, f);
    part_b(w, f, 1);
    part_b(w, f, 0);
    MPI_CHK(MPI_Group_free(&wgroup));
}

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);
    if (np != 3) {
        if (me == 0)
            fprintf(stderr, "exposures_ahead needs exactly 3 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    rt_each_flavor(argc, argv, sizeof(int) * WIN_INTS, sizeof(int), run_parts, NULL);
    return rt_finalize();
}
