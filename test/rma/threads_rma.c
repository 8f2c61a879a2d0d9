/*
 * threads_rma: under MPI_THREAD_MULTIPLE, 4 threads per process issue RMA at once.
 *
 * Three phases, every result checked:
 *
 *   shared-lock_all  one window; the main thread opens MPI_Win_lock_all once, then 4
 *                    threads, each toward every rank in its own order, MPI_Put into
 *                    their own slot, MPI_Accumulate(SUM) into one cell every thread of
 *                    every rank adds to, MPI_Fetch_and_op(+1) on one counter per target,
 *                    complete with MPI_Win_flush or MPIX_Win_iflush + MPI_Wait (by
 *                    iteration), then MPI_Get their slot back (must read what they put)
 *                    and complete again. Main closes with MPI_Win_unlock_all.
 *   shared-per-target  the same window; thread i (i < nprocs) opens its own lock epochs
 *                    toward rank (me + i) % nprocs (a lock epoch is per process and
 *                    window, so the threads of a process target different ranks):
 *                    exclusive and shared, MPI_Win_lock/unlock and MPIX_Win_ilock/iunlock
 *                    by iteration; inside put, accumulate, fetch-and-op and a get of the
 *                    slot the previous epoch put (complete at the target since the unlock).
 *   per-thread       4 windows, one per thread, created and freed by the threads at once
 *                    (each on its own duplicate of MPI_COMM_WORLD, flavors create,
 *                    allocate, shared, dynamic); each thread then runs lock epochs toward
 *                    every rank freely, with MPIX_Win_iflush inside.
 *
 * Checked: at every target after a barrier, every slot holds what its origin put, the
 * accumulate cell holds the exact sum, the counter the exact number of fetch-and-ops; the
 * values fetched by fetch-and-op toward a target by all threads of all ranks are exactly
 * 0 .. n-1 (gathered at the target); every get read what was put; inside every exclusive
 * epoch an owner cell the epoch wrote first stays unchanged; nbrma's "rma_ops"
 * counter grew by at least the number of operations this process issued.
 *
 *   churn            each thread creates, uses (lock, put, flush, get, unlock toward the
 *                    next rank) and frees a window twice on its own communicator: the
 *                    window count, and with NBRMA_PROGRESS=thread the progress thread,
 *                    come and go while the other threads run epochs.
 *
 * Argument "thread": the same with NBRMA_PROGRESS=thread (nbrma's progress thread beside
 * the four). 2 or more processes.
 */
#include "rmatest.h"
#include "rmathreads.h"

#define NT 4
#define ITERS 24

/* Plain MPICH 4.0.2 (-DNO_NBRMA, for checking the test itself) misplaces RMA on
 * MPI_Win_allocate'd windows by 8 bytes here, so the check build uses created windows. */
#ifdef NO_NBRMA
#define SHARED_FLAVOR RT_CREATE
#define THREAD_FLAVOR(th) ((th) % 2 ? RT_DYNAMIC : RT_CREATE)
#else
#define SHARED_FLAVOR RT_ALLOCATE
#define THREAD_FLAVOR(th) ((th) % RT_NFLAVORS)
#endif

static int me, np;

/* window layout (ints): slot(o, th, k) for origin o, thread th, iteration k; then the
 * accumulate cell and the fetch-and-op counter */
static int slot_index(int o, int th, int k)
{
    return (o * NT + th) * ITERS + k;
}
static int acc_index(void)
{
    return np * NT * ITERS;
}
static int fop_index(void)
{
    return np * NT * ITERS + 1;
}
static int owner_index(void)
{
    return np * NT * ITERS + 2;
}
static int win_ints(void)
{
    return np * NT * ITERS + 3;
}

static int put_value(int phase, int target, int o, int th, int k)
{
    return 1000000 * (phase + 1) + 100000 * target + 10000 * o + 100 * th + k;
}
static int acc_value(int o, int th)
{
    return o * NT + th + 1;
}

/* ------------------------------------------------------------------ shared helpers */
typedef struct {
    int th;
    rt_win_t *w;          /* the window this thread uses */
    int phase;
    int *fetched;         /* [np][ITERS]: values fetch-and-op returned, per target */
    long ops;             /* RMA operations issued */
} targ_t;

/* Completes this process's operations toward t, remotely (`local` 0) or at least locally
 * (`local` 1: results of gets and fetches usable), in one of several ways by `how`:
 * MPI_Win_flush, MPIX_Win_iflush + MPI_Wait, MPI_Win_flush_all, MPIX_Win_iflush + an
 * MPI_Test loop, MPIX_Win_iflush_all + MPI_Wait; with `local`, also MPI_Win_flush_local
 * and MPIX_Win_iflush_local_all. The _all forms also complete other threads' operations
 * on the window, and so wait for their locks; `local` -1: only the forms toward t (where
 * other threads of this process wait for exclusive locks that ranks in a flush_all hold,
 * flush_all would close a cycle of waits between processes: a deadlock of the test). */
static void complete_flush_how(MPI_Win win, int t, int how, int local)
{
    MPI_Request r = MPI_REQUEST_NULL;
    int flag = 0;
    if (local < 0) /* this target only: 0, 1 or 3 */
        how = (how % 3 == 2) ? 3 : how % 3;
    switch (how % (local > 0 ? 7 : 5)) {
    case 0:
        MPI_CHK(MPI_Win_flush(t, win));
        return;
    case 1:
        MPI_CHK(MPIX_Win_iflush(t, win, &r));
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        break;
    case 2:
        MPI_CHK(MPI_Win_flush_all(win));
        return;
    case 3:
        MPI_CHK(MPIX_Win_iflush(t, win, &r));
        while (!flag)
            MPI_CHK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
        break;
    case 4:
        MPI_CHK(MPIX_Win_iflush_all(win, &r));
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        break;
    case 5:
        MPI_CHK(MPI_Win_flush_local(t, win));
        return;
    default:
        MPI_CHK(MPIX_Win_iflush_local_all(win, &r));
        while (!flag)
            MPI_CHK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
        break;
    }
    TCHECK(r == MPI_REQUEST_NULL, "completed flush request not freed");
}

static void complete_flush(MPI_Win win, int t, int how)
{
    complete_flush_how(win, t, how, 0);
}

/* Mutual exclusion: right after an exclusive lock an epoch puts its id into the target's
 * owner cell (and flushes); just before the unlock it reads the cell back, which no
 * other epoch may have changed in between. */
static void owner_mark(MPI_Win win, int t, MPI_Aint disp, const int *id)
{
    MPI_CHK(MPI_Put(id, 1, MPI_INT, t, disp, 1, MPI_INT, win));
    MPI_CHK(MPI_Win_flush(t, win));
}

static void owner_check(MPI_Win win, int t, MPI_Aint disp, int id, const char *what, int k)
{
    int seen = -7;
    MPI_CHK(MPI_Get(&seen, 1, MPI_INT, t, disp, 1, MPI_INT, win));
    MPI_CHK(MPI_Win_flush(t, win));
    TCHECK(seen == id, "%s: exclusive epoch %d toward %d: the owner cell changed from %d to %d "
           "inside the epoch", what, k, t, id, seen);
}

/* Resets this rank's window memory to -1 in the slots and 0 in the cells; collective. */
static void reset_window(rt_win_t *w, MPI_Comm comm)
{
    int *mem = (int *) w->base;
    int n = (int) (w->size / sizeof(int));
    rt_lock_self(w);
    for (int i = 0; i < n; i++)
        mem[i] = -1;
    rt_unlock_self(w);
    MPI_CHK(MPI_Barrier(comm));
}

/* Checks this rank's window memory after a phase: slots[o][th][k] as put, the accumulate
 * cell and counter; `who(o, th)` says whether thread th of origin o targeted us. */
static void check_target(rt_win_t *w, MPI_Comm comm, int phase, const char *name,
                         int (*who)(int o, int th), int slot_stride_threads)
{
    int *mem = (int *) w->base;
    long acc = -1, nfop = 0;
    rt_lock_self(w);
    for (int o = 0; o < np; o++)
        for (int th = 0; th < NT; th++) {
            if (!who(o, th))
                continue;
            acc += (long) ITERS * acc_value(o, th);
            nfop += ITERS;
            for (int k = 0; k < ITERS; k++) {
                int idx = slot_stride_threads ? slot_index(o, th, k) : o * ITERS + k;
                int exp = put_value(phase, me, o, th, k);
                TCHECK(mem[idx] == exp, "%s: slot of origin %d thread %d iteration %d = %d, "
                       "expected %d", name, o, th, k, mem[idx], exp);
            }
        }
    {
        int ai = slot_stride_threads ? acc_index() : np * ITERS;
        int fi = ai + 1;
        TCHECK(mem[ai] == acc, "%s: accumulate cell = %d, expected %ld", name, mem[ai], acc);
        TCHECK(mem[fi] == nfop - 1, "%s: fetch-and-op counter = %d, expected %ld", name,
               mem[fi], nfop - 1);
    }
    rt_unlock_self(w);
    (void) comm;
}

/* Gathers every origin's fetched values toward each target at that target and checks
 * they are exactly 0 .. n-1 (the counter starts at -1, so fetch-and-op(+1) returns
 * -1, 0, ..., n-2: shifted by one). fetched[t][i] has `per_origin` values per target;
 * `count[o]` is how many of origin o's values are meaningful. */
static void check_fetched(const int *fetched, int per_origin, MPI_Comm comm, const char *name)
{
    int *all = malloc(sizeof(int) * (size_t) (np * per_origin));
    for (int t = 0; t < np; t++) {
        MPI_CHK(MPI_Gather(fetched + (size_t) t * per_origin, per_origin, MPI_INT, all,
                           per_origin, MPI_INT, t, comm));
        if (t != me)
            continue;
        int n = 0;
        for (int i = 0; i < np * per_origin; i++)
            if (all[i] != -2) /* -2: no fetch-and-op in that position */
                n++;
        char *seen = calloc((size_t) n + 1, 1);
        for (int i = 0; i < np * per_origin; i++) {
            if (all[i] == -2)
                continue;
            int v = all[i] + 1;
            TCHECK(v >= 0 && v < n, "%s: a fetch-and-op returned %d, expected -1..%d", name,
                   all[i], n - 2);
            if (v >= 0 && v < n) {
                TCHECK(!seen[v], "%s: two fetch-and-ops returned %d", name, all[i]);
                seen[v] = 1;
            }
        }
        free(seen);
    }
    free(all);
}

/* ------------------------------------------------------------------ phase 1 */
static rt_win_t shared_w;
static MPI_Request lock_all_req;

static void *lock_all_thread(void *p)
{
    targ_t *a = p;
    int th = a->th;
    MPI_Win win = shared_w.win;
    int pbuf[ITERS], gbuf[ITERS], one = 1, accv = acc_value(me, th);

    for (int k = 0; k < ITERS; k++) {
        for (int j = 0; j < np; j++) {
            int t = (me + th + j) % np;
            int *fetched = &a->fetched[t * NT * ITERS + th * ITERS + k];
            MPI_Aint disp = rt_disp(&shared_w, t, slot_index(me, th, k));
            pbuf[k] = put_value(1, t, me, th, k);
            gbuf[k] = -7;
            MPI_CHK(MPI_Put(&pbuf[k], 1, MPI_INT, t, disp, 1, MPI_INT, win));
            MPI_CHK(MPI_Accumulate(&accv, 1, MPI_INT, t, rt_disp(&shared_w, t, acc_index()),
                                   1, MPI_INT, MPI_SUM, win));
            MPI_CHK(MPI_Fetch_and_op(&one, fetched, MPI_INT, t,
                                     rt_disp(&shared_w, t, fop_index()), MPI_SUM, win));
            complete_flush(win, t, k + th);
            MPI_CHK(MPI_Get(&gbuf[k], 1, MPI_INT, t, disp, 1, MPI_INT, win));
            complete_flush_how(win, t, k + th + 1, 1); /* the get's result */
            TCHECK(gbuf[k] == pbuf[k], "lock_all thread %d: get from %d iteration %d read %d, "
                   "expected %d", th, t, k, gbuf[k], pbuf[k]);
            a->ops += 4;
        }
    }
    return NULL;
}

static int who_all(int o, int th)
{
    (void) o;
    (void) th;
    return 1;
}

static void phase_lock_all(void)
{
    targ_t args[NT];
    int *fetched = malloc(sizeof(int) * (size_t) (np * NT * ITERS));
    for (int i = 0; i < np * NT * ITERS; i++)
        fetched[i] = -2;
    reset_window(&shared_w, MPI_COMM_WORLD);
    {   /* cells start at 0 and -1 */
        int *mem = (int *) shared_w.base;
        rt_lock_self(&shared_w);
        mem[acc_index()] = -1;
        mem[fop_index()] = -1;
        rt_unlock_self(&shared_w);
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    }
    unsigned long long before = 0, after = 0;
    long ops = 0;
    MPI_CHK(nbrma_get_counter("rma_ops", &before));

    /* nonblocking lock_all, completed by the main thread after the threads ran */
    MPI_CHK(MPIX_Win_ilock_all(0, shared_w.win, &lock_all_req));
    for (int i = 0; i < NT; i++)
        args[i] = (targ_t){ .th = i, .w = &shared_w, .phase = 1, .fetched = fetched };
    rt_run_threads(NT, lock_all_thread, args, sizeof(targ_t));
    MPI_CHK(MPI_Wait(&lock_all_req, MPI_STATUS_IGNORE));
    MPI_CHK(MPI_Win_unlock_all(shared_w.win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    MPI_CHK(nbrma_get_counter("rma_ops", &after));
    for (int i = 0; i < NT; i++)
        ops += args[i].ops;
#ifndef NO_NBRMA
    TCHECK(after - before >= (unsigned long long) ops,
           "lock_all: rma_ops grew by %llu, %ld operations were issued", after - before, ops);
#endif
    check_target(&shared_w, MPI_COMM_WORLD, 1, "lock_all", who_all, 1);
    check_fetched(fetched, NT * ITERS, MPI_COMM_WORLD, "lock_all");
    free(fetched);
}

/* ------------------------------------------------------------------ phase 2 */
static void *per_target_thread(void *p)
{
    targ_t *a = p;
    int th = a->th, t = (me + th) % np;
    MPI_Win win = shared_w.win;
    int pbuf[ITERS], gbuf[ITERS], one = 1, accv = acc_value(me, th);

    for (int k = 0; k < ITERS; k++) {
        int type = (k % 2 == 0) ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED;
        int nonblocking = (k / 2) % 2;
        int *fetched = &a->fetched[t * NT * ITERS + th * ITERS + k];
        MPI_Request r = MPI_REQUEST_NULL;
        pbuf[k] = put_value(2, t, me, th, k);
        gbuf[k] = -7;
        if (nonblocking) {
            MPI_CHK(MPIX_Win_ilock(type, t, 0, win, &r));
            MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
            MPI_CHK(MPI_Win_lock(type, t, 0, win));
        }
        int id = 100000 * me + 1000 * th + k;
        MPI_Aint odisp = rt_disp(&shared_w, t, owner_index());
        if (type == MPI_LOCK_EXCLUSIVE)
            owner_mark(win, t, odisp, &id);
        MPI_CHK(MPI_Put(&pbuf[k], 1, MPI_INT, t, rt_disp(&shared_w, t, slot_index(me, th, k)),
                        1, MPI_INT, win));
        MPI_CHK(MPI_Accumulate(&accv, 1, MPI_INT, t, rt_disp(&shared_w, t, acc_index()), 1,
                               MPI_INT, MPI_SUM, win));
        MPI_CHK(MPI_Fetch_and_op(&one, fetched, MPI_INT, t, rt_disp(&shared_w, t, fop_index()),
                                 MPI_SUM, win));
        if (k > 0)
            MPI_CHK(MPI_Get(&gbuf[k], 1, MPI_INT, t,
                            rt_disp(&shared_w, t, slot_index(me, th, k - 1)), 1, MPI_INT, win));
        if (k % 3 == 2)
            complete_flush_how(win, t, k / 3, -1);
        if (type == MPI_LOCK_EXCLUSIVE) {
            owner_check(win, t, odisp, id, "per-target", k);
            a->ops += 2;
        }
        if (nonblocking) {
            MPI_CHK(MPIX_Win_iunlock(t, win, &r));
            if (k % 4 == 2) {
                MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            } else {
                int flag = 0;
                while (!flag)
                    MPI_CHK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
            }
        } else {
            MPI_CHK(MPI_Win_unlock(t, win));
        }
        if (k > 0)
            TCHECK(gbuf[k] == pbuf[k - 1], "per-target thread %d: get from %d iteration %d "
                   "read %d, expected %d (put by the previous epoch)", th, t, k, gbuf[k],
                   pbuf[k - 1]);
        a->ops += k > 0 ? 4 : 3;
    }
    return NULL;
}

static int who_per_target(int o, int th)
{
    return th < np && (o + th) % np == me;
}

static void phase_per_target(void)
{
    targ_t args[NT];
    int nthreads = np < NT ? np : NT;
    int *fetched = malloc(sizeof(int) * (size_t) (np * NT * ITERS));
    for (int i = 0; i < np * NT * ITERS; i++)
        fetched[i] = -2;
    reset_window(&shared_w, MPI_COMM_WORLD);
    {
        int *mem = (int *) shared_w.base;
        rt_lock_self(&shared_w);
        mem[acc_index()] = -1;
        mem[fop_index()] = -1;
        rt_unlock_self(&shared_w);
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    }
    unsigned long long before = 0, after = 0;
    long ops = 0;
    MPI_CHK(nbrma_get_counter("rma_ops", &before));
    for (int i = 0; i < NT; i++)
        args[i] = (targ_t){ .th = i, .w = &shared_w, .phase = 2, .fetched = fetched };
    rt_run_threads(nthreads, per_target_thread, args, sizeof(targ_t));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(nbrma_get_counter("rma_ops", &after));
    for (int i = 0; i < nthreads; i++)
        ops += args[i].ops;
#ifndef NO_NBRMA
    TCHECK(after - before >= (unsigned long long) ops,
           "per-target: rma_ops grew by %llu, %ld operations were issued", after - before, ops);
#endif
    check_target(&shared_w, MPI_COMM_WORLD, 2, "per-target", who_per_target, 1);
    check_fetched(fetched, NT * ITERS, MPI_COMM_WORLD, "per-target");
    free(fetched);
}

/* ------------------------------------------------------------------ phase 3 */
static MPI_Comm thread_comm[NT];

static void *per_window_thread(void *p)
{
    targ_t *a = p;
    int th = a->th, flavor = THREAD_FLAVOR(th);
    MPI_Comm comm = thread_comm[th];
    rt_win_t w;
    int n = np * ITERS + 3, ai = np * ITERS, fi = np * ITERS + 1, oi = np * ITERS + 2;
    int pbuf[ITERS], gbuf[ITERS], one = 1, accv = acc_value(me, th);
    int *fetched = malloc(sizeof(int) * (size_t) (np * ITERS));
    char name[64];
    snprintf(name, sizeof(name), "per-thread (%s window of thread %d)",
             rt_flavor_names[flavor], th);

    rt_win_create(flavor, (MPI_Aint) n * (MPI_Aint) sizeof(int), sizeof(int), MPI_INFO_NULL,
                  comm, &w);
    {
        int *mem = (int *) w.base;
        rt_lock_self(&w);
        for (int i = 0; i < n; i++)
            mem[i] = -1;
        rt_unlock_self(&w);
        MPI_CHK(MPI_Barrier(comm));
    }
    for (int i = 0; i < np * ITERS; i++)
        fetched[i] = -2;

    for (int k = 0; k < ITERS; k++) {
        for (int j = 0; j < np; j++) {
            int t = (me + j + k) % np;
            int type = ((k + j) % 2 == 0) ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED;
            int nonblocking = (k + th) % 2;
            MPI_Aint disp = rt_disp(&w, t, me * ITERS + k);
            MPI_Request r = MPI_REQUEST_NULL;
            pbuf[k] = put_value(3, t, me, th, k);
            gbuf[k] = -7;
            if (nonblocking) {
                MPI_CHK(MPIX_Win_ilock(type, t, 0, w.win, &r));
            } else {
                MPI_CHK(MPI_Win_lock(type, t, 0, w.win));
            }
            int id = 100000 * me + 1000 * th + k;
            if (type == MPI_LOCK_EXCLUSIVE)
                owner_mark(w.win, t, rt_disp(&w, t, oi), &id);
            MPI_CHK(MPI_Put(&pbuf[k], 1, MPI_INT, t, disp, 1, MPI_INT, w.win));
            MPI_CHK(MPI_Accumulate(&accv, 1, MPI_INT, t, rt_disp(&w, t, ai), 1, MPI_INT,
                                   MPI_SUM, w.win));
            MPI_CHK(MPI_Fetch_and_op(&one, &fetched[t * ITERS + k], MPI_INT, t,
                                     rt_disp(&w, t, fi), MPI_SUM, w.win));
            complete_flush(w.win, t, k + j + th);
            MPI_CHK(MPI_Get(&gbuf[k], 1, MPI_INT, t, disp, 1, MPI_INT, w.win));
            if (type == MPI_LOCK_EXCLUSIVE) {
                owner_check(w.win, t, rt_disp(&w, t, oi), id, name, k);
                a->ops += 2;
            }
            if (nonblocking) {
                MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE)); /* the ilock's request */
                MPI_CHK(MPIX_Win_iunlock(t, w.win, &r));
                MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            } else {
                MPI_CHK(MPI_Win_unlock(t, w.win));
            }
            TCHECK(gbuf[k] == pbuf[k], "%s: get from %d iteration %d read %d, expected %d", name,
                   t, k, gbuf[k], pbuf[k]);
            a->ops += 4;
        }
    }
    MPI_CHK(MPI_Barrier(comm));

    /* this rank as the target of the thread-th window */
    {
        int *mem = (int *) w.base;
        long acc = -1;
        rt_lock_self(&w);
        for (int o = 0; o < np; o++) {
            acc += (long) ITERS * acc_value(o, th);
            for (int k = 0; k < ITERS; k++) {
                int exp = put_value(3, me, o, th, k);
                TCHECK(mem[o * ITERS + k] == exp, "%s: slot of origin %d iteration %d = %d, "
                       "expected %d", name, o, k, mem[o * ITERS + k], exp);
            }
        }
        TCHECK(mem[ai] == acc, "%s: accumulate cell = %d, expected %ld", name, mem[ai], acc);
        TCHECK(mem[fi] == np * ITERS - 1, "%s: fetch-and-op counter = %d, expected %d", name,
               mem[fi], np * ITERS - 1);
        rt_unlock_self(&w);
    }
    /* fetched values toward each target: exactly -1 .. np*ITERS-2 */
    {
        int *all = malloc(sizeof(int) * (size_t) (np * ITERS));
        for (int t = 0; t < np; t++) {
            MPI_CHK(MPI_Gather(fetched + t * ITERS, ITERS, MPI_INT, all, ITERS, MPI_INT, t,
                               comm));
            if (t != me)
                continue;
            char *seen = calloc((size_t) (np * ITERS), 1);
            for (int i = 0; i < np * ITERS; i++) {
                int v = all[i] + 1;
                TCHECK(v >= 0 && v < np * ITERS, "%s: a fetch-and-op returned %d", name, all[i]);
                if (v >= 0 && v < np * ITERS) {
                    TCHECK(!seen[v], "%s: two fetch-and-ops returned %d", name, all[i]);
                    seen[v] = 1;
                }
            }
            free(seen);
        }
        free(all);
    }
    rt_win_free(&w);
    free(fetched);
    return NULL;
}

static void phase_per_window(void)
{
    targ_t args[NT];
    unsigned long long before = 0, after = 0;
    long ops = 0;
    for (int i = 0; i < NT; i++)
        MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &thread_comm[i]));
    MPI_CHK(nbrma_get_counter("rma_ops", &before));
    for (int i = 0; i < NT; i++)
        args[i] = (targ_t){ .th = i, .phase = 3 };
    rt_run_threads(NT, per_window_thread, args, sizeof(targ_t));
    MPI_CHK(nbrma_get_counter("rma_ops", &after));
    for (int i = 0; i < NT; i++)
        ops += args[i].ops;
#ifndef NO_NBRMA
    TCHECK(after - before >= (unsigned long long) ops,
           "per-thread: rma_ops grew by %llu, %ld operations were issued", after - before, ops);
#endif
    for (int i = 0; i < NT; i++)
        MPI_CHK(MPI_Comm_free(&thread_comm[i]));
}

/* ------------------------------------------------------------------ phase 4 */
#define CHURN 2

/* Each thread creates, uses and frees a window CHURN times on its own communicator, so
 * the process's window count (and, with NBRMA_PROGRESS=thread, the progress thread)
 * comes and goes while other threads run epochs. */
static void *churn_thread(void *p)
{
    targ_t *a = p;
    int th = a->th, right = (me + 1) % np, left = (me + np - 1) % np;
    MPI_Comm comm = thread_comm[th];
    for (int i = 0; i < CHURN; i++) {
        rt_win_t w;
        int flavor = (i + th) % 2 ? RT_CREATE : SHARED_FLAVOR;
        int v = 1000 * me + 10 * th + i, got = -1;
        rt_win_create(flavor, 4 * sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &w);
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w.win));
        MPI_CHK(MPI_Put(&v, 1, MPI_INT, right, rt_disp(&w, right, 1), 1, MPI_INT, w.win));
        MPI_CHK(MPI_Win_flush(right, w.win));
        MPI_CHK(MPI_Get(&got, 1, MPI_INT, right, rt_disp(&w, right, 1), 1, MPI_INT, w.win));
        MPI_CHK(MPI_Win_unlock(right, w.win));
        TCHECK(got == v, "churn thread %d window %d: get read %d, expected %d", th, i, got, v);
        MPI_CHK(MPI_Barrier(comm));
        rt_lock_self(&w);
        int exp = 1000 * left + 10 * th + i;
        TCHECK(((int *) w.base)[1] == exp, "churn thread %d window %d: slot = %d, expected %d",
               th, i, ((int *) w.base)[1], exp);
        rt_unlock_self(&w);
        rt_win_free(&w);
        a->ops += 2;
    }
    return NULL;
}

static void phase_churn(void)
{
    targ_t args[NT];
    for (int i = 0; i < NT; i++)
        MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &thread_comm[i]));
    for (int i = 0; i < NT; i++)
        args[i] = (targ_t){ .th = i, .phase = 4 };
    rt_run_threads(NT, churn_thread, args, sizeof(targ_t));
    for (int i = 0; i < NT; i++)
        MPI_CHK(MPI_Comm_free(&thread_comm[i]));
}

int main(int argc, char **argv)
{
    rt_init_multiple(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    rt_win_create(SHARED_FLAVOR, (MPI_Aint) win_ints() * (MPI_Aint) sizeof(int), sizeof(int),
                  MPI_INFO_NULL, MPI_COMM_WORLD, &shared_w);
    double t0 = rt_now(), t1, t2, t3;
    phase_lock_all();
    t1 = rt_now();
    phase_per_target();
    t2 = rt_now();
    rt_win_free(&shared_w);
    phase_per_window();
    t3 = rt_now();
    phase_churn();
    if (me == 0) {
        printf("seconds: shared-lock_all %.2f, shared-per-target %.2f, per-thread %.2f, "
               "churn %.2f\n", t1 - t0, t2 - t1, t3 - t2, rt_now() - t3);
        fflush(stdout);
    }
    return rt_finalize();
}
