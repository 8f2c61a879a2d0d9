/*
 * at_errors: erroneous active-target calls return the right error class through the
 * window's MPI_ERRORS_RETURN handler, with a message naming the call, do not hang, and
 * leave the window usable:
 *   MPI_Win_complete / MPIX_Win_icomplete without a start       -> MPI_ERR_RMA_SYNC
 *   MPI_Win_wait / MPI_Win_test / MPIX_Win_iwait without a post -> MPI_ERR_RMA_SYNC
 *   MPI_Win_start (or MPIX_Win_istart) while an access epoch is open -> MPI_ERR_RMA_SYNC
 *   start / post with a group holding a process outside the window -> MPI_ERR_RANK
 *   MPI_Win_fence / MPIX_Win_ifence inside a lock epoch         -> MPI_ERR_RMA_SYNC
 *   MPI_Win_post while holding a lock on oneself, or lock_all   -> MPI_ERR_RMA_CONFLICT
 *   MPI_Put / MPI_Get to a window rank outside the start group  -> MPI_ERR_RANK
 *   MPI_Put after fence(MPI_MODE_NOSUCCEED), after an ifence(MPI_MODE_NOSUCCEED) whose
 *   request is still pending                                    -> MPI_ERR_RMA_SYNC
 *   assert 0x7fff0000 to fence, ifence, start, post             -> MPI_ERR_ASSERT
 *   NULL request pointer to MPIX_Win_ifence / istart / ipost    -> MPI_ERR_REQUEST (as for
 *                                                                  MPIX_Win_ilock in errors.c)
 *   MPI_Rput / MPI_Rget inside a fence or a PSCW epoch           -> MPI_ERR_RMA_SYNC
 * A failed opening call must leave no epoch open (a complete / wait after it is again
 * MPI_ERR_RMA_SYNC). Only one process makes each erroneous call while its partner sits
 * in MPI_Barrier (or runs the matching correct epoch), so an erroneous call that enters
 * a collective or waits for a partner hangs the test instead of passing. After each
 * case a correct fence epoch with puts in both directions must move the right data and
 * leave the rest of the window intact.
 *
 * The window spans world ranks 0 and 1 only; world rank 2 is the process outside it.
 * Without nbrma (-DNO_NBRMA) only what MPICH itself detects is checked, with MPICH's
 * classes (MPI_ERR_ARG for a bad assert, MPI_ERR_RMA_SYNC for a target outside the
 * start group).
 *
 * Usage: at_errors [create|allocate|shared|dynamic]...   (3 processes; 2 skip the
 * outside-process case)
 */
#include "rmatest.h"

#define WIN_INTS 16
#define VERIFY_INTS 4 /* the verification epoch writes slots [0, VERIFY_INTS) */
#define PSCW_SLOT 8   /* PSCW cases put here; the target checks and restores it */
#define BAD_SLOT 9    /* erroneous puts aim here, with the slot's initial value, so one
                       * that wrongly succeeds is reported once, not in every later check */
#define BAD_ASSERT 0x7fff0000

#ifdef NO_NBRMA
#define ASSERT_CLASS MPI_ERR_ARG
#define OUTSIDE_START_GROUP_CLASS MPI_ERR_RMA_SYNC
#else
#define ASSERT_CLASS MPI_ERR_ASSERT
#define OUTSIDE_START_GROUP_CLASS MPI_ERR_RANK
#endif

static int wme, wnp, me, peer;
static MPI_Comm comm = MPI_COMM_NULL;
static rt_win_t w;
static MPI_Group g_peer, g_outside = MPI_GROUP_NULL, g_mixed = MPI_GROUP_NULL;
static int round_no = 0;

static int pscw_val(int round, int r)
{
    return 500000 + round * 10 + r;
}

/* A correct fence epoch in both directions, then each rank checks its whole window. */
static void verify(const char *after)
{
    int buf[VERIFY_INTS];
    round_no++;
    for (int k = 0; k < VERIFY_INTS; k++)
        buf[k] = rt_verify_val(round_no, me, k);
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOPRECEDE, w.win));
    MPI_CHK(MPI_Put(buf, VERIFY_INTS, MPI_INT, peer, rt_disp(&w, peer, 0), VERIFY_INTS,
                    MPI_INT, w.win));
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
    rt_check_verified(&w, WIN_INTS, VERIFY_INTS, round_no, peer, after);
    MPI_CHK(MPI_Barrier(comm));
}

/* the partner's side of a PSCW case: expose to `who`, then check and restore the slot */
static void partner_exposes(int who, int expect_put)
{
    int *mem = (int *) w.base;
    MPI_CHK(MPI_Win_post(g_peer, 0, w.win));
    MPI_CHK(MPI_Win_wait(w.win));
    if (expect_put) {
        int exp = pscw_val(round_no, who);
        CHECK(mem[PSCW_SLOT] == exp, "%s: PSCW put from %d: slot %d = %d, expected %d",
              rt_flavor_names[w.flavor], who, PSCW_SLOT, mem[PSCW_SLOT], exp);
    }
    rt_lock_self(&w);
    mem[PSCW_SLOT] = rt_init_slot_val(me, PSCW_SLOT);
    rt_unlock_self(&w);
}

static void good_pscw_put(int *buf)
{
    *buf = pscw_val(round_no, me);
    MPI_CHK(MPI_Put(buf, 1, MPI_INT, peer, rt_disp(&w, peer, PSCW_SLOT), 1, MPI_INT, w.win));
}

/* ---- closing calls without an opening one (local, no partner needed) ---- */
static void case_no_epoch(int who)
{
    if (me == who) {
        int rc, flag = 0;
        rc = MPI_Win_complete(w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_complete", "complete without start");
        rc = MPI_Win_wait(w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_wait", "wait without post");
        rc = MPI_Win_test(w.win, &flag);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_test", "test without post");
#ifndef NO_NBRMA
        MPI_Request req = MPI_REQUEST_NULL;
        rc = MPIX_Win_icomplete(w.win, &req);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPIX_Win_icomplete", "icomplete without start");
        CHECK(req == MPI_REQUEST_NULL || rc == MPI_SUCCESS, "failed icomplete set a request");
        rc = MPIX_Win_iwait(w.win, &req);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPIX_Win_iwait", "iwait without post");
#endif
    }
    MPI_CHK(MPI_Barrier(comm));
    verify("closing calls without an epoch");
}

/* ---- a second start while an access epoch is open ---- */
static void case_start_twice(int who)
{
    int buf;
    if (me == who) {
        int rc;
        MPI_CHK(MPI_Win_start(g_peer, 0, w.win));
        rc = MPI_Win_start(g_peer, 0, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_start", "start twice");
#ifndef NO_NBRMA
        MPI_Request req;
        rc = MPIX_Win_istart(g_peer, 0, w.win, &req);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPIX_Win_istart", "istart inside an access epoch");
#endif
        good_pscw_put(&buf);
        MPI_CHK(MPI_Win_complete(w.win));
    } else {
        partner_exposes(who, 1);
    }
    MPI_CHK(MPI_Barrier(comm));
    verify("start twice");
}

/* ---- start / post with a process outside the window (world rank 2) ---- */
static void case_outside_group(int who)
{
#ifndef NO_NBRMA /* MPICH 4.0.2 crashes on these */
    if (me == who) {
        int rc;
        MPI_Request req;
        rc = MPI_Win_start(g_outside, 0, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RANK, "MPI_Win_start", "start group {outside process}");
        rc = MPI_Win_start(g_mixed, 0, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RANK, "MPI_Win_start", "start group {peer, outside process}");
        rc = MPIX_Win_istart(g_mixed, 0, w.win, &req);
        rt_expect_win_error(&w, rc, MPI_ERR_RANK, "MPIX_Win_istart", "istart group {peer, outside}");
        rc = MPI_Win_complete(w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_complete", "complete after failed starts");
        rc = MPI_Win_post(g_outside, 0, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RANK, "MPI_Win_post", "post group {outside process}");
        rc = MPIX_Win_ipost(g_mixed, 0, w.win, &req);
        rt_expect_win_error(&w, rc, MPI_ERR_RANK, "MPIX_Win_ipost", "ipost group {peer, outside}");
        rc = MPI_Win_wait(w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_wait", "wait after failed posts");
    }
    MPI_CHK(MPI_Barrier(comm));
    verify("groups with a process outside the window");
#else
    (void) who;
#endif
}

/* ---- fence inside a lock epoch ---- */
static void case_fence_in_lock(int who)
{
    if (me == who) {
        int rc;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w.win));
        rc = MPI_Win_fence(0, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_fence", "fence inside a lock epoch");
#ifndef NO_NBRMA
        MPI_Request req;
        rc = MPIX_Win_ifence(0, w.win, &req);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPIX_Win_ifence", "ifence inside a lock epoch");
#endif
        MPI_CHK(MPI_Win_unlock(peer, w.win));
        MPI_CHK(MPI_Win_lock_all(0, w.win));
        rc = MPI_Win_fence(0, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_fence", "fence inside a lock_all epoch");
        MPI_CHK(MPI_Win_unlock_all(w.win));
    }
    MPI_CHK(MPI_Barrier(comm));
    verify("fence inside a lock epoch");
}

/* ---- post while the window is locked by this process ---- */
static void case_post_while_locked(int who)
{
#ifndef NO_NBRMA /* MPICH does not detect it */
    for (int variant = 0; variant < 2; variant++) {
        int stray = 0;
        if (me == who) {
            int rc;
            if (variant == 0)
                MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w.win));
            else
                MPI_CHK(MPI_Win_lock_all(0, w.win));
            rc = MPI_Win_post(g_peer, 0, w.win);
            rt_expect_win_error(&w, rc, MPI_ERR_RMA_CONFLICT, "MPI_Win_post",
                         variant == 0 ? "post while locked by self" : "post inside lock_all");
            stray = rc == MPI_SUCCESS;
            if (variant == 0)
                MPI_CHK(MPI_Win_unlock(me, w.win));
            else
                MPI_CHK(MPI_Win_unlock_all(w.win));
        }
        /* if the post wrongly succeeded, close its exposure so the rest can go on */
        MPI_CHK(MPI_Bcast(&stray, 1, MPI_INT, who, comm));
        if (stray && me == who) {
            MPI_CHK(MPI_Win_wait(w.win));
        } else if (stray) {
            MPI_CHK(MPI_Win_start(g_peer, 0, w.win));
            MPI_CHK(MPI_Win_complete(w.win));
        }
        MPI_CHK(MPI_Barrier(comm));
        verify(variant == 0 ? "post while locked" : "post inside lock_all");
    }
#else
    (void) who;
#endif
}

/* ---- communication toward a window rank outside the start group ---- */
static void case_outside_start_group(int who)
{
    int buf, gbuf = -1;
    if (me == who) {
        int rc, val = rt_init_slot_val(me, BAD_SLOT);
        MPI_CHK(MPI_Win_start(g_peer, 0, w.win)); /* group {peer}: me is not in it */
        rc = MPI_Put(&val, 1, MPI_INT, me, rt_disp(&w, me, BAD_SLOT), 1, MPI_INT, w.win);
        rt_expect_win_error(&w, rc, OUTSIDE_START_GROUP_CLASS, "MPI_Put", "put outside the start group");
        rc = MPI_Get(&gbuf, 1, MPI_INT, me, rt_disp(&w, me, BAD_SLOT), 1, MPI_INT, w.win);
        rt_expect_win_error(&w, rc, OUTSIDE_START_GROUP_CLASS, "MPI_Get", "get outside the start group");
        good_pscw_put(&buf);
        MPI_CHK(MPI_Win_complete(w.win));
        CHECK(gbuf == -1, "%s: failed get wrote %d into its buffer", rt_flavor_names[w.flavor],
              gbuf);
    } else {
        partner_exposes(who, 1);
    }
    MPI_CHK(MPI_Barrier(comm));
    verify("communication outside the start group");
}

/* ---- communication after the last fence ---- */
static void case_after_nosucceed(int who)
{
    int val = rt_init_slot_val(peer, BAD_SLOT), rc;
    MPI_Request r[2];
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOPRECEDE, w.win));
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
    if (me == who) {
        rc = MPI_Put(&val, 1, MPI_INT, peer, rt_disp(&w, peer, BAD_SLOT), 1, MPI_INT, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Put", "put after fence(NOSUCCEED)");
    }
    MPI_CHK(MPI_Barrier(comm));
    MPI_CHK(MPIX_Win_ifence(MPI_MODE_NOPRECEDE, w.win, &r[0]));
    MPI_CHK(MPIX_Win_ifence(MPI_MODE_NOSUCCEED, w.win, &r[1]));
    if (me == who) {
        rc = MPI_Put(&val, 1, MPI_INT, peer, rt_disp(&w, peer, BAD_SLOT), 1, MPI_INT, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Put", "put after ifence(NOSUCCEED)");
    }
    MPI_CHK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    MPI_CHK(MPI_Barrier(comm));
    verify("put after the last fence");
}

/* ---- invalid assert values ---- */
static void case_bad_assert(int who)
{
    if (me == who) {
        int rc;
        rc = MPI_Win_fence(BAD_ASSERT, w.win);
        rt_expect_win_error(&w, rc, ASSERT_CLASS, "MPI_Win_fence", "fence with assert 0x7fff0000");
        rc = MPI_Win_start(g_peer, BAD_ASSERT, w.win);
        rt_expect_win_error(&w, rc, ASSERT_CLASS, "MPI_Win_start", "start with assert 0x7fff0000");
        rc = MPI_Win_post(g_peer, BAD_ASSERT, w.win);
        rt_expect_win_error(&w, rc, ASSERT_CLASS, "MPI_Win_post", "post with assert 0x7fff0000");
#ifndef NO_NBRMA
        MPI_Request req;
        rc = MPIX_Win_ifence(BAD_ASSERT, w.win, &req);
        rt_expect_win_error(&w, rc, ASSERT_CLASS, "MPIX_Win_ifence", "ifence with assert 0x7fff0000");
        rc = MPIX_Win_istart(g_peer, BAD_ASSERT, w.win, &req);
        rt_expect_win_error(&w, rc, ASSERT_CLASS, "MPIX_Win_istart", "istart with assert 0x7fff0000");
        rc = MPIX_Win_ipost(g_peer, BAD_ASSERT, w.win, &req);
        rt_expect_win_error(&w, rc, ASSERT_CLASS, "MPIX_Win_ipost", "ipost with assert 0x7fff0000");
        rc = MPI_Win_complete(w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_complete", "complete after failed starts");
        rc = MPI_Win_wait(w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_wait", "wait after failed posts");
#endif
    }
    MPI_CHK(MPI_Barrier(comm));
    verify("invalid assert values");
}

/* ---- NULL request pointers (mirrors MPIX_Win_ilock in errors.c) ---- */
static void case_null_request(int who)
{
#ifndef NO_NBRMA /* the stand-ins would run the blocking call */
    if (me == who) {
        int rc;
        rc = MPIX_Win_ifence(0, w.win, NULL);
        rt_expect_win_error(&w, rc, MPI_ERR_REQUEST, "MPIX_Win_ifence", "ifence with a NULL request");
        rc = MPIX_Win_istart(g_peer, 0, w.win, NULL);
        rt_expect_win_error(&w, rc, MPI_ERR_REQUEST, "MPIX_Win_istart", "istart with a NULL request");
        rc = MPIX_Win_ipost(g_peer, 0, w.win, NULL);
        rt_expect_win_error(&w, rc, MPI_ERR_REQUEST, "MPIX_Win_ipost", "ipost with a NULL request");
        rc = MPI_Win_complete(w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_complete", "complete after a failed istart");
        rc = MPI_Win_wait(w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Win_wait", "wait after a failed ipost");
    }
    MPI_CHK(MPI_Barrier(comm));
    verify("NULL request pointers");
#else
    (void) who;
#endif
}

/* ---- request-based operations belong to passive target only ---- */
static void case_request_ops(int who)
{
#ifndef NO_NBRMA /* MPICH accepts them */
    int val = rt_init_slot_val(peer, BAD_SLOT), gbuf = -1, buf, rc;
    MPI_Request req[3] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL };
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOPRECEDE, w.win));
    if (me == who) {
        rc = MPI_Rput(&val, 1, MPI_INT, peer, rt_disp(&w, peer, BAD_SLOT), 1, MPI_INT, w.win,
                      &req[0]);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Rput", "Rput inside a fence epoch");
        rc = MPI_Rget(&gbuf, 1, MPI_INT, peer, rt_disp(&w, peer, BAD_SLOT), 1, MPI_INT, w.win,
                      &req[1]);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Rget", "Rget inside a fence epoch");
    }
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
    MPI_CHK(MPI_Barrier(comm));
    if (me == who) {
        MPI_CHK(MPI_Win_start(g_peer, 0, w.win));
        rc = MPI_Rput(&val, 1, MPI_INT, peer, rt_disp(&w, peer, BAD_SLOT), 1, MPI_INT, w.win,
                      &req[2]);
        rt_expect_win_error(&w, rc, MPI_ERR_RMA_SYNC, "MPI_Rput", "Rput inside a PSCW epoch");
        good_pscw_put(&buf);
        MPI_CHK(MPI_Win_complete(w.win));
        /* requests of calls that wrongly succeeded are complete now (epochs closed) */
        MPI_CHK(MPI_Waitall(3, req, MPI_STATUSES_IGNORE));
    } else {
        partner_exposes(who, 1);
    }
    MPI_CHK(MPI_Barrier(comm));
    verify("request-based operations in active target");
#else
    (void) who;
#endif
}

static void run_flavor(int flavor)
{
    rt_win_create(flavor, sizeof(int) * WIN_INTS, sizeof(int), MPI_INFO_NULL, comm, &w);
    g_peer = rt_peer_group(&w); /* {peer} */

    rt_init_slots(&w, WIN_INTS);
    verify("window creation");

    for (int who = 0; who < 2; who++) {
        case_no_epoch(who);
        case_start_twice(who);
        if (wnp >= 3)
            case_outside_group(who);
        case_fence_in_lock(who);
        case_post_while_locked(who);
        case_outside_start_group(who);
        case_after_nosucceed(who);
        case_bad_assert(who);
        case_null_request(who);
        case_request_ops(who);
    }

    MPI_CHK(MPI_Group_free(&g_peer));
    rt_win_free(&w);
}

int main(int argc, char **argv)
{
    int sel[RT_NFLAVORS];

    rt_init_world(&argc, &argv, &wme, &wnp);
    rt_max_print = 100;
    rt_require_procs(2, "at_errors needs 2 or 3 processes");
    rt_select_flavors(argc, argv, sel);

    /* the window lives on world ranks 0 and 1; groups naming world rank 2 (outside it)
     * are built from MPI_COMM_WORLD's group */
    MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, wme < 2 ? 0 : MPI_UNDEFINED, wme, &comm));
    if (wme < 2) {
        MPI_Group world;
        int outside = 2, mixed[2] = { 1 - wme, 2 };
        MPI_CHK(MPI_Comm_rank(comm, &me));
        peer = 1 - me;
        if (wnp >= 3) {
            MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
            MPI_CHK(MPI_Group_incl(world, 1, &outside, &g_outside));
            MPI_CHK(MPI_Group_incl(world, 2, mixed, &g_mixed));
            MPI_CHK(MPI_Group_free(&world));
        }
        for (int f = 0; f < RT_NFLAVORS; f++)
            if (sel[f])
                run_flavor(f);
        if (g_outside != MPI_GROUP_NULL)
            MPI_CHK(MPI_Group_free(&g_outside));
        if (g_mixed != MPI_GROUP_NULL)
            MPI_CHK(MPI_Group_free(&g_mixed));
        MPI_CHK(MPI_Comm_free(&comm));
    }
    return rt_finalize();
}
