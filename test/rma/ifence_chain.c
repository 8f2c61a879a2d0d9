/*
 * ifence_chain: chains of nonblocking fences (MPIX_Win_ifence) mixed with blocking
 * MPI_Win_fence, the requests all left pending and completed at the end. Each process
 * talks to its right neighbour in a ring, so each window is written by one origin.
 *
 * Part 1, the chain
 *     ifence(NOPRECEDE|NOSTORE, &r0); put A0
 *     ifence(NOSTORE, &r1);           get A0 (must see the put); put A1
 *     MPI_Win_fence(NOSTORE);         accumulate A0; get A1 (must see the put)
 *     ifence(NOSTORE|NOPUT, &r2);     get A0, A1 (only gets: NOPUT is legal)
 *     ifence(NOSUCCEED, &r3);         MPI_Waitall(r0..r3)
 * then the fetched values and the target memory are checked.
 *
 * Part 2, a long chain of NFENCE + 1 fences starting with a plain ifence(0) and ending
 * with NOSUCCEED, every third one blocking, every fifth epoch empty. In each non-empty
 * epoch j the origin: reads, with MPI_Fetch_and_op(MPI_NO_OP), the accumulate slot
 * (must hold the sum of all earlier epochs' accumulates), then accumulates j + 1 into
 * it; gets the slot the previous non-empty epoch put (must see that value); puts a value
 * naming j into slot 4 + j % 8. The last request is polled with MPI_Test, the others
 * completed with MPI_Waitall; then everything is checked.
 *
 * Usage: ifence_chain [create|allocate|shared|dynamic]...   (default: all)
 */
#include "rmatest.h"

#define WIN_INTS 16
#define NFENCE 40
#define A0 0
#define A1 1
#define ACC_SLOT 2
#define RING0 4
#define RING_N 8

static int me, np, right, left;

static int p1_val(int o, int k)
{
    return 5000 + 100 * o + k;
}

static int chain_val(int j, int o)
{
    return 100000 + 100 * j + o;
}

static int empty_epoch(int j)
{
    return j % 5 == 4;
}

#define D(w, k) rt_disp((w), right, (k))

static void part1(rt_win_t *w, int f)
{
    const char *fn = rt_flavor_names[f];
    const int *mem = (const int *) w->base;
    MPI_Win win = w->win;
    MPI_Request r[4];
    int put0 = p1_val(me, A0), put1 = p1_val(me, A1), accv = me + 1;
    int g_a0 = -1, g_a1 = -1, g2[2] = { -1, -1 };

    rt_init_slots(w, WIN_INTS);
    MPI_CHK(MPIX_Win_ifence(MPI_MODE_NOPRECEDE | MPI_MODE_NOSTORE, win, &r[0]));
    MPI_CHK(MPI_Put(&put0, 1, MPI_INT, right, D(w, A0), 1, MPI_INT, win));
    MPI_CHK(MPIX_Win_ifence(MPI_MODE_NOSTORE, win, &r[1]));
    MPI_CHK(MPI_Get(&g_a0, 1, MPI_INT, right, D(w, A0), 1, MPI_INT, win));
    MPI_CHK(MPI_Put(&put1, 1, MPI_INT, right, D(w, A1), 1, MPI_INT, win));
    MPI_CHK(MPI_Win_fence(MPI_MODE_NOSTORE, win));
    MPI_CHK(MPI_Accumulate(&accv, 1, MPI_INT, right, D(w, A0), 1, MPI_INT, MPI_SUM, win));
    MPI_CHK(MPI_Get(&g_a1, 1, MPI_INT, right, D(w, A1), 1, MPI_INT, win));
    MPI_CHK(MPIX_Win_ifence(MPI_MODE_NOSTORE | MPI_MODE_NOPUT, win, &r[2]));
    MPI_CHK(MPI_Get(g2, 2, MPI_INT, right, D(w, A0), 2, MPI_INT, win));
    MPI_CHK(MPIX_Win_ifence(MPI_MODE_NOSUCCEED, win, &r[3]));
    MPI_CHK(MPI_Waitall(4, r, MPI_STATUSES_IGNORE));

    CHECK(g_a0 == put0, "%s part 1: epoch 2 got %d from the slot epoch 1 put, expected %d", fn,
          g_a0, put0);
    CHECK(g_a1 == put1, "%s part 1: epoch 3 got %d from the slot epoch 2 put, expected %d", fn,
          g_a1, put1);
    CHECK(g2[0] == put0 + accv, "%s part 1: epoch 4 got %d from A0, expected %d", fn, g2[0],
          put0 + accv);
    CHECK(g2[1] == put1, "%s part 1: epoch 4 got %d from A1, expected %d", fn, g2[1], put1);
    for (int k = 0; k < WIN_INTS; k++) {
        int exp = rt_init_slot_val(me, k);
        if (k == A0)
            exp = p1_val(left, A0) + left + 1;
        else if (k == A1)
            exp = p1_val(left, A1);
        CHECK(mem[k] == exp, "%s part 1: window slot %d = %d, expected %d", fn, k, mem[k], exp);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void part2(rt_win_t *w, int f)
{
    const char *fn = rt_flavor_names[f];
    const int *mem = (const int *) w->base;
    MPI_Win win = w->win;
    MPI_Request reqs[NFENCE + 1];
    int pbuf[NFENCE], abuf[NFENCE], gbuf[NFENCE], fbuf[NFENCE];
    int nreq = 0, last_put = -1, sum = 0, flag = 0;

    rt_init_slots(w, WIN_INTS);
    for (int j = 0; j <= NFENCE; j++) {
        int assert = j == 0 ? 0 : j == NFENCE ? MPI_MODE_NOSUCCEED : MPI_MODE_NOSTORE;
        if (j % 3 == 2)
            MPI_CHK(MPI_Win_fence(assert, win));
        else
            MPI_CHK(MPIX_Win_ifence(assert, win, &reqs[nreq++]));
        if (j == NFENCE)
            break;
        gbuf[j] = fbuf[j] = -1;
        if (empty_epoch(j))
            continue;
        abuf[j] = j + 1;
        pbuf[j] = chain_val(j, me);
        MPI_CHK(MPI_Fetch_and_op(NULL, &fbuf[j], MPI_INT, right, D(w, ACC_SLOT), MPI_NO_OP,
                                 win));
        MPI_CHK(MPI_Accumulate(&abuf[j], 1, MPI_INT, right, D(w, ACC_SLOT), 1, MPI_INT,
                               MPI_SUM, win));
        if (last_put >= 0)
            MPI_CHK(MPI_Get(&gbuf[j], 1, MPI_INT, right, D(w, RING0 + last_put % RING_N), 1,
                            MPI_INT, win));
        MPI_CHK(MPI_Put(&pbuf[j], 1, MPI_INT, right, D(w, RING0 + j % RING_N), 1, MPI_INT,
                        win));
        last_put = j;
    }
    /* the last fence's request first, by polling; then the rest */
    while (!flag)
        MPI_CHK(MPI_Test(&reqs[nreq - 1], &flag, MPI_STATUS_IGNORE));
    MPI_CHK(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));

    last_put = -1;
    for (int j = 0; j < NFENCE; j++) {
        if (empty_epoch(j))
            continue;
        int exp_f = rt_init_slot_val(right, ACC_SLOT) + sum;
        CHECK(fbuf[j] == exp_f, "%s part 2: epoch %d fetched %d from the accumulate slot, "
              "expected %d", fn, j, fbuf[j], exp_f);
        if (last_put >= 0)
            CHECK(gbuf[j] == chain_val(last_put, me),
                  "%s part 2: epoch %d got %d from epoch %d's slot, expected %d", fn, j,
                  gbuf[j], last_put, chain_val(last_put, me));
        sum += j + 1;
        last_put = j;
    }
    for (int k = 0; k < WIN_INTS; k++) {
        int exp = rt_init_slot_val(me, k);
        if (k == ACC_SLOT)
            exp += sum;
        if (k >= RING0 && k < RING0 + RING_N)
            for (int j = 0; j < NFENCE; j++)
                if (!empty_epoch(j) && RING0 + j % RING_N == k)
                    exp = chain_val(j, left);
        CHECK(mem[k] == exp, "%s part 2: window slot %d = %d, expected %d", fn, k, mem[k], exp);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void run_parts(rt_win_t *w, int f, void *arg)
{
    (void) arg;
    part1(w, f);
    part2(w, f);
}

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);
    right = (me + 1) % np;
    left = (me + np - 1) % np;
    rt_each_flavor(argc, argv, sizeof(int) * WIN_INTS, sizeof(int), run_parts, NULL);
    return rt_finalize();
}
