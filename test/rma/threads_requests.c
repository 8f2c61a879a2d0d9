/*
 * threads_requests: nbrma requests and blocking calls shared between threads under
 * MPI_THREAD_MULTIPLE.
 *
 *   handover   threads 0 and 1 each open lock epochs back to back on their own window
 *              toward every rank (MPIX_Win_ilock, put, MPIX_Win_iflush, get of the slot
 *              the previous epoch toward that rank put, accumulate, MPIX_Win_iunlock)
 *              without completing anything; they hand every request over through a
 *              shared array. Threads 2 and 3 complete them (thread 2 the even entries of
 *              both arrays with MPI_Wait, thread 3 the odd ones with an MPI_Test loop) and
 *              check each get once its epoch's iunlock request completed.
 *   waitall    thread 0 exchanges messages with every rank in MPI_Waitall rounds; thread
 *              1 runs lock/put/get/accumulate/unlock epochs; thread 2 puts MPIX_Win_iunlock
 *              requests and p2p requests in one MPI_Waitall; thread 3 runs MPI_Barrier
 *              rounds on its own communicator.
 *   blocked    rank 1 holds the exclusive lock on its own memory. On rank 0, thread A
 *              locks rank 1 exclusively, puts, gets and stays blocked in MPI_Win_unlock
 *              (round 0), in MPI_Wait on an MPIX_Win_iunlock request (round 1), or in
 *              MPI_Waitall on that and a second epoch's toward rank 1, opened behind it and
 *              so deferred (round 2), while
 *              thread B runs a whole lock epoch (lock, put, accumulate, flush, get,
 *              unlock) and then tells rank 1 to release. B's epoch is on another window
 *              toward rank 1 as well (default), or, with the argument "same_window", on
 *              A's window toward another target (rank 2, or rank 0 itself with 2
 *              processes; MPI allows one process's lock epochs toward different targets of
 *              one window at once). Checked with flags: B's epoch completed while A was
 *              blocked (A finds B's done flag set when its unlock returns, and rank 1 got
 *              B's message instead of giving up after a generous 15 s: a failure, not a
 *              hang); A's get read what rank 1 wrote under its lock; rank 1's memory did
 *              not change while it held its lock.
 *
 * At every target after a barrier: every slot as put, accumulate cells exact.
 * No argument: handover, waitall, blocked (other window); "same_window": blocked only;
 * "thread": with NBRMA_PROGRESS=thread (nbrma's progress thread beside the four).
 * 2 or more processes.
 */
#include "rmatest.h"
#include "rmathreads.h"

#define NT 4
#define K 16            /* epochs per producer and target (handover) */
#define ROUNDS 20       /* waitall rounds */

/* Plain MPICH 4.0.2 (-DNO_NBRMA, for checking the test itself) misplaces RMA on
 * MPI_Win_allocate'd windows by 8 bytes here, so the check build uses created windows. */
#ifdef NO_NBRMA
#define ALLOCATE RT_CREATE
#else
#define ALLOCATE RT_ALLOCATE
#endif

static int me, np;

/* ================================================================== handover */
#define NPROD 2
typedef struct {
    MPI_Request req;
    int target, k, is_unlock;
    volatile int published;   /* 1 once req is set; 2 once completed */
} slot_t;

static rt_win_t hw[NPROD];                      /* one window per producer */
static slot_t *hslots[NPROD];                   /* [np*K*2] per producer */
static int *hput[NPROD], *hget[NPROD];          /* [np][K] buffers */

static int hvalue(int p, int target, int o, int k)
{
    return 1000000 + 100000 * p + 10000 * target + 100 * o + k;
}

static void *producer(void *arg)
{
    int p = *(int *) arg, n = 0;
    /* The origin of accumulates in epochs the consumers complete after this thread has
     * returned (a deferred epoch reads it then): it must outlive the thread. */
    static const int one = 1;
    rt_win_t *w = &hw[p];
    for (int k = 0; k < K; k++)
        for (int j = 0; j < np; j++) {
            int t = (me + j) % np;
            MPI_Request lr;
            int type = (k + p) % 2 ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE;
            hput[p][t * K + k] = hvalue(p, t, me, k);
            MPI_CHK(MPIX_Win_ilock(type, t, 0, w->win, &lr));
            MPI_CHK(MPI_Wait(&lr, MPI_STATUS_IGNORE)); /* opening request: already complete */
            MPI_CHK(MPI_Put(&hput[p][t * K + k], 1, MPI_INT, t, rt_disp(w, t, me * K + k), 1,
                            MPI_INT, w->win));
            /* the flush request goes to a consumer */
            slot_t *s = &hslots[p][n++];
            s->target = t;
            s->k = k;
            s->is_unlock = 0;
            MPI_CHK(MPIX_Win_iflush(t, w->win, &s->req));
            rt_flag_set(&s->published, 1);
            if (k > 0)
                MPI_CHK(MPI_Get(&hget[p][t * K + k], 1, MPI_INT, t,
                                rt_disp(w, t, me * K + k - 1), 1, MPI_INT, w->win));
            MPI_CHK(MPI_Accumulate(&one, 1, MPI_INT, t, rt_disp(w, t, np * K), 1, MPI_INT,
                                   MPI_SUM, w->win));
            s = &hslots[p][n++];
            s->target = t;
            s->k = k;
            s->is_unlock = 1;
            MPI_CHK(MPIX_Win_iunlock(t, w->win, &s->req));
            rt_flag_set(&s->published, 1);
        }
    return NULL;
}

static void *consumer(void *arg)
{
    int parity = *(int *) arg; /* 0: MPI_Wait on even entries; 1: MPI_Test on odd ones */
    for (int i = parity; i < np * K * 2; i += 2)
        for (int p = 0; p < NPROD; p++) {
            slot_t *s = &hslots[p][i];
            while (rt_flag_get(&s->published) != 1)
                sched_yield();
            if (parity == 0) {
                MPI_CHK(MPI_Wait(&s->req, MPI_STATUS_IGNORE));
            } else {
                int flag = 0;
                while (!flag)
                    MPI_CHK(MPI_Test(&s->req, &flag, MPI_STATUS_IGNORE));
            }
            TCHECK(s->req == MPI_REQUEST_NULL, "handover: completed request not freed");
            if (s->is_unlock && s->k > 0) {
                int got = hget[p][s->target * K + s->k];
                int exp = hvalue(p, s->target, me, s->k - 1);
                TCHECK(got == exp, "handover: producer %d epoch %d toward %d: get read %d, "
                       "expected %d (put by the previous epoch)", p, s->k, s->target, got, exp);
            }
            rt_flag_set(&s->published, 2);
        }
    return NULL;
}

static void *handover_thread(void *arg)
{
    int th = *(int *) arg;
    if (th < NPROD) {
        producer(&th);
    } else {
        int parity = th - NPROD;
        consumer(&parity);
    }
    return NULL;
}

static void run_handover(void)
{
    int ids[NT];
    for (int p = 0; p < NPROD; p++) {
        rt_win_create(p == 0 ? ALLOCATE : RT_CREATE,
                      (MPI_Aint) (np * K + 1) * (MPI_Aint) sizeof(int), sizeof(int),
                      MPI_INFO_NULL, MPI_COMM_WORLD, &hw[p]);
        hslots[p] = calloc((size_t) (np * K * 2), sizeof(slot_t));
        hput[p] = calloc((size_t) (np * K), sizeof(int));
        hget[p] = calloc((size_t) (np * K), sizeof(int));
    }
    for (int i = 0; i < NT; i++)
        ids[i] = i;
    rt_run_threads(NT, handover_thread, ids, sizeof(int));
    for (int p = 0; p < NPROD; p++)
        for (int i = 0; i < np * K * 2; i++)
            TCHECK(hslots[p][i].published == 2, "handover: request %d of producer %d not "
                   "completed", i, p);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    for (int p = 0; p < NPROD; p++) {
        int *mem = (int *) hw[p].base;
        rt_lock_self(&hw[p]);
        for (int o = 0; o < np; o++)
            for (int k = 0; k < K; k++)
                TCHECK(mem[o * K + k] == hvalue(p, me, o, k), "handover: window %d slot of "
                       "origin %d epoch %d = %d, expected %d", p, o, k, mem[o * K + k],
                       hvalue(p, me, o, k));
        TCHECK(mem[np * K] == np * K, "handover: window %d accumulate cell = %d, expected %d",
               p, mem[np * K], np * K);
        rt_unlock_self(&hw[p]);
        rt_win_free(&hw[p]);
        free(hslots[p]);
        free(hput[p]);
        free(hget[p]);
    }
}

/* ================================================================== waitall */
static MPI_Comm wcomm[NT];
static rt_win_t ww;             /* thread 1: slots [origin][ROUNDS], then a cell */
static rt_win_t ww2;            /* thread 2: slots [origin][ROUNDS] */

static int wslot1(int o, int r)
{
    return o * ROUNDS + r;
}
static int wcell(void)
{
    return np * ROUNDS;
}
static int wvalue(int th, int target, int o, int r)
{
    return 2000000 + 100000 * th + 10000 * target + 100 * o + r;
}

static void *waitall_thread(void *arg)
{
    int th = *(int *) arg;
    MPI_Comm comm = wcomm[th];
    int *sendv = malloc(sizeof(int) * (size_t) np), *recvv = malloc(sizeof(int) * (size_t) np);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t) (4 * np));
    int *pbuf = malloc(sizeof(int) * (size_t) (np * ROUNDS));
    int *gbuf = malloc(sizeof(int) * (size_t) (np * ROUNDS));

    for (int r = 0; r < ROUNDS; r++) {
        int n = 0;
        switch (th) {
        case 0: /* p2p rounds in MPI_Waitall */
            for (int q = 0; q < np; q++) {
                if (q == me)
                    continue;
                sendv[q] = 100 * me + r;
                recvv[q] = -1;
                MPI_CHK(MPI_Irecv(&recvv[q], 1, MPI_INT, q, r, comm, &reqs[n++]));
                MPI_CHK(MPI_Isend(&sendv[q], 1, MPI_INT, q, r, comm, &reqs[n++]));
            }
            MPI_CHK(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
            for (int q = 0; q < np; q++)
                if (q != me)
                    TCHECK(recvv[q] == 100 * q + r, "waitall: round %d message from %d = %d, "
                           "expected %d", r, q, recvv[q], 100 * q + r);
            break;
        case 1: /* blocking lock epochs toward everyone */
            for (int j = 0; j < np; j++) {
                int t = (me + j + r) % np, one = 1;
                pbuf[t * ROUNDS + r] = wvalue(1, t, me, r);
                gbuf[t * ROUNDS + r] = -7;
                MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, ww.win));
                MPI_CHK(MPI_Put(&pbuf[t * ROUNDS + r], 1, MPI_INT, t,
                                rt_disp(&ww, t, wslot1(me, r)), 1, MPI_INT, ww.win));
                MPI_CHK(MPI_Accumulate(&one, 1, MPI_INT, t, rt_disp(&ww, t, wcell()), 1,
                                       MPI_INT, MPI_SUM, ww.win));
                if (r > 0)
                    MPI_CHK(MPI_Get(&gbuf[t * ROUNDS + r], 1, MPI_INT, t,
                                    rt_disp(&ww, t, wslot1(me, r - 1)), 1, MPI_INT, ww.win));
                MPI_CHK(MPI_Win_unlock(t, ww.win));
                if (r > 0)
                    TCHECK(gbuf[t * ROUNDS + r] == wvalue(1, t, me, r - 1), "waitall: thread 1 "
                           "round %d get from %d read %d, expected %d", r, t,
                           gbuf[t * ROUNDS + r], wvalue(1, t, me, r - 1));
            }
            break;
        case 2: /* MPIX_Win_iunlock requests (own window) and p2p requests in one
                 * MPI_Waitall */
            for (int q = 0; q < np; q++) {
                int t = (me + q) % np;
                MPI_Request lr;
                pbuf[t * ROUNDS + r] = wvalue(2, t, me, r);
                MPI_CHK(MPIX_Win_ilock(MPI_LOCK_SHARED, t, 0, ww2.win, &lr));
                reqs[n++] = lr;
                MPI_CHK(MPI_Put(&pbuf[t * ROUNDS + r], 1, MPI_INT, t,
                                rt_disp(&ww2, t, wslot1(me, r)), 1, MPI_INT, ww2.win));
                MPI_CHK(MPIX_Win_iunlock(t, ww2.win, &reqs[n++]));
                if (q != 0) {
                    sendv[q] = 7 * me + r;
                    recvv[q] = -1;
                    MPI_CHK(MPI_Irecv(&recvv[q], 1, MPI_INT, t, r, comm, &reqs[n++]));
                }
            }
            for (int q = 1; q < np; q++) {
                int t = (me - q + np) % np;
                MPI_CHK(MPI_Isend(&sendv[q], 1, MPI_INT, t, r, comm, &reqs[n++]));
            }
            MPI_CHK(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
            for (int i = 0; i < n; i++)
                TCHECK(reqs[i] == MPI_REQUEST_NULL, "waitall: thread 2 request %d not freed", i);
            for (int q = 1; q < np; q++) {
                int t = (me + q) % np;
                TCHECK(recvv[q] == 7 * t + r, "waitall: thread 2 round %d message from %d = %d, "
                       "expected %d", r, t, recvv[q], 7 * t + r);
            }
            break;
        case 3: /* barriers */
            MPI_CHK(MPI_Barrier(comm));
            break;
        }
    }
    free(sendv);
    free(recvv);
    free(reqs);
    free(pbuf);
    free(gbuf);
    return NULL;
}

static void run_waitall(void)
{
    int ids[NT];
    rt_win_create(ALLOCATE, (MPI_Aint) (np * ROUNDS + 1) * (MPI_Aint) sizeof(int),
                  sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &ww);
    rt_win_create(RT_CREATE, (MPI_Aint) (np * ROUNDS) * (MPI_Aint) sizeof(int), sizeof(int),
                  MPI_INFO_NULL, MPI_COMM_WORLD, &ww2);
    for (int i = 0; i < NT; i++) {
        ids[i] = i;
        MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &wcomm[i]));
    }
    rt_run_threads(NT, waitall_thread, ids, sizeof(int));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    {
        int *mem = (int *) ww.base;
        rt_lock_self(&ww);
        for (int o = 0; o < np; o++)
            for (int r = 0; r < ROUNDS; r++)
                TCHECK(mem[wslot1(o, r)] == wvalue(1, me, o, r), "waitall: slot of origin %d "
                       "round %d = %d, expected %d", o, r, mem[wslot1(o, r)], wvalue(1, me, o, r));
        TCHECK(mem[wcell()] == np * ROUNDS, "waitall: accumulate cell = %d, expected %d",
               mem[wcell()], np * ROUNDS);
        rt_unlock_self(&ww);
        mem = (int *) ww2.base;
        rt_lock_self(&ww2);
        for (int o = 0; o < np; o++)
            for (int r = 0; r < ROUNDS; r++)
                TCHECK(mem[wslot1(o, r)] == wvalue(2, me, o, r), "waitall: thread 2 window slot "
                       "of origin %d round %d = %d, expected %d", o, r, mem[wslot1(o, r)],
                       wvalue(2, me, o, r));
        rt_unlock_self(&ww2);
    }
    for (int i = 0; i < NT; i++)
        MPI_CHK(MPI_Comm_free(&wcomm[i]));
    rt_win_free(&ww);
    rt_win_free(&ww2);
}

/* ================================================================== blocked */
#define TAG_HELD 301
#define TAG_RELEASE 302
#define MARKER 4242
#define GIVE_UP_SECONDS 15.0

static rt_win_t bw;             /* [0]: rank 1's marker, [1]: thread A's put */
static rt_win_t bw2;            /* B's window (variant "other window") */
static rt_win_t *bwin;          /* the window B uses: &bw2, or &bw (variant "same window") */
static volatile int a_in_epoch, b_done;
static int other_target;
static const char *variant;

static void *blocked_a(void *arg)
{
    int round = *(int *) arg, val = 5000 + round, got = -1;
    MPI_Request r;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, bw.win));
    MPI_CHK(MPI_Put(&val, 1, MPI_INT, 1, rt_disp(&bw, 1, 1), 1, MPI_INT, bw.win));
    MPI_CHK(MPI_Get(&got, 1, MPI_INT, 1, rt_disp(&bw, 1, 0), 1, MPI_INT, bw.win));
    if (round == 0) {
        rt_flag_set(&a_in_epoch, 1);
        MPI_CHK(MPI_Win_unlock(1, bw.win)); /* blocks until rank 1 releases its lock */
    } else if (round == 1) {
        rt_flag_set(&a_in_epoch, 1);
        MPI_CHK(MPIX_Win_iunlock(1, bw.win, &r));
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else {
        /* a second epoch toward rank 1 behind the first: deferred until the first ends */
        MPI_Request rs[2];
        int val2 = 7000;
        MPI_CHK(MPIX_Win_iunlock(1, bw.win, &rs[0]));
        MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, 1, 0, bw.win, &r));
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Put(&val2, 1, MPI_INT, 1, rt_disp(&bw, 1, 4), 1, MPI_INT, bw.win));
        MPI_CHK(MPIX_Win_iunlock(1, bw.win, &rs[1]));
        rt_flag_set(&a_in_epoch, 1);
        MPI_CHK(MPI_Waitall(2, rs, MPI_STATUSES_IGNORE));
    }
    TCHECK(rt_flag_get(&b_done) == 1, "blocked (%s) round %d: thread A's epoch toward rank 1 "
           "ended before thread B's epoch toward rank %d completed", variant, round,
           other_target);
    TCHECK(got == MARKER + round, "blocked (%s) round %d: A's get read %d, expected %d "
           "(written by rank 1 under its lock)", variant, round, got, MARKER + round);
    return NULL;
}

static void *blocked_b(void *arg)
{
    int round = *(int *) arg, t = other_target, one = 1;
    int val = 6000 + round, got = -1, ack = 1;
    MPI_Win win = bwin->win;
    MPI_Request r;
    while (!rt_flag_get(&a_in_epoch))
        sched_yield();
    usleep(100 * 1000); /* let A get into its unlock */
    if (round == 0) {
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
    } else {
        MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, t, 0, win, &r));
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    MPI_CHK(MPI_Put(&val, 1, MPI_INT, t, rt_disp(bwin, t, 2), 1, MPI_INT, win));
    MPI_CHK(MPI_Accumulate(&one, 1, MPI_INT, t, rt_disp(bwin, t, 3), 1, MPI_INT, MPI_SUM, win));
    MPI_CHK(MPI_Win_flush(t, win));
    MPI_CHK(MPI_Get(&got, 1, MPI_INT, t, rt_disp(bwin, t, 2), 1, MPI_INT, win));
    if (round == 0) {
        MPI_CHK(MPI_Win_unlock(t, win));
    } else {
        MPI_CHK(MPIX_Win_iunlock(t, win, &r));
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    TCHECK(got == val, "blocked (%s) round %d: B's get from %d read %d, expected %d", variant,
           round, t, got, val);
    rt_flag_set(&b_done, 1);
    MPI_CHK(MPI_Send(&ack, 1, MPI_INT, 1, TAG_RELEASE, MPI_COMM_WORLD));
    return NULL;
}

static void *blocked_thread(void *arg)
{
    int *a = arg; /* a[0]: which thread, a[1]: round */
    return a[0] == 0 ? blocked_a(&a[1]) : blocked_b(&a[1]);
}

static void zero_window(rt_win_t *x)
{
    int *mem = (int *) x->base;
    rt_lock_self(x);
    for (int i = 0; i < 8; i++)
        mem[i] = 0;
    rt_unlock_self(x);
}

/* same_window: B's epoch is on A's window (toward rank 2, or rank 0 with 2 processes);
 * otherwise on a window of its own, toward rank 1 too. */
static void run_blocked(int same_window)
{
    variant = same_window ? "same window" : "other window";
    other_target = same_window ? (np >= 3 ? 2 : 0) : 1;
    rt_win_create(ALLOCATE, 8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &bw);
    rt_win_create(RT_CREATE, 8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &bw2);
    bwin = same_window ? &bw : &bw2;
    for (int round = 0; round < 3; round++) {
        int *mem = (int *) bw.base, *bmem = (int *) bwin->base, token = 0;
        a_in_epoch = 0;
        b_done = 0;
        zero_window(&bw);
        zero_window(&bw2);
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        if (me == 1) {
            int released_by_message = 0, flag = 0, release = 0;
            MPI_Request rr;
            double t0;
            MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, bw.win));
            mem[0] = MARKER + round;
            MPI_CHK(MPI_Irecv(&release, 1, MPI_INT, 0, TAG_RELEASE, MPI_COMM_WORLD, &rr));
            MPI_CHK(MPI_Send(&token, 1, MPI_INT, 0, TAG_HELD, MPI_COMM_WORLD));
            /* MPI_Test, not MPI_Iprobe: nbrma's MPI_Test also progresses nbrma, which a
             * UCX-over-tcp peer's requests to this rank need in inline mode */
            t0 = rt_now();
            while (rt_now() - t0 < GIVE_UP_SECONDS) {
                MPI_CHK(MPI_Test(&rr, &flag, MPI_STATUS_IGNORE));
                if (flag) {
                    released_by_message = 1;
                    break;
                }
                usleep(1000);
            }
            CHECK(released_by_message, "blocked (%s) round %d: no word from rank 0's thread B "
                  "after %.0f s while rank 0's thread A waited for this rank's lock: B's epoch "
                  "toward rank %d did not complete (releasing anyway)", variant, round,
                  GIVE_UP_SECONDS, other_target);
            CHECK(mem[1] == 0 && mem[4] == 0, "blocked (%s) round %d: rank 0's puts landed "
                  "(%d, %d) while this rank held its exclusive lock", variant, round, mem[1],
                  mem[4]);
            MPI_CHK(MPI_Win_unlock(1, bw.win));
            if (!released_by_message)
                MPI_CHK(MPI_Wait(&rr, MPI_STATUS_IGNORE));
        } else if (me == 0) {
            int args[2][2] = { { 0, round }, { 1, round } };
            MPI_CHK(MPI_Recv(&token, 1, MPI_INT, 1, TAG_HELD, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE));
            rt_run_threads(2, blocked_thread, args, sizeof(args[0]));
        }
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        rt_lock_self(&bw);
        if (me == 1)
            CHECK(mem[1] == 5000 + round, "blocked (%s) round %d: A's put = %d, expected %d",
                  variant, round, mem[1], 5000 + round);
        if (me == 1 && round == 2)
            CHECK(mem[4] == 7000, "blocked (%s) round %d: A's second put = %d, expected 7000",
                  variant, round, mem[4]);
        rt_unlock_self(&bw);
        rt_lock_self(bwin);
        if (me == other_target) {
            CHECK(bmem[2] == 6000 + round, "blocked (%s) round %d: B's put = %d, expected %d",
                  variant, round, bmem[2], 6000 + round);
            CHECK(bmem[3] == 1, "blocked (%s) round %d: B's accumulate = %d, expected 1",
                  variant, round, bmem[3]);
        }
        rt_unlock_self(bwin);
    }
    rt_win_free(&bw2);
    rt_win_free(&bw);
}

int main(int argc, char **argv)
{
    rt_init_multiple(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    rt_require_procs(2, "threads_requests needs 2 processes");
    if (rt_has_arg(argc, argv, "same_window")) {
        run_blocked(1);
    } else {
        run_handover();
        run_waitall();
        run_blocked(0);
    }
    return rt_finalize();
}
