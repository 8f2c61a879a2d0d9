/*
 * progress_thread: NBRMA_PROGRESS=thread advances epochs while the application computes
 * without calling MPI. The first argument picks the mode; the program sets
 * NBRMA_PROGRESS itself before MPI_Init:
 *
 *   thread           NBRMA_PROGRESS=thread, MPI_Init (the thread needs no
 *                    MPI_THREAD_MULTIPLE from MPICH); every overlap below is asserted.
 *   thread_multiple  the same under MPI_Init_thread(MPI_THREAD_MULTIPLE).
 *   inline           NBRMA_PROGRESS=inline: the same scenarios as a control; the data is
 *                    checked, overlap is only reported (inline progress cannot give it),
 *                    and "progress_thread_sweeps" must stay 0.
 *   bogus            NBRMA_PROGRESS=bogus: every window creation fails with MPI_ERR_INFO
 *                    or MPI_ERR_OTHER (either is allowed) and a message naming
 *                    NBRMA_PROGRESS and "bogus" (MPI_ERRORS_RETURN).
 *
 * Scenarios (rank 0 = origin O, rank 1 = target T; the computing rank never calls MPI
 * while it computes, COMPUTE_S seconds, in thread modes longer until the others saw
 * their events, up to COMPUTE_MAX_S; the others watch flags in a page of POSIX shared
 * memory, not times):
 *
 *   late post      O: MPIX_Win_istart toward T, puts + accumulate, MPIX_Win_icomplete,
 *                  then computes. T posts only once O computes (plus DELAY_S), then
 *                  MPI_Win_wait: it must return, with the data in place, while O still
 *                  computes. After computing, O's single MPI_Test of its icomplete request
 *                  must report completion.
 *   lock hand-over H (rank 2, or T itself with 2 processes) holds T's exclusive lock. O:
 *                  MPIX_Win_ilock(exclusive) + put + get + MPIX_Win_iunlock, then
 *                  computes; H releases once O computes (plus DELAY_S). T polls its memory
 *                  (no MPI call): O's put must appear while O still computes; O's single
 *                  MPI_Test of the iunlock request afterwards must report completion, and
 *                  its get must have read what H wrote under its lock.
 *   pending ifence O: MPIX_Win_ifence, put, MPIX_Win_ifence, put, MPIX_Win_ifence(NOSUCCEED),
 *                  then computes (the second epoch cannot start before every rank's second
 *                  fence). The others enter their (blocking) fences once O computes (plus
 *                  DELAY_S; with 3 or more processes rank 2 and up STAGGER_S later
 *                  still, before each fence): their last fence must return, T's data in
 *                  place, while O computes; then a single MPI_Testall of the three ifence
 *                  requests on O. In interrupt mode with the others over shared memory, at
 *                  most one of O's wake-ups in this scenario may be futile: each fence
 *                  round waits for every other rank's notice, and the early ones (rank 1's)
 *                  must not wake O's thread (the watch counts the rings still missing).
 *   busy target    T computes; every other rank, once T computes, runs MPI_Win_lock /
 *                  put / accumulate / flush / get / MPI_Win_unlock toward T (round 1:
 *                  MPIX_Win_ilock/iunlock, shared): its unlock must return while T still
 *                  computes. On shared memory that needs nothing from T; where peers go
 *                  through UCX over tcp (runtests-ucx, runtests-mixed) T's progress thread
 *                  serves them. T checks the data afterwards.
 *
 * Before them, "nothing waits": O computes 300 ms with no epoch pending while T posts an
 * exposure to it (ringing O's bell): the helper must not wake O's thread.
 * Then nbrma_get_counter("progress_thread_sweeps") > 0 on O (thread modes; T's count
 * is only printed: serving a UCX peer need not count as a sweep that moved something),
 * or 0 on every rank (inline). In thread modes the window's creation added a thread to
 * the process and freeing it (the last window) removed one (/proc/self/task). Finally a
 * new window runs the late post and the hand-over again: the thread restarts.
 * 2 or more processes.
 */
#include <dirent.h>
#include <signal.h>

#include "rmatest.h"
#include "rmathreads.h"

#define COMPUTE_S 0.5
/* Thread modes: the computing rank goes on computing past COMPUTE_S until the scenario's
 * observers saw their events (sh->events), up to COMPUTE_MAX_S, and then SLACK_S more,
 * for the progress thread to finish the origin's side (its single MPI_Test comes next):
 * on a loaded machine (several suite programs on 2 cores) the progress threads may need
 * longer than COMPUTE_S, and a fixed time made the test flaky (CI, runtests-mixed,
 * progress_thread 3 interrupt). Without progress the events never come while it
 * computes, so every check below still fails then. */
#define COMPUTE_MAX_S 15.0
#define SLACK_S 0.25
#define DELAY_S 0.1
#define STAGGER_S 0.1
#define NINTS 16
#define TAG_HELD 401
#define TAG_PEER 402

enum { M_THREAD, M_THREAD_MULTIPLE, M_INTERRUPT, M_INTERRUPT_MULTIPLE, M_INLINE, M_BOGUS };

static int me, np, mode, threaded, interrupt;
static rt_win_t w;

/* the page of shared memory */
typedef struct {
    volatile int computing;   /* the computing rank: 1 while it computes, 2 after */
    volatile int target_done; /* late post / ifence: T's wait returned (with 1 = computing) */
    volatile int events;      /* observers that saw their event (see COMPUTE_MAX_S) */
} shared_t;
static shared_t *sh;

static void reset(void)
{
    int *mem = (int *) w.base;
    rt_lock_self(&w);
    for (int i = 0; i < NINTS; i++)
        mem[i] = -1;
    rt_unlock_self(&w);
    if (me == 0) {
        rt_flag_set(&sh->computing, 0);
        rt_flag_set(&sh->target_done, 0);
        rt_flag_set(&sh->events, 0);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* The computing rank: no MPI call in here. COMPUTE_S seconds, and in thread modes on
 * until `events` observers saw their event (or COMPUTE_MAX_S), then SLACK_S more. */
static void compute(int events)
{
    rt_flag_set(&sh->computing, 1);
    const double start = rt_now();
    double until = start + COMPUTE_S;
    if (threaded) {
        while (rt_flag_get(&sh->events) < events && rt_now() - start < COMPUTE_MAX_S)
            rt_compute(0.01);
        if (rt_now() + SLACK_S > until) until = rt_now() + SLACK_S;
    }
    while (rt_now() < until)
        rt_compute(0.01);
    rt_flag_set(&sh->computing, 2);
}

/* An observer saw its event (after reading the computing rank's state). */
static void observed(void)
{
    __atomic_fetch_add(&sh->events, 1, __ATOMIC_SEQ_CST);
}

/* Another rank: waits (no MPI call needed) until the computing rank computes. */
static void await_compute(void)
{
    while (rt_flag_get(&sh->computing) == 0)
        usleep(1000);
}

/* A single MPI_Test of `r` after computing: must complete in thread mode. */
static void single_test(MPI_Request *r, const char *scenario, const char *what)
{
    int flag = 0;
    MPI_CHK(MPI_Test(r, &flag, MPI_STATUS_IGNORE));
    if (threaded)
        CHECK(flag, "%s: after at least %.2f s of computing, the first MPI_Test of the %s "
              "request did not complete it", scenario, COMPUTE_S, what);
    else
        printf("%s (inline): first MPI_Test of the %s request after computing: %s\n", scenario,
               what, flag ? "complete" : "pending");
    if (!flag)
        MPI_CHK(MPI_Wait(r, MPI_STATUS_IGNORE));
}

/* An observer found the computing rank in state `state` (1 = still computing) when the
 * event happened. */
static void overlap(int state, const char *scenario, const char *event)
{
    if (threaded)
        CHECK(state == 1, "%s: %s only after the computing rank had stopped computing "
              "(no asynchronous progress)", scenario, event);
    printf("%s: %s %s\n", scenario, event,
           state == 1 ? "while the other rank computed" : "after the other rank computed");
    fflush(stdout);
}

/* ------------------------------------------------------------------ late post */
static void late_post(MPI_Group g1, MPI_Group g0)
{
    int *mem = (int *) w.base;
    const char *sc = "late post";
    reset();
    if (me == 0) {
        int vals[3] = { 111, 222, 333 };
        MPI_Request open, close;
        MPI_CHK(MPIX_Win_istart(g1, 0, w.win, &open));
        MPI_CHK(MPI_Put(&vals[0], 1, MPI_INT, 1, rt_disp(&w, 1, 0), 1, MPI_INT, w.win));
        MPI_CHK(MPI_Put(&vals[1], 1, MPI_INT, 1, rt_disp(&w, 1, 1), 1, MPI_INT, w.win));
        MPI_CHK(MPI_Accumulate(&vals[2], 1, MPI_INT, 1, rt_disp(&w, 1, 2), 1, MPI_INT, MPI_SUM,
                               w.win));
        MPI_CHK(MPIX_Win_icomplete(w.win, &close));
        compute(1);
        int td = rt_flag_get(&sh->target_done);
        single_test(&close, sc, "icomplete");
        MPI_CHK(MPI_Wait(&open, MPI_STATUS_IGNORE));
        if (threaded)
            CHECK(td != 0, "%s: the target's MPI_Win_wait had not returned when the origin "
                  "stopped computing", sc);
    } else if (me == 1) {
        await_compute();
        usleep((useconds_t) (DELAY_S * 1e6));
        MPI_CHK(MPI_Win_post(g0, 0, w.win));
        MPI_CHK(MPI_Win_wait(w.win));
        int state = rt_flag_get(&sh->computing);
        rt_flag_set(&sh->target_done, state);
        observed();
        overlap(state, sc, "the target's MPI_Win_wait returned");
        CHECK(mem[0] == 111 && mem[1] == 222 && mem[2] == -1 + 333,
              "%s: after MPI_Win_wait the target holds %d %d %d, expected 111 222 332", sc,
              mem[0], mem[1], mem[2]);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ------------------------------------------------------------------ lock hand-over */
static void lock_handover(void)
{
    int *mem = (int *) w.base;
    int holder = np >= 3 ? 2 : 1, token = 0;
    const char *sc = "lock hand-over";
    reset();
    if (me == holder) {
        int marker = 777;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win));
        MPI_CHK(MPI_Put(&marker, 1, MPI_INT, 1, rt_disp(&w, 1, 0), 1, MPI_INT, w.win));
        MPI_CHK(MPI_Win_flush(1, w.win));
        MPI_CHK(MPI_Send(&token, 1, MPI_INT, 0, TAG_HELD, MPI_COMM_WORLD));
        await_compute();
        usleep((useconds_t) (DELAY_S * 1e6));
        MPI_CHK(MPI_Win_unlock(1, w.win)); /* hands the lock over to rank 0 */
    }
    if (me == 0) {
        int val = 888, got = -5;
        MPI_Request lr, ur;
        MPI_CHK(MPI_Recv(&token, 1, MPI_INT, holder, TAG_HELD, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
        MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win, &lr));
        MPI_CHK(MPI_Put(&val, 1, MPI_INT, 1, rt_disp(&w, 1, 1), 1, MPI_INT, w.win));
        MPI_CHK(MPI_Get(&got, 1, MPI_INT, 1, rt_disp(&w, 1, 0), 1, MPI_INT, w.win));
        MPI_CHK(MPIX_Win_iunlock(1, w.win, &ur));
        compute(1);
        single_test(&ur, sc, "iunlock");
        MPI_CHK(MPI_Wait(&lr, MPI_STATUS_IGNORE));
        CHECK(got == 777, "%s: the get read %d, expected 777 (written by the lock holder)", sc,
              got);
    } else if (me == 1) {
        /* watch the memory, no MPI call: the put must land while rank 0 computes */
        int state = 0, seen = 0;
        await_compute();
        for (;;) {
            seen = __atomic_load_n(&mem[1], __ATOMIC_ACQUIRE) == 888;
            state = rt_flag_get(&sh->computing);
            if (seen || state == 2)
                break;
            usleep(500);
        }
        if (!seen)
            state = 2;
        else
            observed();
        overlap(state, sc, "the origin's put reached the target");
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 1) {
        rt_lock_self(&w);
        CHECK(mem[0] == 777 && mem[1] == 888, "%s: the target holds %d %d, expected 777 888",
              sc, mem[0], mem[1]);
        rt_unlock_self(&w);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ------------------------------------------------------------------ pending ifence */
static void pending_ifence(void)
{
    int *mem = (int *) w.base;
    const char *sc = "pending ifence";
    reset();
    if (me == 0) {
        int a = 1234, b = 5678;
        MPI_Request r[3];
        unsigned long long futile_before = 0, futile_after = 0;
        MPI_CHK(nbrma_get_counter("interrupt_futile_wakeups", &futile_before));
        MPI_CHK(MPIX_Win_ifence(0, w.win, &r[0]));
        MPI_CHK(MPI_Put(&a, 1, MPI_INT, 1, rt_disp(&w, 1, 0), 1, MPI_INT, w.win));
        MPI_CHK(MPIX_Win_ifence(0, w.win, &r[1]));
        MPI_CHK(MPI_Put(&b, 1, MPI_INT, 1, rt_disp(&w, 1, 1), 1, MPI_INT, w.win));
        MPI_CHK(MPIX_Win_ifence(MPI_MODE_NOSUCCEED, w.win, &r[2]));
        compute(np - 1);
        int td = rt_flag_get(&sh->target_done);
        int flag = 0;
        MPI_CHK(MPI_Testall(3, r, &flag, MPI_STATUSES_IGNORE));
        if (threaded)
            CHECK(flag, "%s: after at least %.2f s of computing, the first MPI_Testall of the three "
                  "ifence requests did not complete them", sc, COMPUTE_S);
        else
            printf("%s (inline): first MPI_Testall of the ifence requests after computing: "
                   "%s\n", sc, flag ? "complete" : "pending");
        if (!flag)
            MPI_CHK(MPI_Waitall(3, r, MPI_STATUSES_IGNORE));
        if (threaded)
            CHECK(td != 0, "%s: the target's last fence had not returned when the origin "
                  "stopped computing", sc);
        MPI_CHK(nbrma_get_counter("interrupt_futile_wakeups", &futile_after));
        const char *transport = getenv("NBRMA_TRANSPORT");
        const int shm_peers = !(transport && strcmp(transport, "ucx") == 0) &&
                              !getenv("NBRMA_VIRTUAL_NODES");
        if (interrupt)
            printf("%s: %llu futile wake-ups of the origin's thread\n", sc,
                   futile_after - futile_before);
        if (interrupt && np >= 3 && shm_peers)
            CHECK(futile_after - futile_before <= 1, "%s: %llu futile wake-ups of the origin's "
                  "thread while the fences waited for a late rank (at most 1 allowed)", sc,
                  futile_after - futile_before);
    } else {
        const useconds_t stagger = me >= 2 ? (useconds_t) (STAGGER_S * 1e6) : 0;
        await_compute();
        usleep((useconds_t) (DELAY_S * 1e6));
        usleep(stagger);
        MPI_CHK(MPI_Win_fence(0, w.win));
        usleep(stagger);
        MPI_CHK(MPI_Win_fence(0, w.win));
        usleep(stagger);
        MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
        int state = rt_flag_get(&sh->computing);
        if (me == 1) {
            rt_flag_set(&sh->target_done, state);
            CHECK(mem[0] == 1234 && mem[1] == 5678, "%s: after its last fence the target "
                  "holds %d %d, expected 1234 5678", sc, mem[0], mem[1]);
        }
        observed();
        char ev[64];
        snprintf(ev, sizeof(ev), "rank %d's last fence returned", me);
        overlap(state, sc, ev);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ------------------------------------------------------------------ busy target */
static void busy_target(int round)
{
    int *mem = (int *) w.base;
    const char *sc = round == 0 ? "busy target (lock/unlock)" : "busy target (ilock/iunlock)";
    reset();
    if (me == 1) {
        int seen[64];
        compute(np - 1);
        for (int p = 0; p < np; p++) {
            if (p == 1)
                continue;
            MPI_CHK(MPI_Recv(&seen[p], 1, MPI_INT, p, TAG_PEER, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE));
            char ev[64];
            snprintf(ev, sizeof(ev), "rank %d's unlock returned", p);
            overlap(seen[p], sc, ev);
        }
        rt_lock_self(&w);
        int acc = -1;
        for (int p = 0; p < np; p++) {
            if (p == 1)
                continue;
            acc += 10 + p;
            CHECK(mem[2 + p] == 900 + p, "%s: slot of rank %d = %d, expected %d", sc, p,
                  mem[2 + p], 900 + p);
        }
        CHECK(mem[0] == acc, "%s: accumulate cell = %d, expected %d", sc, mem[0], acc);
        rt_unlock_self(&w);
    } else if (np <= 64) {
        int val = 900 + me, accv = 10 + me, got = -5;
        MPI_Request r;
        await_compute();
        if (round == 0) {
            MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win));
        } else {
            MPI_CHK(MPIX_Win_ilock(MPI_LOCK_SHARED, 1, 0, w.win, &r));
            MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        }
        MPI_CHK(MPI_Put(&val, 1, MPI_INT, 1, rt_disp(&w, 1, 2 + me), 1, MPI_INT, w.win));
        MPI_CHK(MPI_Accumulate(&accv, 1, MPI_INT, 1, rt_disp(&w, 1, 0), 1, MPI_INT, MPI_SUM,
                               w.win));
        MPI_CHK(MPI_Win_flush(1, w.win));
        MPI_CHK(MPI_Get(&got, 1, MPI_INT, 1, rt_disp(&w, 1, 2 + me), 1, MPI_INT, w.win));
        if (round == 0) {
            MPI_CHK(MPI_Win_unlock(1, w.win));
        } else {
            MPI_CHK(MPIX_Win_iunlock(1, w.win, &r));
            MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        }
        int state = rt_flag_get(&sh->computing);
        observed();
        CHECK(got == val, "%s: get read %d, expected %d", sc, got, val);
        MPI_CHK(MPI_Send(&state, 1, MPI_INT, 1, TAG_PEER, MPI_COMM_WORLD));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* Number of threads of this process (/proc/self/task entries), or -1. */
static int count_tasks(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* ------------------------------------------------------------------ bogus */
static void bogus(void)
{
    for (int f = 0; f < RT_NFLAVORS; f++) {
        MPI_Win win = MPI_WIN_NULL;
        void *base = NULL;
        static int buf[4];
        int rc, cls = -1, len = 0;
        char msg[MPI_MAX_ERROR_STRING] = "";
        switch (f) {
        case RT_CREATE:
            rc = MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                                &win);
            break;
        case RT_ALLOCATE:
            rc = MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
            break;
        case RT_SHARED:
            rc = MPI_Win_allocate_shared(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
            break;
        default:
            rc = MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
            break;
        }
        CHECK(rc != MPI_SUCCESS, "NBRMA_PROGRESS=bogus: %s window creation succeeded",
              rt_flavor_names[f]);
        if (rc == MPI_SUCCESS) {
            MPI_CHK(MPI_Win_free(&win));
            continue;
        }
        MPI_CHK(MPI_Error_class(rc, &cls));
        /* MPI_ERR_OTHER or MPI_ERR_INFO (nbrma: MPI_ERR_INFO, as for a bad
         * NBRMA_TRANSPORT); not MPI_ERR_INTERN: the user's setting is wrong, not nbrma */
        CHECK(cls == MPI_ERR_INFO || cls == MPI_ERR_OTHER, "NBRMA_PROGRESS=bogus: %s window "
              "creation failed with class %d, expected MPI_ERR_INFO (%d) or MPI_ERR_OTHER (%d)",
              rt_flavor_names[f], cls, MPI_ERR_INFO, MPI_ERR_OTHER);
        MPI_CHK(MPI_Error_string(rc, msg, &len));
        CHECK(strstr(msg, "NBRMA_PROGRESS") != NULL && strstr(msg, "bogus") != NULL,
              "NBRMA_PROGRESS=bogus: %s window creation's message \"%s\" does not name "
              "NBRMA_PROGRESS and bogus", rt_flavor_names[f], msg);
        CHECK(win == MPI_WIN_NULL, "NBRMA_PROGRESS=bogus: failed %s creation left a window",
              rt_flavor_names[f]);
        if (me == 0 && f == 0) {
            printf("NBRMA_PROGRESS=bogus: %s\n", msg);
            fflush(stdout);
        }
    }
    /* MPI itself still works */
    int one = 1, sum = 0;
    MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == np, "MPI_Allreduce after the failed creations gave %d", sum);
}

/* ------------------------------------------------------------------ nothing waits */
/* Rank 0 has no epoch pending and computes 300 ms; meanwhile rank 1 posts an exposure
 * to it, which rings rank 0's bell (the grant counter is a watched word). Nothing of
 * rank 0 waits for it, so in interrupt mode the helper must not wake rank 0's thread
 * (a run where nothing waits shows zero wake-ups). Then rank 0 starts,
 * puts and completes; rank 1's MPI_Win_wait returns with the data. */
static void nothing_waits(MPI_Group g1, MPI_Group g0)
{
    int *mem = (int *) w.base;
    reset();
    if (me == 0) {
        unsigned long long before = 0, after = 0;
        int value = 4242;
        MPI_CHK(nbrma_get_counter("interrupt_wakeups", &before));
        rt_flag_set(&sh->computing, 1);
        rt_compute(0.3);
        MPI_CHK(nbrma_get_counter("interrupt_wakeups", &after));
        CHECK(after == before, "nothing waits: the helper woke rank 0's thread %llu times while "
              "it had no epoch pending", after - before);
        MPI_CHK(MPI_Win_start(g1, 0, w.win));
        MPI_CHK(MPI_Put(&value, 1, MPI_INT, 1, rt_disp(&w, 1, 3), 1, MPI_INT, w.win));
        MPI_CHK(MPI_Win_complete(w.win));
    } else if (me == 1) {
        await_compute();
        MPI_CHK(MPI_Win_post(g0, 0, w.win));
        MPI_CHK(MPI_Win_wait(w.win));
        CHECK(mem[3] == 4242, "nothing waits: the put holds %d", mem[3]);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* Every peer through UCX's shared-memory transports (NBRMA_TRANSPORT=ucx with
 * NBRMA_UCX_TLS or UCX_TLS naming sm, posix or sysv, or left to UCX): peers reach our
 * memory UCX allocated with stores, which ring no bell and raise no worker event. */
static int ucx_stores(void)
{
    const char *transport = getenv("NBRMA_TRANSPORT");
    const char *tls = getenv("NBRMA_UCX_TLS") ? getenv("NBRMA_UCX_TLS") : getenv("UCX_TLS");
    if (!transport || strcmp(transport, "ucx") != 0)
        return 0;
    return !tls || strstr(tls, "sm") || strstr(tls, "posix") || strstr(tls, "sysv") ||
        strstr(tls, "all");
}

/* NBRMA_PROGRESS=interrupt: the helper (or, for peers over UCX, the worker's events)
 * woke the origin's thread: it computed while its epochs waited on the target's post,
 * the hand-over, the others' fences; over UCX's stores (ucx_stores) its timed sweeps
 * served it. Futile helper wake-ups (the sweep after them moved nothing) stay few; the
 * helper runs. Other modes: every count is 0. */
static void check_wakeups(const char *when)
{
    unsigned long long wakeups = 0, futile = 0, isweeps = 0, helpers = 0, helper_pid = 0, events = 0;
    MPI_CHK(nbrma_get_counter("interrupt_wakeups", &wakeups));
    MPI_CHK(nbrma_get_counter("interrupt_event_wakeups", &events));
    MPI_CHK(nbrma_get_counter("interrupt_futile_wakeups", &futile));
    MPI_CHK(nbrma_get_counter("interrupt_sweeps", &isweeps));
    MPI_CHK(nbrma_get_counter("helpers", &helpers));
    MPI_CHK(nbrma_get_counter("helper_pid", &helper_pid));
    printf("[%d] after %s: interrupt_wakeups = %llu, futile = %llu, event wake-ups = %llu, "
           "interrupt_sweeps = %llu, helpers = %llu\n", me, when, wakeups, futile, events, isweeps,
           helpers);
    fflush(stdout);
    if (!interrupt) {
        CHECK(wakeups == 0 && events == 0 && isweeps == 0 && helpers == 0,
              "interrupt counters are not 0 without NBRMA_PROGRESS=interrupt");
        return;
    }
    CHECK(helpers == 1 && helper_pid > 0, "helpers = %llu, helper_pid = %llu", helpers, helper_pid);
    CHECK(helper_pid == 0 || kill((pid_t) helper_pid, 0) == 0, "the helper (pid %llu) is not "
          "running", helper_pid);
    if (me == 0) {
        if (ucx_stores())
            CHECK(isweeps > 0, "no sweep of the origin's thread after %s", when);
        else /* peers over UCX (runtests-ucx, -mixed) wake it through the worker's events */
            CHECK(wakeups - futile + events > 0, "no useful wake-up of the origin's thread "
                  "after %s (%llu by the helper, %llu of them futile, %llu by UCX events)", when,
                  wakeups, futile, events);
        CHECK(futile <= 4 + wakeups / 2, "too many futile wake-ups after %s: %llu of %llu",
              when, futile, wakeups);
    }
}

int main(int argc, char **argv)
{
    const char *arg = argc > 1 ? argv[1] : "thread";
    if (strcmp(arg, "thread") == 0)
        mode = M_THREAD;
    else if (strcmp(arg, "thread_multiple") == 0)
        mode = M_THREAD_MULTIPLE;
    else if (strcmp(arg, "interrupt") == 0)
        mode = M_INTERRUPT;
    else if (strcmp(arg, "interrupt_multiple") == 0)
        mode = M_INTERRUPT_MULTIPLE;
    else if (strcmp(arg, "inline") == 0)
        mode = M_INLINE;
    else if (strcmp(arg, "bogus") == 0)
        mode = M_BOGUS;
    else {
        fprintf(stderr, "progress_thread: unknown mode %s\n", arg);
        return 2;
    }
    interrupt = mode == M_INTERRUPT || mode == M_INTERRUPT_MULTIPLE;
    threaded = mode == M_THREAD || mode == M_THREAD_MULTIPLE || interrupt;
    setenv("NBRMA_PROGRESS",
           mode == M_INLINE ? "inline" : mode == M_BOGUS ? "bogus" : interrupt ? "interrupt" : "thread",
           1);
    if (mode == M_THREAD_MULTIPLE || mode == M_INTERRUPT_MULTIPLE)
        rt_init_multiple(&argc, &argv);
    else
        rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    rt_require_procs(2, "progress_thread needs 2 processes");
    if (mode == M_BOGUS) {
        bogus();
        return rt_finalize();
    }

    MPI_Group world_g, g0, g1;
    int r0 = 0, r1 = 1;
    MPI_Comm_group(MPI_COMM_WORLD, &world_g);
    MPI_Group_incl(world_g, 1, &r0, &g0);
    MPI_Group_incl(world_g, 1, &r1, &g1);
    sh = rt_shared_page(4096);
    int tasks_before = count_tasks();
    rt_win_create(RT_ALLOCATE, NINTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                  &w);
    int tasks_with = count_tasks();

    nothing_waits(g1, g0);
    late_post(g1, g0);
    lock_handover();
    pending_ifence();
    busy_target(0);
    busy_target(1);

    unsigned long long sweeps = 0;
    MPI_CHK(nbrma_get_counter("progress_thread_sweeps", &sweeps));
    printf("[%d] progress_thread_sweeps = %llu\n", me, sweeps);
    fflush(stdout);
    if (threaded && me == 0)
        CHECK(sweeps > 0, "progress_thread_sweeps = 0 on the origin with NBRMA_PROGRESS=thread");
    if (!threaded)
        CHECK(sweeps == 0, "progress_thread_sweeps = %llu with NBRMA_PROGRESS=inline", sweeps);
    check_wakeups("the four scenarios");

    /* the last window gone, the progress thread is gone too (threads of this process,
     * from /proc/self/task: nbrma's UCX context, if any, may keep threads of its own) */
    rt_win_free(&w);
    /* MPI_Win_free joined the thread; /proc/self/task may list it a moment longer (the
     * kernel releases the task after the join returned): look again for up to 2 s */
    int tasks_after = count_tasks();
    for (int tries = 0; threaded && tasks_after >= tasks_with && tries < 200; tries++) {
        usleep(10000);
        tasks_after = count_tasks();
    }
    if (me == 0) {
        printf("threads in rank 0: %d before the first window, %d with it, %d after freeing it\n",
               tasks_before, tasks_with, tasks_after);
        fflush(stdout);
    }
    if (threaded && tasks_before > 0) {
        CHECK(tasks_with > tasks_before, "no new thread after the first window creation with "
              "NBRMA_PROGRESS=thread (%d before, %d after)", tasks_before, tasks_with);
        CHECK(tasks_after < tasks_with, "the progress thread still runs after the last "
              "MPI_Win_free (%d threads with the window, %d after freeing it)", tasks_with,
              tasks_after);
    }

    /* a new window starts the thread again: the late post and the hand-over once more,
     * on a created window */
    if (me == 0)
        printf("again, on a new (created) window:\n");
    rt_win_create(RT_CREATE, NINTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                  &w);
    late_post(g1, g0);
    lock_handover();
    unsigned long long sweeps2 = 0;
    MPI_CHK(nbrma_get_counter("progress_thread_sweeps", &sweeps2));
    if (threaded && me == 0)
        CHECK(sweeps2 > sweeps, "progress_thread_sweeps did not grow (%llu) on the second "
              "window", sweeps2);
    rt_win_free(&w);

    MPI_Group_free(&g0);
    MPI_Group_free(&g1);
    MPI_Group_free(&world_g);
    munmap(sh, 4096);
    return rt_finalize();
}
