/*
 * notify: notified RMA (doc/design.md §8): MPIX_Put_notify / Get_notify /
 * Accumulate_notify and their request forms, the target's notification counters and
 * MPIX_Win_notify_ithreshold requests.
 *
 * Parts (argv selects some; default all; flavor names select window flavors for the
 * parts that run over every flavor, default all four):
 *   producer     rank 0 sends MESSAGES messages to rank 1 through a ring of SLOTS slots
 *                in rank 1's window, with Put_notify + ithreshold only: rank 1 hands
 *                each slot back with a data-less Put_notify on rank 0's credit counter.
 *                Every message's payload is checked.
 *   halo1d       Jacobi-like integer stencil on a ring of ranks, ghost cells filled with
 *                Put_notify (a counter per neighbour side, double-buffered ghosts),
 *                against the same computation done serially by every rank.
 *   halo2d       the same on a 2-D periodic grid (4 counters, columns as a vector type).
 *   origins      every other rank notifies rank 0's counters ROUNDS times (put and
 *                accumulate): counts exact, data all there when the threshold fires.
 *   get          Get_notify: the target overwrites its buffer as soon as the counter
 *                says the get read it; the origin must have the old contents.
 *   epochs       one notified put per epoch kind (lock, lock_all, fence, PSCW) and per
 *                flavor, in blocking and deferred nonblocking epochs (a lock behind a
 *                lock on the same target, an access epoch before the target posts):
 *                the notification follows the replayed operation.
 *   requests     Rput_notify / Rget_notify; thresholds through Waitany/Testall mixed
 *                with point-to-point requests; MPI_Cancel (status cancelled) and
 *                MPI_Request_free of pending thresholds.
 *   resize       set_num keeps values up to the smaller size, zeroes counters that come
 *                back, fails thresholds on counters that go away; 65536 counters.
 *   interrupt    (only when named; sets NBRMA_PROGRESS=interrupt for the whole run) a
 *                threshold pending on rank 1 while rank 0 sends it 50 notifications, 2 ms
 *                apart, and rank 1 computes: the helper wakes rank 1's progress thread 0
 *                times (the thread could not complete the request anyway: only an
 *                application thread hands completions to MPICH), and the threshold
 *                completes at rank 1's MPI_Wait.
 *   errors       every error path: a bad index at the origin (and the target's memory
 *                and counters untouched), negative/too large counts, bad indices on the
 *                local calls, a threshold on a freed window, a threshold pending when its
 *                window is freed, a bad nbrma_notify_max.
 *
 * 2 to 4 processes (halo2d uses a 2 x (np/2) grid when np is even, np x 1 otherwise).
 */
#include <stdint.h>

#include "rmatest.h"

#ifdef NO_NBRMA
int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "interrupt") == 0)
            setenv("NBRMA_PROGRESS", "interrupt", 1);
    rt_init(&argc, &argv);
    if (rt_rank() == 0)
        printf("SKIP: notified RMA is nbrma's\n");
    return rt_finalize();
}
#else

static int me, np;
static int sel_flavor[RT_NFLAVORS];

static void wait_threshold(MPI_Win win, int idx, MPI_Count expected)
{
    MPI_Request req;
    MPI_CHK(MPIX_Win_notify_ithreshold(win, idx, expected, &req));
    MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
}

static MPI_Count counter(MPI_Win win, int idx)
{
    MPI_Count value = -1;
    MPI_CHK(MPIX_Win_notify_get_value(win, idx, &value));
    return value;
}

/* ------------------------------------------------------------------ producer-consumer */
#define SLOTS 16
#define SLOT_WORDS 8
#define MESSAGES 10000
enum { C_DATA = 0, C_CREDIT = 1 };

static long long payload(int m, int w)
{
    return (long long) m * 1000 + w;
}

static void producer_consumer(void)
{
    rt_win_t w;
    rt_win_create(RT_ALLOCATE, SLOTS * SLOT_WORDS * sizeof(long long), sizeof(long long),
                  MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_CHK(MPIX_Win_notify_set_num(w.win, 2));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD)); /* every rank has its counters */
    MPI_CHK(MPI_Win_lock_all(MPI_MODE_NOCHECK, w.win));
    if (me == 0) {
        /* origin buffers are MPI_Put's: untouchable until the put completes; message
         * m - SLOTS was consumed, so it arrived, so its buffer is free again */
        long long message[SLOTS][SLOT_WORDS];
        for (int m = 0; m < MESSAGES; m++) {
            if (m >= SLOTS) /* slot m % SLOTS is free once message m - SLOTS was consumed */
                wait_threshold(w.win, C_CREDIT, m - SLOTS + 1);
            for (int i = 0; i < SLOT_WORDS; i++)
                message[m % SLOTS][i] = payload(m, i);
            MPI_CHK(MPIX_Put_notify(message[m % SLOTS], SLOT_WORDS, MPI_LONG_LONG, 1,
                                    (MPI_Aint) (m % SLOTS) * SLOT_WORDS, SLOT_WORDS,
                                    MPI_LONG_LONG, C_DATA, w.win));
        }
        wait_threshold(w.win, C_CREDIT, MESSAGES);
        CHECK(counter(w.win, C_CREDIT) == MESSAGES, "producer: %lld credits, expected %d",
              (long long) counter(w.win, C_CREDIT), MESSAGES);
    } else if (me == 1) {
        const long long *slots = (const long long *) w.base;
        int bad = 0;
        for (int m = 0; m < MESSAGES; m++) {
            wait_threshold(w.win, C_DATA, m + 1);
            const long long *slot = slots + (m % SLOTS) * SLOT_WORDS;
            for (int i = 0; i < SLOT_WORDS; i++) {
                long long got = __atomic_load_n(&slot[i], __ATOMIC_RELAXED);
                if (got != payload(m, i) && bad++ < 5)
                    CHECK(0, "consumer: message %d word %d is %lld, expected %lld", m, i, got,
                          payload(m, i));
            }
            MPI_CHK(MPIX_Put_notify(NULL, 0, MPI_BYTE, 0, 0, 0, MPI_BYTE, C_CREDIT, w.win));
        }
        CHECK(bad == 0, "consumer: %d words wrong", bad);
        CHECK(counter(w.win, C_DATA) == MESSAGES, "consumer: %lld notifications, expected %d",
              (long long) counter(w.win, C_DATA), MESSAGES);
    }
    MPI_CHK(MPI_Win_unlock_all(w.win));
    rt_win_free(&w);
}

/* ------------------------------------------------------------------ halo exchange */
#define MODULUS 1000003LL

static long long initial(int global)
{
    return (long long) (global * 7919 % 1009);
}

static long long stencil(long long left, long long self, long long right)
{
    return (left + 2 * self + 3 * right + 1) % MODULUS;
}

/* 1-D: NLOC cells per rank on a periodic ring of np ranks; ghost[parity][side]. */
#define NLOC 64
#define STEPS 200

static void halo1d(void)
{
    rt_win_t w;
    /* window: 2 parities x {left ghost, right ghost} */
    rt_win_create(RT_ALLOCATE, 4 * sizeof(long long), sizeof(long long), MPI_INFO_NULL,
                  MPI_COMM_WORLD, &w);
    MPI_CHK(MPIX_Win_notify_set_num(w.win, 2)); /* 0: from the left, 1: from the right */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    const int left = (me + np - 1) % np, right = (me + 1) % np, total = NLOC * np;
    /* send[parity][side]: reused two steps later, when the neighbour's next message says
     * the put of two steps ago arrived (an origin buffer is MPI_Put's until then) */
    long long cell[NLOC], next[NLOC], send[2][2];
    long long *reference = malloc(sizeof(long long) * (size_t) total);
    long long *scratch = malloc(sizeof(long long) * (size_t) total);
    for (int i = 0; i < NLOC; i++)
        cell[i] = initial(me * NLOC + i);
    for (int g = 0; g < total; g++)
        reference[g] = initial(g);
    volatile long long *ghost = (volatile long long *) w.base;
    MPI_CHK(MPI_Win_lock_all(MPI_MODE_NOCHECK, w.win));
    for (int step = 0; step < STEPS; step++) {
        const int parity = step % 2;
        /* my first cell is my left neighbour's right ghost, my last its left's left */
        send[parity][0] = cell[0];
        send[parity][1] = cell[NLOC - 1];
        MPI_CHK(MPIX_Put_notify(&send[parity][0], 1, MPI_LONG_LONG, left, parity * 2 + 1, 1,
                                MPI_LONG_LONG, 1, w.win));
        MPI_CHK(MPIX_Put_notify(&send[parity][1], 1, MPI_LONG_LONG, right, parity * 2 + 0, 1,
                                MPI_LONG_LONG, 0, w.win));
        wait_threshold(w.win, 0, step + 1);
        wait_threshold(w.win, 1, step + 1);
        const long long gl = ghost[parity * 2 + 0], gr = ghost[parity * 2 + 1];
        for (int i = 0; i < NLOC; i++)
            next[i] = stencil(i == 0 ? gl : cell[i - 1], cell[i], i == NLOC - 1 ? gr : cell[i + 1]);
        memcpy(cell, next, sizeof cell);
        for (int g = 0; g < total; g++)
            scratch[g] = stencil(reference[(g + total - 1) % total], reference[g],
                                 reference[(g + 1) % total]);
        memcpy(reference, scratch, sizeof(long long) * (size_t) total);
    }
    MPI_CHK(MPI_Win_unlock_all(w.win));
    int bad = 0;
    for (int i = 0; i < NLOC; i++)
        bad += cell[i] != reference[me * NLOC + i];
    CHECK(bad == 0, "halo1d: %d of %d cells differ from the serial computation (cell 0: %lld vs %lld)",
          bad, NLOC, cell[0], reference[me * NLOC]);
    CHECK(counter(w.win, 0) == STEPS && counter(w.win, 1) == STEPS,
          "halo1d: counters %lld %lld, expected %d each", (long long) counter(w.win, 0),
          (long long) counter(w.win, 1), STEPS);
    free(reference);
    free(scratch);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD)); /* nobody frees while a peer still reads */
    rt_win_free(&w);
}

/* 2-D: a PX x PY periodic grid of ranks, each with an NX x NY block (row-major, x the
 * fast index). 5-point integer stencil. Ghosts: for each parity, west and east columns
 * (NY each), south and north rows (NX each). Counters: 0 W, 1 E, 2 S, 3 N (the side of
 * the ghost being filled). */
#define NX 8
#define NY 6
#define STEPS2 60
enum { G_W = 0, G_E, G_S, G_N };

static long long stencil5(long long c, long long w, long long e, long long s, long long n)
{
    return (3 * c + w + 2 * e + 5 * s + 7 * n + 1) % MODULUS;
}

static MPI_Aint ghost_offset(int parity, int side)
{
    /* words: per parity 2*NY (W, E) + 2*NX (S, N) */
    const MPI_Aint per = 2 * NY + 2 * NX;
    const MPI_Aint at[4] = { 0, NY, 2 * NY, 2 * NY + NX };
    return parity * per + at[side];
}

static void halo2d(void)
{
    const int px = np % 2 == 0 ? 2 : np, py = np % 2 == 0 ? np / 2 : 1;
    const int cx = me % px, cy = me / px;
    const int west = (cx + px - 1) % px + cy * px, east = (cx + 1) % px + cy * px;
    const int south = cx + ((cy + py - 1) % py) * px, north = cx + ((cy + 1) % py) * px;
    const int gx = NX * px, gy = NY * py;
    rt_win_t w;
    rt_win_create(RT_ALLOCATE, 2 * (2 * NY + 2 * NX) * sizeof(long long), sizeof(long long),
                  MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_CHK(MPIX_Win_notify_set_num(w.win, 4));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Datatype column;
    MPI_CHK(MPI_Type_vector(NY, 1, NX, MPI_LONG_LONG, &column));
    MPI_CHK(MPI_Type_commit(&column));
    /* send[parity]: a copy of the block the puts read (as in halo1d) */
    long long cell[NY][NX], next[NY][NX], send[2][NY][NX];
    long long *ref = malloc(sizeof(long long) * (size_t) (gx * gy));
    long long *tmp = malloc(sizeof(long long) * (size_t) (gx * gy));
    for (int y = 0; y < gy; y++)
        for (int x = 0; x < gx; x++)
            ref[y * gx + x] = initial(y * gx + x);
    for (int y = 0; y < NY; y++)
        for (int x = 0; x < NX; x++)
            cell[y][x] = ref[(cy * NY + y) * gx + cx * NX + x];
    const volatile long long *ghosts = (const volatile long long *) w.base;
    MPI_CHK(MPI_Win_lock_all(MPI_MODE_NOCHECK, w.win));
    for (int step = 0; step < STEPS2; step++) {
        const int parity = step % 2;
        /* my west column is my west neighbour's east ghost, and so on */
        memcpy(send[parity], cell, sizeof cell);
        MPI_CHK(MPIX_Put_notify(&send[parity][0][0], 1, column, west, ghost_offset(parity, G_E), NY,
                                MPI_LONG_LONG, G_E, w.win));
        MPI_CHK(MPIX_Put_notify(&send[parity][0][NX - 1], 1, column, east, ghost_offset(parity, G_W),
                                NY, MPI_LONG_LONG, G_W, w.win));
        MPI_CHK(MPIX_Put_notify(&send[parity][0][0], NX, MPI_LONG_LONG, south,
                                ghost_offset(parity, G_N), NX, MPI_LONG_LONG, G_N, w.win));
        MPI_CHK(MPIX_Put_notify(&send[parity][NY - 1][0], NX, MPI_LONG_LONG, north,
                                ghost_offset(parity, G_S), NX, MPI_LONG_LONG, G_S, w.win));
        MPI_Request reqs[4];
        for (int side = 0; side < 4; side++)
            MPI_CHK(MPIX_Win_notify_ithreshold(w.win, side, step + 1, &reqs[side]));
        MPI_CHK(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE));
        const volatile long long *gw = ghosts + ghost_offset(parity, G_W),
                                 *ge = ghosts + ghost_offset(parity, G_E),
                                 *gs = ghosts + ghost_offset(parity, G_S),
                                 *gn = ghosts + ghost_offset(parity, G_N);
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++)
                next[y][x] = stencil5(cell[y][x], x == 0 ? gw[y] : cell[y][x - 1],
                                      x == NX - 1 ? ge[y] : cell[y][x + 1],
                                      y == 0 ? gs[x] : cell[y - 1][x],
                                      y == NY - 1 ? gn[x] : cell[y + 1][x]);
        memcpy(cell, next, sizeof cell);
        for (int y = 0; y < gy; y++)
            for (int x = 0; x < gx; x++)
                tmp[y * gx + x] = stencil5(
                    ref[y * gx + x], ref[y * gx + (x + gx - 1) % gx], ref[y * gx + (x + 1) % gx],
                    ref[((y + gy - 1) % gy) * gx + x], ref[((y + 1) % gy) * gx + x]);
        memcpy(ref, tmp, sizeof(long long) * (size_t) (gx * gy));
    }
    MPI_CHK(MPI_Win_unlock_all(w.win));
    int bad = 0;
    for (int y = 0; y < NY; y++)
        for (int x = 0; x < NX; x++)
            bad += cell[y][x] != ref[(cy * NY + y) * gx + cx * NX + x];
    CHECK(bad == 0, "halo2d (%d x %d ranks): %d of %d cells differ from the serial computation",
          px, py, bad, NX * NY);
    for (int side = 0; side < 4; side++)
        CHECK(counter(w.win, side) == STEPS2, "halo2d: counter %d is %lld, expected %d", side,
              (long long) counter(w.win, side), STEPS2);
    MPI_CHK(MPI_Type_free(&column));
    free(ref);
    free(tmp);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_win_free(&w);
}

/* ------------------------------------------------------------------ many origins */
#define ROUNDS 200

static void many_origins(int flavor)
{
    rt_win_t w;
    /* rank 0: one put slot per (origin, round), then one accumulate cell */
    const MPI_Aint words = (MPI_Aint) np * ROUNDS + 1;
    rt_win_create(flavor, words * (MPI_Aint) sizeof(long long), sizeof(long long),
                  MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_CHK(MPIX_Win_notify_set_num(w.win, 3));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    const MPI_Count expected = (MPI_Count) (np - 1) * ROUNDS;
    if (me != 0) {
        /* one origin buffer per call: MPI_Put's until the epoch ends */
        static long long value[ROUNDS];
        const long long one = 1;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
        for (int r = 0; r < ROUNDS; r++) {
            value[r] = (long long) me * 100000 + r;
            MPI_CHK(MPIX_Put_notify(&value[r], 1, MPI_LONG_LONG, 0, rt_disp(&w, 0, me * ROUNDS + r),
                                    1, MPI_LONG_LONG, 0, w.win));
            MPI_CHK(MPIX_Accumulate_notify(&one, 1, MPI_LONG_LONG, 0,
                                           rt_disp(&w, 0, words - 1), 1, MPI_LONG_LONG, MPI_SUM,
                                           1, w.win));
        }
        MPI_CHK(MPI_Win_unlock(0, w.win));
    } else {
        MPI_Request reqs[2];
        MPI_CHK(MPIX_Win_notify_ithreshold(w.win, 0, expected, &reqs[0]));
        MPI_CHK(MPIX_Win_notify_ithreshold(w.win, 1, expected, &reqs[1]));
        MPI_CHK(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
        const volatile long long *mem = (const volatile long long *) w.base;
        int bad = 0;
        for (int o = 1; o < np; o++)
            for (int r = 0; r < ROUNDS; r++)
                bad += mem[o * ROUNDS + r] != (long long) o * 100000 + r;
        CHECK(bad == 0, "%s origins: %d put slots missing when the threshold fired",
              rt_flavor_names[flavor], bad);
        CHECK(mem[words - 1] == expected, "%s origins: accumulate cell %lld, expected %lld",
              rt_flavor_names[flavor], (long long) mem[words - 1], (long long) expected);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD)); /* every origin is done: counts are final */
    if (me == 0) {
        CHECK(counter(w.win, 0) == expected && counter(w.win, 1) == expected &&
                  counter(w.win, 2) == 0,
              "%s origins: counters %lld %lld %lld, expected %lld %lld 0",
              rt_flavor_names[flavor], (long long) counter(w.win, 0),
              (long long) counter(w.win, 1), (long long) counter(w.win, 2), (long long) expected,
              (long long) expected);
    } else {
        CHECK(counter(w.win, 0) == 0 && counter(w.win, 1) == 0,
              "%s origins: an origin's own counters moved", rt_flavor_names[flavor]);
    }
    rt_win_free(&w);
}

/* ------------------------------------------------------------------ get-notify */
#define GET_WORDS (1 << 17) /* 1 MiB */
#define GET_ROUNDS 6

static void get_notify(int flavor)
{
    rt_win_t w;
    rt_win_create(flavor, GET_WORDS * sizeof(long long), sizeof(long long), MPI_INFO_NULL,
                  MPI_COMM_WORLD, &w);
    MPI_CHK(MPIX_Win_notify_set_num(w.win, 1));
    long long *got = malloc(sizeof(long long) * GET_WORDS);
    long long *mem = (long long *) w.base;
    if (me == 1) {
        rt_lock_self(&w);
        for (int i = 0; i < GET_WORDS; i++)
            mem[i] = i;
        rt_unlock_self(&w);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    for (int round = 0; round < GET_ROUNDS; round++) {
        if (me == 0) {
            MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w.win));
            MPI_CHK(MPIX_Get_notify(got, GET_WORDS, MPI_LONG_LONG, 1, rt_disp(&w, 1, 0),
                                    GET_WORDS, MPI_LONG_LONG, 0, w.win));
            MPI_CHK(MPI_Win_unlock(1, w.win));
            int bad = 0;
            for (int i = 0; i < GET_WORDS; i++)
                bad += got[i] != (long long) round * GET_WORDS + i;
            CHECK(bad == 0, "%s get round %d: %d words not the contents before the overwrite",
                  rt_flavor_names[flavor], round, bad);
        } else if (me == 1) {
            /* the get has read everything once the counter moves: overwrite at once,
             * while the origin may still hold its lock */
            wait_threshold(w.win, 0, round + 1);
            for (int i = 0; i < GET_WORDS; i++)
                __atomic_store_n(&mem[i], (long long) (round + 1) * GET_WORDS + i,
                                 __ATOMIC_RELAXED);
        }
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD)); /* the next round reads the new contents */
    }
    free(got);
    rt_win_free(&w);
}

/* ------------------------------------------------------------------ epoch kinds */
enum { E_LOCK, E_LOCK_ALL, E_FENCE, E_PSCW, E_ILOCK_DEFERRED, E_LATE_POST, NEPOCHS };
static const char *epoch_names[NEPOCHS] = { "lock",     "lock_all", "fence",
                                            "pscw",     "lock deferred behind a lock",
                                            "access before the post" };

static void epochs(int flavor)
{
    rt_win_t w;
    rt_win_create(flavor, 64 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_CHK(MPIX_Win_notify_set_num(w.win, NEPOCHS));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Group world, peer;
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    const int other = me == 0 ? 1 : 0;
    MPI_CHK(MPI_Group_incl(world, 1, &other, &peer));
    int *mem = (int *) w.base;
    for (int e = 0; e < NEPOCHS; e++) {
        int value = 1000 * (e + 1) + flavor, ignored = 0;
        const MPI_Aint slot = rt_disp(&w, 1, e);
        switch (e) {
        case E_LOCK:
            if (me == 0) {
                MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win));
                MPI_CHK(MPIX_Put_notify(&value, 1, MPI_INT, 1, slot, 1, MPI_INT, e, w.win));
                MPI_CHK(MPI_Win_unlock(1, w.win));
            }
            break;
        case E_LOCK_ALL:
            if (me == 0) {
                MPI_CHK(MPI_Win_lock_all(0, w.win));
                MPI_CHK(MPIX_Put_notify(&value, 1, MPI_INT, 1, slot, 1, MPI_INT, e, w.win));
                MPI_CHK(MPI_Win_unlock_all(w.win));
            }
            break;
        case E_FENCE:
            MPI_CHK(MPI_Win_fence(0, w.win));
            if (me == 0)
                MPI_CHK(MPIX_Put_notify(&value, 1, MPI_INT, 1, slot, 1, MPI_INT, e, w.win));
            MPI_CHK(MPI_Win_fence(0, w.win));
            break;
        case E_PSCW:
            if (me == 0) {
                MPI_CHK(MPI_Win_start(peer, 0, w.win));
                MPI_CHK(MPIX_Put_notify(&value, 1, MPI_INT, 1, slot, 1, MPI_INT, e, w.win));
                MPI_CHK(MPI_Win_complete(w.win));
            } else if (me == 1) {
                MPI_CHK(MPI_Win_post(peer, 0, w.win));
                wait_threshold(w.win, e, 1); /* before MPI_Win_wait */
                CHECK(mem[e] == value, "%s pscw: %d when notified", rt_flavor_names[flavor],
                      mem[e]);
                MPI_CHK(MPI_Win_wait(w.win));
            }
            break;
        case E_ILOCK_DEFERRED:
            /* the second lock toward the same target waits for the first epoch: its
             * notified put is recorded and replayed */
            if (me == 0) {
                MPI_Request r[4];
                MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win, &r[0]));
                MPI_CHK(MPI_Put(&ignored, 1, MPI_INT, 1, rt_disp(&w, 1, 63), 1, MPI_INT, w.win));
                MPI_CHK(MPIX_Win_iunlock(1, w.win, &r[1]));
                MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win, &r[2]));
                MPI_CHK(MPIX_Put_notify(&value, 1, MPI_INT, 1, slot, 1, MPI_INT, e, w.win));
                MPI_CHK(MPIX_Win_iunlock(1, w.win, &r[3]));
                MPI_CHK(MPI_Waitall(4, r, MPI_STATUSES_IGNORE));
            }
            break;
        case E_LATE_POST:
            /* the origin's epoch opens before the target posts: deferred until then */
            if (me == 0) {
                MPI_Request r;
                MPI_CHK(MPIX_Win_istart(peer, 0, w.win, &r));
                MPI_CHK(MPI_Request_free(&r));
                MPI_CHK(MPIX_Put_notify(&value, 1, MPI_INT, 1, slot, 1, MPI_INT, e, w.win));
                MPI_CHK(MPIX_Win_icomplete(w.win, &r));
                MPI_CHK(MPI_Send(NULL, 0, MPI_BYTE, 1, 9, MPI_COMM_WORLD));
                MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            } else if (me == 1) {
                MPI_CHK(MPI_Recv(NULL, 0, MPI_BYTE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                CHECK(counter(w.win, e) == 0, "%s late post: notified before the post",
                      rt_flavor_names[flavor]);
                MPI_CHK(MPI_Win_post(peer, 0, w.win));
                wait_threshold(w.win, e, 1);
                CHECK(mem[e] == value, "%s late post: %d when notified", rt_flavor_names[flavor],
                      mem[e]);
                MPI_CHK(MPI_Win_wait(w.win));
            }
            break;
        }
        if (me == 1) {
            wait_threshold(w.win, e, 1);
            rt_lock_self(&w);
            CHECK(mem[e] == value, "%s %s: window holds %d after the notification, expected %d",
                  rt_flavor_names[flavor], epoch_names[e], mem[e], value);
            rt_unlock_self(&w);
            CHECK(counter(w.win, e) == 1, "%s %s: counter %lld, expected 1",
                  rt_flavor_names[flavor], epoch_names[e], (long long) counter(w.win, e));
        }
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    }
    MPI_CHK(MPI_Group_free(&peer));
    MPI_CHK(MPI_Group_free(&world));
    rt_win_free(&w);
}

/* ------------------------------------------------------------------ requests */
static void requests(void)
{
    rt_win_t w;
    rt_win_create(RT_ALLOCATE, 16 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                  &w);
    MPI_CHK(MPIX_Win_notify_set_num(w.win, 4));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    int *mem = (int *) w.base;
    if (me == 0) {
        int out[4] = { 11, 12, 13, 14 }, in[4] = { 0, 0, 0, 0 };
        MPI_Request r[2];
        rt_lock_self(&w); /* rank 1 will Rget these */
        mem[8] = 21;
        mem[9] = 22;
        rt_unlock_self(&w);
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w.win));
        MPI_CHK(MPIX_Rput_notify(out, 4, MPI_INT, 1, 0, 4, MPI_INT, 0, w.win, &r[0]));
        MPI_CHK(MPIX_Rget_notify(in, 2, MPI_INT, 1, 4, 2, MPI_INT, 1, w.win, &r[1]));
        MPI_CHK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        MPI_CHK(MPI_Win_unlock(1, w.win));
        CHECK(in[0] == 31 && in[1] == 32, "Rget_notify read %d %d, expected 31 32", in[0], in[1]);
        /* wake rank 1's Waitany with a message, then with a notification */
        MPI_CHK(MPI_Send(out, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w.win));
        MPI_CHK(MPIX_Put_notify(NULL, 0, MPI_INT, 1, 0, 0, MPI_INT, 2, w.win));
        MPI_CHK(MPI_Win_unlock(1, w.win));
    } else if (me == 1) {
        rt_lock_self(&w);
        mem[4] = 31;
        mem[5] = 32;
        rt_unlock_self(&w);
        int got = 0, in[2] = { 0, 0 };
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
        MPI_Request g;
        MPI_CHK(MPIX_Rget_notify(in, 2, MPI_INT, 0, 8, 2, MPI_INT, 3, w.win, &g));
        MPI_CHK(MPI_Wait(&g, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Win_unlock(0, w.win));
        CHECK(in[0] == 21 && in[1] == 22, "Rget_notify from 0 read %d %d", in[0], in[1]);
        /* put and get notifications from rank 0: Testall until both are there */
        MPI_Request t[2];
        int flag = 0;
        MPI_CHK(MPIX_Win_notify_ithreshold(w.win, 0, 1, &t[0]));
        MPI_CHK(MPIX_Win_notify_ithreshold(w.win, 1, 1, &t[1]));
        while (!flag)
            MPI_CHK(MPI_Testall(2, t, &flag, MPI_STATUSES_IGNORE));
        CHECK(mem[0] == 11 && mem[3] == 14, "Rput_notify: %d %d when notified", mem[0], mem[3]);
        /* Waitany over a receive and a threshold: the message comes first */
        MPI_Request any[2];
        int index = -1;
        MPI_CHK(MPI_Irecv(&got, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, &any[0]));
        MPI_CHK(MPIX_Win_notify_ithreshold(w.win, 2, 1, &any[1]));
        MPI_CHK(MPI_Waitany(2, any, &index, MPI_STATUS_IGNORE));
        CHECK(index == 0 && got == 11, "Waitany: index %d got %d, expected the receive", index,
              got);
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Waitany(2, any, &index, MPI_STATUS_IGNORE));
        CHECK(index == 1, "Waitany: index %d, expected the threshold", index);
        /* MPI_Cancel of a pending threshold: completes, status cancelled */
        MPI_Request c;
        MPI_Status status;
        int cancelled = 0;
        MPI_CHK(MPIX_Win_notify_ithreshold(w.win, 3, 100, &c));
        MPI_CHK(MPI_Cancel(&c));
        MPI_CHK(MPI_Wait(&c, &status));
        MPI_CHK(MPI_Test_cancelled(&status, &cancelled));
        CHECK(cancelled, "MPI_Cancel of a pending threshold: status not cancelled");
        /* a met threshold completes at once and is not cancelled */
        MPI_CHK(MPIX_Win_notify_ithreshold(w.win, 0, 1, &c));
        MPI_CHK(MPI_Cancel(&c));
        MPI_CHK(MPI_Wait(&c, &status));
        MPI_CHK(MPI_Test_cancelled(&status, &cancelled));
        CHECK(!cancelled, "a threshold already met reads as cancelled");
        /* MPI_Request_free of a pending threshold: it still completes inside, harmlessly */
        MPI_CHK(MPIX_Win_notify_ithreshold(w.win, 3, 1, &c));
        MPI_CHK(MPI_Request_free(&c));
        CHECK(c == MPI_REQUEST_NULL, "MPI_Request_free left the handle");
    } else {
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 1) /* nobody notified counter 3: the freed threshold goes with the window */
        CHECK(counter(w.win, 3) == 0, "counter 3 is %lld", (long long) counter(w.win, 3));
    if (me == 0)
        CHECK(counter(w.win, 3) == 1, "Rget_notify from 1: counter 3 is %lld",
              (long long) counter(w.win, 3));
    rt_win_free(&w);
}

/* ------------------------------------------------------------------ resize */
static void resize(void)
{
    rt_win_t w;
    rt_win_create(RT_ALLOCATE, 8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    int n = -1;
    MPI_CHK(MPIX_Win_notify_get_num(w.win, &n));
    CHECK(n == 0, "a new window has %d counters, expected 0", n);
    MPI_CHK(MPIX_Win_notify_set_num(w.win, 1 << 16));
    MPI_CHK(MPIX_Win_notify_get_num(w.win, &n));
    CHECK(n == 1 << 16, "set_num(65536) then get_num: %d", n);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    /* the last of 65536 counters works */
    if (me != 0) {
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
        MPI_CHK(MPIX_Put_notify(NULL, 0, MPI_BYTE, 0, 0, 0, MPI_BYTE, 65535, w.win));
        MPI_CHK(MPIX_Put_notify(NULL, 0, MPI_BYTE, 0, 0, 0, MPI_BYTE, 3, w.win));
        MPI_CHK(MPI_Win_unlock(0, w.win));
    } else {
        wait_threshold(w.win, 65535, np - 1);
        wait_threshold(w.win, 3, np - 1);
        MPI_CHK(MPIX_Win_notify_set_value(w.win, 1, 42));
        /* shrink to 2: counter 1 keeps its value; a threshold on 3 fails */
        MPI_Request lost;
        MPI_Status status;
        MPI_CHK(MPIX_Win_notify_ithreshold(w.win, 3, 1000, &lost));
        MPI_CHK(MPIX_Win_notify_set_num(w.win, 2));
        int rc = MPI_Wait(&lost, &status);
        int cls = -1;
        MPI_Error_class(rc == MPI_SUCCESS ? status.MPI_ERROR : rc, &cls);
        CHECK(cls == MPIX_ERR_INVALID_NOTIFICATION,
              "a threshold on a counter set_num removed: class %d, expected %d", cls,
              MPIX_ERR_INVALID_NOTIFICATION);
        CHECK(counter(w.win, 1) == 42, "counter 1 after shrinking: %lld",
              (long long) counter(w.win, 1));
        /* grow again: the counters that come back start at zero */
        MPI_CHK(MPIX_Win_notify_set_num(w.win, 4));
        CHECK(counter(w.win, 3) == 0, "counter 3 after shrinking and growing: %lld",
              (long long) counter(w.win, 3));
        CHECK(counter(w.win, 1) == 42, "counter 1 after growing: %lld",
              (long long) counter(w.win, 1));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_win_free(&w);
}

/* ------------------------------------------------------------------ interrupt mode */
#define INTERRUPT_NOTIFICATIONS 50

static void spin_ms(int ms)
{
    const double end = MPI_Wtime() + ms * 1e-3;
    while (MPI_Wtime() < end)
        ;
}

static void interrupt_mode(void)
{
    rt_win_t w;
    rt_win_create(RT_ALLOCATE, 8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_CHK(MPIX_Win_notify_set_num(w.win, 1));
    unsigned long long wakeups0 = 0, wakeups1 = 0;
    MPI_Request request = MPI_REQUEST_NULL;
    if (me == 1)
        MPI_CHK(MPIX_Win_notify_ithreshold(w.win, 0, INTERRUPT_NOTIFICATIONS, &request));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(nbrma_get_counter("interrupt_wakeups", &wakeups0));
    if (me == 0) {
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w.win));
        for (int i = 0; i < INTERRUPT_NOTIFICATIONS; i++) {
            MPI_CHK(MPIX_Put_notify(NULL, 0, MPI_BYTE, 1, 0, 0, MPI_BYTE, 0, w.win));
            MPI_CHK(MPI_Win_flush(1, w.win));
            spin_ms(2);
        }
        MPI_CHK(MPI_Win_unlock(1, w.win));
        MPI_CHK(MPI_Send(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD));
    } else if (me == 1) {
        /* computes, no MPI call, until the notifications are surely there (over UCX
         * they land in rank 1's own progress: read the counter after MPI_Wait) */
        spin_ms(2 * INTERRUPT_NOTIFICATIONS + 50);
        MPI_CHK(nbrma_get_counter("interrupt_wakeups", &wakeups1));
        MPI_CHK(MPI_Recv(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Wait(&request, MPI_STATUS_IGNORE));
        CHECK(counter(w.win, 0) == INTERRUPT_NOTIFICATIONS, "interrupt: counter %lld",
              (long long) counter(w.win, 0));
        CHECK(wakeups1 == wakeups0,
              "interrupt: the helper woke the progress thread %llu times for a threshold",
              wakeups1 - wakeups0);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_win_free(&w);
}

/* ------------------------------------------------------------------ errors */
static void expect_notify_error(int rc, const char *call, const char *what)
{
    rt_expect_error(rc, MPIX_ERR_INVALID_NOTIFICATION, call, what);
}

static void errors(void)
{
    rt_win_t w;
    rt_win_create(RT_ALLOCATE, 8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                  &w);
    /* the class is registered and named */
    CHECK(MPIX_ERR_INVALID_NOTIFICATION != MPI_ERR_OTHER &&
              MPIX_ERR_INVALID_NOTIFICATION > MPI_ERR_LASTCODE,
          "MPIX_ERR_INVALID_NOTIFICATION is %d", MPIX_ERR_INVALID_NOTIFICATION);
    CHECK(strstr(rt_class_name(MPIX_ERR_INVALID_NOTIFICATION), "NOTIFICATION") != NULL,
          "its string: %s", rt_class_name(MPIX_ERR_INVALID_NOTIFICATION));
    MPI_CHK(MPIX_Win_notify_set_num(w.win, 2 + me)); /* ranks differ: 0 has 2, 1 has 3 */
    int n = 0;
    MPI_CHK(MPIX_Win_notify_get_num(w.win, &n));
    CHECK(n == 2 + me, "get_num: %d", n);
    /* local calls */
    expect_notify_error(MPIX_Win_notify_set_num(w.win, -1), "MPIX_Win_notify_set_num", "n = -1");
    expect_notify_error(MPIX_Win_notify_set_num(w.win, 1 << 30), "MPIX_Win_notify_set_num",
                        "n = 2^30 (above the capacity)");
    MPI_CHK(MPIX_Win_notify_get_num(w.win, &n));
    CHECK(n == 2 + me, "a refused set_num changed the count to %d", n);
    MPI_Count v;
    MPI_Request r;
    expect_notify_error(MPIX_Win_notify_get_value(w.win, 2 + me, &v), "MPIX_Win_notify_get_value",
                        "index = count");
    expect_notify_error(MPIX_Win_notify_set_value(w.win, -1, 0), "MPIX_Win_notify_set_value",
                        "index -1");
    expect_notify_error(MPIX_Win_notify_ithreshold(w.win, 99, 1, &r),
                        "MPIX_Win_notify_ithreshold", "index 99");
    rt_expect_error(MPIX_Win_notify_ithreshold(w.win, 0, 1, NULL), MPI_ERR_REQUEST,
                    "MPIX_Win_notify_ithreshold", "null request");
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    /* the origin: an index outside the target's counters, and the target untouched */
    if (me == 0) {
        int data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win));
        expect_notify_error(MPIX_Put_notify(data, 8, MPI_INT, 1, 0, 8, MPI_INT, 3, w.win),
                            "MPIX_Put_notify", "index 3 of a target with 3");
        expect_notify_error(MPIX_Put_notify(data, 8, MPI_INT, 1, 0, 8, MPI_INT, -1, w.win),
                            "MPIX_Put_notify", "index -1");
        expect_notify_error(MPIX_Get_notify(data, 8, MPI_INT, 1, 0, 8, MPI_INT, 1 << 30, w.win),
                            "MPIX_Get_notify", "index 2^30");
        expect_notify_error(
            MPIX_Accumulate_notify(data, 8, MPI_INT, 1, 0, 8, MPI_INT, MPI_SUM, 7, w.win),
            "MPIX_Accumulate_notify", "index 7");
        expect_notify_error(MPIX_Rput_notify(data, 8, MPI_INT, 1, 0, 8, MPI_INT, 3, w.win, &r),
                            "MPIX_Rput_notify", "index 3");
        expect_notify_error(MPIX_Rget_notify(data, 8, MPI_INT, 1, 0, 8, MPI_INT, 3, w.win, &r),
                            "MPIX_Rget_notify", "index 3");
        /* and the message names the index */
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(MPIX_Put_notify(data, 8, MPI_INT, 1, 0, 8, MPI_INT, 12345, w.win), msg,
                         &len);
        CHECK(strstr(msg, "12345") != NULL, "the message does not name the index: %s", msg);
        /* a range error is still a range error */
        rt_expect_error(MPIX_Put_notify(data, 8, MPI_INT, 1, 4, 8, MPI_INT, 0, w.win),
                        MPI_ERR_RMA_RANGE, "MPIX_Put_notify", "beyond the window");
        MPI_CHK(MPI_Win_unlock(1, w.win));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 1) {
        const int *mem = (const int *) w.base;
        int touched = 0;
        for (int i = 0; i < 8; i++)
            touched += mem[i] != 0;
        CHECK(touched == 0, "refused notifying calls wrote %d words of the target", touched);
        for (int i = 0; i < 3; i++)
            CHECK(counter(w.win, i) == 0, "refused notifying calls moved counter %d to %lld", i,
                  (long long) counter(w.win, i));
    }
    /* a threshold pending when its window is freed completes with MPI_ERR_WIN */
    MPI_Request orphan;
    MPI_Status status;
    MPI_CHK(MPIX_Win_notify_ithreshold(w.win, 0, 1000, &orphan));
    MPI_Win freed = w.win;
    rt_win_free(&w);
    int rc = MPI_Wait(&orphan, &status), cls = -1;
    MPI_Error_class(rc == MPI_SUCCESS ? status.MPI_ERROR : rc, &cls);
    CHECK(cls == MPI_ERR_WIN, "a threshold pending at MPI_Win_free: class %d (%s), expected MPI_ERR_WIN",
          cls, rt_class_name(cls));
    /* calls on a freed window */
    rt_expect_error(MPIX_Win_notify_ithreshold(freed, 0, 1, &r), MPI_ERR_WIN,
                    "MPIX_Win_notify_ithreshold", "freed window");
    rt_expect_error(MPIX_Win_notify_set_num(freed, 1), MPI_ERR_WIN, "MPIX_Win_notify_set_num",
                    "freed window");
    /* a bad capacity at creation */
    MPI_Info info;
    MPI_Win bad = MPI_WIN_NULL;
    void *base = NULL;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "nbrma_notify_max", "lots"));
    rt_expect_error(MPI_Win_allocate(8, 1, info, MPI_COMM_WORLD, &base, &bad), MPI_ERR_INFO_VALUE,
                    "MPI_Win_allocate", "nbrma_notify_max=lots");
    MPI_CHK(MPI_Info_set(info, "nbrma_notify_max", "4"));
    MPI_CHK(MPI_Win_allocate(8, 1, info, MPI_COMM_WORLD, &base, &bad));
    MPI_CHK(MPI_Win_set_errhandler(bad, MPI_ERRORS_RETURN));
    expect_notify_error(MPIX_Win_notify_set_num(bad, 5), "MPIX_Win_notify_set_num",
                        "5 counters with nbrma_notify_max=4");
    MPI_CHK(MPIX_Win_notify_set_num(bad, 4));
    MPI_CHK(MPI_Win_free(&bad));
    MPI_CHK(MPI_Info_free(&info));
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "interrupt") == 0)
            setenv("NBRMA_PROGRESS", "interrupt", 1);
    rt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN); /* failing requests */
    me = rt_rank();
    np = rt_nprocs();
    rt_select_flavors(argc, argv, sel_flavor);
    static const char *parts[] = { "producer", "halo1d", "halo2d", "origins", "get",
                                   "epochs",   "requests", "resize", "errors", "interrupt" };
    const int nparts = (int) (sizeof parts / sizeof parts[0]);
    int want[16] = { 0 }, any = 0;
    for (int i = 1; i < argc; i++)
        for (int p = 0; p < nparts; p++)
            if (strcmp(argv[i], parts[p]) == 0)
                want[p] = any = 1;
    for (int p = 0; p < nparts; p++) {
        if ((any && !want[p]) || (p == 9 && !want[p])) /* interrupt: only when named */
            continue;
        switch (p) {
        case 0: producer_consumer(); break;
        case 1: halo1d(); break;
        case 2: halo2d(); break;
        case 3:
            for (int f = 0; f < RT_NFLAVORS; f++)
                if (sel_flavor[f])
                    many_origins(f);
            break;
        case 4:
            for (int f = 0; f < RT_NFLAVORS; f++)
                if (sel_flavor[f])
                    get_notify(f);
            break;
        case 5:
            for (int f = 0; f < RT_NFLAVORS; f++)
                if (sel_flavor[f])
                    epochs(f);
            break;
        case 6: requests(); break;
        case 7: resize(); break;
        case 8: errors(); break;
        case 9: interrupt_mode(); break;
        }
    }
    return rt_finalize();
}
#endif
