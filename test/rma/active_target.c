/*
 * active_target: every communication call (Put, Get, Accumulate, Get_accumulate,
 * Fetch_and_op, Compare_and_swap) inside active-target epochs:
 *   fence: MPI_Win_fence, MPIX_Win_ifence, and the two mixes (ifence + fence,
 *          fence + ifence), a closing ifence polled with MPI_Test;
 *   PSCW:  post/start/complete/wait, ipost/istart/icomplete/iwait, and the mixes
 *          ipost + blocking wait, post + istart/icomplete/iwait, start + icomplete,
 *          istart + blocking complete, MPI_Win_test polling, MPI_Testall polling, and
 *          (nbrma only: opening calls never block) istart issued before ipost.
 * The request-based R-versions are only legal in passive epochs and are not used.
 *
 * Each synchronization runs over several origin -> target patterns, given to PSCW as
 * groups built with MPI_Group_incl from the window's group (fence has no groups; the
 * same pattern just says which targets an origin talks to):
 *   whole group in order; reversed; rotated; only the even ranks (a subset, each even
 *   rank also targets itself); ring neighbours (start {right}, post {left}); odd ranks
 *   access the even ones, which only expose (ranks with an access or an exposure epoch
 *   only).
 * Every origin writes its own block of SLOTS ints at each target. Fetched values are
 * checked at the origin once its epoch is closed; the target checks its whole memory
 * right after its own closing call returned (after MPI_Win_wait / the closing fence),
 * before any further synchronization, so an exposure that ends early is caught.
 *
 * Usage: active_target [create|allocate|shared|dynamic]...   (default: all)
 */
#include "rmatest.h"

#define SLOTS 12

enum {
    S_PUT = 0, S_PUT2, S_ACC, S_GACC, S_FOP, S_CAS, S_GET, S_CAS_NOMATCH, S_FOP_NOOP,
    S_ACC_REPLACE, S_UNTOUCHED1, S_UNTOUCHED2
};

enum {
    Y_FENCE = 0, Y_IFENCE, Y_IFENCE_FENCE, Y_FENCE_IFENCE, Y_IFENCE_TEST, Y_PSCW, Y_IPSCW,
    Y_IPOST_WAIT, Y_POST_IWAIT, Y_START_ICOMPLETE, Y_ISTART_COMPLETE, Y_WIN_TEST, Y_TESTALL,
    Y_START_FIRST, NSYNC
};
static const char *sync_names[NSYNC] = {
    "fence/fence", "ifence/ifence", "ifence/fence", "fence/ifence", "ifence/ifence+MPI_Test",
    "post/start/complete/wait", "ipost/istart/icomplete/iwait", "ipost/start/complete/wait",
    "post/istart/icomplete/iwait", "post/start/icomplete/wait", "ipost/istart/complete/iwait",
    "post/start/icomplete/MPI_Win_test", "ipost/istart/icomplete/iwait+MPI_Testall",
    "istart/ops/ipost/icomplete/iwait"
};

enum { G_ALL = 0, G_REVERSED, G_ROTATED, G_EVEN, G_RING, G_ODD_TO_EVEN, NGROUPS };
static const char *group_names[NGROUPS] = {
    "whole group", "reversed group", "rotated group", "even ranks", "ring neighbours",
    "odd ranks -> even ranks"
};

/* the request-based calls are not issued (-1: no slot) */
static const rt_calls_t calls = {
    .slots = SLOTS, .put = S_PUT, .acc = S_ACC, .gacc = S_GACC, .fop = S_FOP, .cas = S_CAS,
    .rput = -1, .racc = -1, .rgacc = -1, .get = S_GET, .rget = -1,
    .cas_nomatch = S_CAS_NOMATCH, .fop_noop = S_FOP_NOOP, .acc_replace = S_ACC_REPLACE
};

static int me, np;

/* per-target origin buffers: they must stay valid until the epoch is closed */
static int *obuf, *rbuf, *cbuf;
#define OB(t, k) obuf[(t) * SLOTS + (k)]
#define RB(t, k) rbuf[(t) * SLOTS + (k)]

/* this rank's access list (targets, in group order) and exposure list (origins) */
static int *acc, *expo;
static int nacc, nexpo;

static int put_val(int run, int t, int o, int k)
{
    return 10000000 + 100000 * run + 10000 * t + 100 * o + k;
}

/* value expected at target t in origin o's block, slot k; touched: o accessed t */
static int expected_target(int run, int t, int o, int k, int touched)
{
    int i = rt_init_block_val(t, o, k);
    if (!touched)
        return i;
    return rt_call_expected(&calls, k, i, put_val(run, t, o, k));
}

static void make_lists(int g)
{
    int neven = (np + 1) / 2, nodd = np / 2;
    nacc = nexpo = 0;
    switch (g) {
    case G_ALL:
        for (int i = 0; i < np; i++)
            acc[nacc++] = expo[nexpo++] = i;
        break;
    case G_REVERSED:
        for (int i = 0; i < np; i++)
            acc[nacc++] = expo[nexpo++] = np - 1 - i;
        break;
    case G_ROTATED:
        for (int i = 0; i < np; i++) {
            acc[nacc++] = (me + 1 + i) % np;
            expo[nexpo++] = (me + np / 2 + i) % np;
        }
        break;
    case G_EVEN:
        if (me % 2 == 0)
            for (int i = 0; i < neven; i++)
                acc[nacc++] = expo[nexpo++] = 2 * ((me / 2 + i) % neven);
        break;
    case G_RING:
        acc[nacc++] = (me + 1) % np;
        expo[nexpo++] = (me + np - 1) % np;
        break;
    case G_ODD_TO_EVEN:
        if (me % 2 == 1)
            for (int i = 0; i < neven; i++)
                acc[nacc++] = 2 * (neven - 1 - i);
        else
            for (int i = 0; i < nodd; i++)
                expo[nexpo++] = 2 * i + 1;
        break;
    }
}

static int in_list(const int *list, int n, int r)
{
    for (int i = 0; i < n; i++)
        if (list[i] == r)
            return 1;
    return 0;
}

/* all operations of this origin toward target t */
static void issue(rt_win_t *w, int run, int t)
{
    for (int k = 0; k < SLOTS; k++)
        OB(t, k) = put_val(run, t, me, k);
    rt_issue_calls(w, t, &calls, &OB(t, 0), &RB(t, 0), &cbuf[t * 2], NULL);
}

static void issue_all(rt_win_t *w, int run)
{
    for (int i = 0; i < nacc; i++)
        issue(w, run, acc[i]);
}

static void check_origin(const rt_win_t *w, int f, int y, int g)
{
    char context[128];
    snprintf(context, sizeof(context), "%s/%s/%s", rt_flavor_names[f], sync_names[y],
             group_names[g]);
    for (int i = 0; i < nacc; i++)
        rt_check_fetched(w, acc[i], &calls, &RB(acc[i], 0), context);
}

/* target-side check of its own memory, right after its epoch closed */
static void check_target_mem(rt_win_t *w, int f, int y, int g, int run)
{
    const int *mem = (const int *) w->base;
    for (int o = 0; o < np; o++) {
        int touched = in_list(expo, nexpo, o);
        for (int k = 0; k < SLOTS; k++) {
            int exp = expected_target(run, me, o, k, touched);
            CHECK(mem[o * SLOTS + k] == exp,
                  "%s/%s/%s: target %d, block of origin %d, slot %d = %d, expected %d",
                  rt_flavor_names[f], sync_names[y], group_names[g], me, o, k,
                  mem[o * SLOTS + k], exp);
        }
    }
}

static void poll_all(int n, MPI_Request *reqs)
{
    int flag = 0;
    while (!flag)
        MPI_CHK(MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE));
}

static void run(rt_win_t *w, int f, int y, int g)
{
    MPI_Win win = w->win;
    MPI_Group wgroup, ga = MPI_GROUP_NULL, ge = MPI_GROUP_NULL;
    MPI_Request reqs[8];
    int nreq = 0, flag = 0, r = y * NGROUPS + g;

    make_lists(g);
    rt_init_blocks(w, SLOTS);
    MPI_CHK(MPI_Win_get_group(win, &wgroup));
    if (nacc > 0)
        MPI_CHK(MPI_Group_incl(wgroup, nacc, acc, &ga));
    if (nexpo > 0)
        MPI_CHK(MPI_Group_incl(wgroup, nexpo, expo, &ge));

    switch (y) {
    /* ---- fence: every process calls it; the pattern says whom it talks to ---- */
    case Y_FENCE:
        MPI_CHK(MPI_Win_fence(MPI_MODE_NOPRECEDE | MPI_MODE_NOSTORE, win));
        issue_all(w, r);
        MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
        break;
    case Y_IFENCE:
        MPI_CHK(MPIX_Win_ifence(MPI_MODE_NOPRECEDE, win, &reqs[nreq++]));
        issue_all(w, r);
        MPI_CHK(MPIX_Win_ifence(MPI_MODE_NOSUCCEED, win, &reqs[nreq++]));
        MPI_CHK(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
        break;
    case Y_IFENCE_FENCE:
        MPI_CHK(MPIX_Win_ifence(0, win, &reqs[nreq++]));
        issue_all(w, r);
        MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
        MPI_CHK(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
        break;
    case Y_FENCE_IFENCE:
        MPI_CHK(MPI_Win_fence(0, win));
        issue_all(w, r);
        MPI_CHK(MPIX_Win_ifence(MPI_MODE_NOSUCCEED, win, &reqs[nreq++]));
        MPI_CHK(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));
        break;
    case Y_IFENCE_TEST:
        MPI_CHK(MPIX_Win_ifence(MPI_MODE_NOPRECEDE, win, &reqs[0]));
        MPI_CHK(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));
        issue_all(w, r);
        MPI_CHK(MPIX_Win_ifence(MPI_MODE_NOSUCCEED, win, &reqs[0]));
        while (!flag)
            MPI_CHK(MPI_Test(&reqs[0], &flag, MPI_STATUS_IGNORE));
        CHECK(reqs[0] == MPI_REQUEST_NULL, "%s/%s: completed ifence request not freed",
              rt_flavor_names[f], sync_names[y]);
        break;

    /* ---- PSCW: every process posts before it starts (blocking calls may wait) ---- */
    case Y_PSCW:
        if (nexpo)
            MPI_CHK(MPI_Win_post(ge, MPI_MODE_NOSTORE, win));
        if (nacc) {
            MPI_CHK(MPI_Win_start(ga, 0, win));
            issue_all(w, r);
            MPI_CHK(MPI_Win_complete(win));
        }
        if (nexpo)
            MPI_CHK(MPI_Win_wait(win));
        break;
    case Y_IPSCW:
    case Y_TESTALL:
        if (nexpo)
            MPI_CHK(MPIX_Win_ipost(ge, 0, win, &reqs[nreq++]));
        if (nacc) {
            MPI_CHK(MPIX_Win_istart(ga, 0, win, &reqs[nreq++]));
            issue_all(w, r);
            MPI_CHK(MPIX_Win_icomplete(win, &reqs[nreq++]));
        }
        if (nexpo)
            MPI_CHK(MPIX_Win_iwait(win, &reqs[nreq++]));
        if (y == Y_TESTALL)
            poll_all(nreq, reqs);
        else
            MPI_CHK(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
        break;
    case Y_IPOST_WAIT:
        if (nexpo)
            MPI_CHK(MPIX_Win_ipost(ge, 0, win, &reqs[nreq++]));
        if (nacc) {
            MPI_CHK(MPI_Win_start(ga, 0, win));
            issue_all(w, r);
            MPI_CHK(MPI_Win_complete(win));
        }
        if (nexpo)
            MPI_CHK(MPI_Win_wait(win));
        MPI_CHK(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
        break;
    case Y_POST_IWAIT:
        if (nexpo)
            MPI_CHK(MPI_Win_post(ge, 0, win));
        if (nacc) {
            MPI_CHK(MPIX_Win_istart(ga, 0, win, &reqs[nreq++]));
            issue_all(w, r);
            MPI_CHK(MPIX_Win_icomplete(win, &reqs[nreq++]));
        }
        if (nexpo)
            MPI_CHK(MPIX_Win_iwait(win, &reqs[nreq++]));
        /* complete them in reverse order of issue */
        for (int i = nreq - 1; i >= 0; i--)
            MPI_CHK(MPI_Wait(&reqs[i], MPI_STATUS_IGNORE));
        break;
    case Y_START_ICOMPLETE:
    case Y_WIN_TEST:
        if (nexpo)
            MPI_CHK(MPI_Win_post(ge, 0, win));
        if (nacc) {
            MPI_CHK(MPI_Win_start(ga, 0, win));
            issue_all(w, r);
            MPI_CHK(MPIX_Win_icomplete(win, &reqs[nreq++]));
        }
        if (nexpo && y == Y_START_ICOMPLETE) {
            MPI_CHK(MPI_Win_wait(win));
        } else if (nexpo) {
            while (!flag)
                MPI_CHK(MPI_Win_test(win, &flag));
        }
        MPI_CHK(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
        break;
    case Y_ISTART_COMPLETE:
        if (nexpo)
            MPI_CHK(MPIX_Win_ipost(ge, 0, win, &reqs[nreq++]));
        if (nacc) {
            MPI_CHK(MPIX_Win_istart(ga, 0, win, &reqs[nreq++]));
            issue_all(w, r);
            MPI_CHK(MPI_Win_complete(win));
        }
        if (nexpo)
            MPI_CHK(MPIX_Win_iwait(win, &reqs[nreq++]));
        MPI_CHK(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
        break;
    case Y_START_FIRST:
        /* nbrma: opening calls never block, so the access epoch (and its operations)
         * may come before this process's own exposure, which others wait for */
        if (nacc) {
            MPI_CHK(MPIX_Win_istart(ga, 0, win, &reqs[nreq++]));
            issue_all(w, r);
        }
        if (nexpo)
            MPI_CHK(MPIX_Win_ipost(ge, 0, win, &reqs[nreq++]));
        if (nacc)
            MPI_CHK(MPIX_Win_icomplete(win, &reqs[nreq++]));
        if (nexpo)
            MPI_CHK(MPIX_Win_iwait(win, &reqs[nreq++]));
        MPI_CHK(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
        break;
    }

    check_origin(w, f, y, g);
    check_target_mem(w, f, y, g, r);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    if (ga != MPI_GROUP_NULL)
        MPI_CHK(MPI_Group_free(&ga));
    if (ge != MPI_GROUP_NULL)
        MPI_CHK(MPI_Group_free(&ge));
    MPI_CHK(MPI_Group_free(&wgroup));
}

/* Every synchronization and group on a window of one flavor. */
static void run_all(rt_win_t *w, int f, void *arg)
{
    (void) arg;
    for (int y = 0; y < NSYNC; y++) {
#ifdef NO_NBRMA
        if (y == Y_START_FIRST)
            continue; /* MPI_Win_start may block until the matching post */
#endif
        for (int g = 0; g < NGROUPS; g++)
            run(w, f, y, g);
    }
}

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);

    obuf = malloc(sizeof(int) * SLOTS * (size_t) np);
    rbuf = malloc(sizeof(int) * SLOTS * (size_t) np);
    cbuf = malloc(sizeof(int) * 2 * (size_t) np);
    acc = malloc(sizeof(int) * (size_t) np);
    expo = malloc(sizeof(int) * (size_t) np);

    rt_each_flavor(argc, argv, (MPI_Aint) sizeof(int) * SLOTS * np, sizeof(int), run_all, NULL);

    free(obuf);
    free(rbuf);
    free(cbuf);
    free(acc);
    free(expo);
    return rt_finalize();
}
