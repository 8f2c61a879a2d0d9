/*
 * mixed_requests: nbrma's RMA requests live side by side with MPICH point-to-point
 * requests. MPI_Waitall, MPI_Testany, MPI_Waitsome and MPI_Waitany over a mix of an
 * MPIX_Win_iunlock request, an MPI_Irecv and an MPI_Isend (ring neighbours); all must
 * complete, the received message and the RMA data must both be right. Also MPI_Rput /
 * MPI_Rget requests completed by MPI_Wait, and by MPI_Waitall mixed with p2p requests.
 */
#include "rmatest.h"

#define NSLOT 8
enum { W_WAITALL = 0, W_TESTANY, W_WAITSOME, W_WAITANY, W_RMA_WAIT, W_RMA_MIXED, NWAYS };
static const char *way_names[NWAYS] = {
    "MPI_Waitall", "MPI_Testany", "MPI_Waitsome", "MPI_Waitany", "MPI_Rput/MPI_Rget + MPI_Wait",
    "MPI_Rput/MPI_Rget + p2p + MPI_Waitall"
};

static int me, np, right, left;
static rt_win_t w;

static int val(int way, int o, int k)
{
    return 100000 * (way + 1) + 100 * o + k;
}

/* complete n requests with the given way; returns how many completions were reported */
static int complete(int way, int n, MPI_Request *reqs, MPI_Status *st)
{
    int done = 0, idx, flag, outcount, idxs[8];
    MPI_Status s1, ss[8];
    switch (way) {
    case W_WAITALL:
    case W_RMA_MIXED:
        MPI_CHK(MPI_Waitall(n, reqs, st));
        return n;
    case W_TESTANY:
        for (;;) {
            MPI_CHK(MPI_Testany(n, reqs, &idx, &flag, &s1));
            if (flag && idx == MPI_UNDEFINED)
                return done;        /* all inactive */
            if (flag) {
                st[idx] = s1;
                done++;
            }
        }
    case W_WAITSOME:
        for (;;) {
            MPI_CHK(MPI_Waitsome(n, reqs, &outcount, idxs, ss));
            if (outcount == MPI_UNDEFINED)
                return done;
            for (int i = 0; i < outcount; i++)
                st[idxs[i]] = ss[i];
            done += outcount;
        }
    case W_WAITANY:
        for (;;) {
            MPI_CHK(MPI_Waitany(n, reqs, &idx, &s1));
            if (idx == MPI_UNDEFINED)
                return done;
            st[idx] = s1;
            done++;
        }
    }
    return done;
}

static void run(int way)
{
    int *mem = (int *) w.base;
    int sendbuf[2], recvbuf[2] = { -1, -1 }, obuf[NSLOT], gbuf[NSLOT];
    MPI_Request reqs[8];
    MPI_Status st[8];
    int n = 0, irecv_at = -1;
    const char *wn = way_names[way];

    rt_lock_self(&w);
    for (int k = 0; k < NSLOT; k++)
        mem[k] = -(me * 100 + k);
    rt_unlock_self(&w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    for (int k = 0; k < NSLOT; k++) {
        obuf[k] = val(way, me, k);
        gbuf[k] = -1;
    }
    sendbuf[0] = way;
    sendbuf[1] = me;

    if (way <= W_WAITANY) {
        MPI_Request lreq;
        MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, right, 0, w.win, &lreq));
        MPI_CHK(MPI_Wait(&lreq, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Put(obuf, NSLOT, MPI_INT, right, rt_disp(&w, right, 0), NSLOT, MPI_INT,
                        w.win));
        /* interleave: receive posted between RMA, send last */
        irecv_at = n;
        MPI_CHK(MPI_Irecv(recvbuf, 2, MPI_INT, left, 42 + way, MPI_COMM_WORLD, &reqs[n++]));
        MPI_CHK(MPIX_Win_iunlock(right, w.win, &reqs[n++]));
        MPI_CHK(MPI_Isend(sendbuf, 2, MPI_INT, right, 42 + way, MPI_COMM_WORLD, &reqs[n++]));
        for (int i = 0; i < n; i++)
            st[i].MPI_SOURCE = -99;
        /* (without nbrma the stand-in iunlock returns MPI_REQUEST_NULL) */
        const int active = n - (reqs[1] == MPI_REQUEST_NULL);
        int done = complete(way, n, reqs, st);
        CHECK(done == active || way == W_WAITALL, "%s: %d of %d completions reported", wn,
              done, active);
        for (int i = 0; i < n; i++)
            CHECK(reqs[i] == MPI_REQUEST_NULL, "%s: request %d still set", wn, i);
        CHECK(recvbuf[0] == way && recvbuf[1] == left, "%s: received {%d,%d}, expected {%d,%d}",
              wn, recvbuf[0], recvbuf[1], way, left);
        CHECK(st[irecv_at].MPI_SOURCE == left && st[irecv_at].MPI_TAG == 42 + way,
              "%s: receive status source %d tag %d", wn, st[irecv_at].MPI_SOURCE,
              st[irecv_at].MPI_TAG);
    } else if (way == W_RMA_WAIT) {
        MPI_Request r;
        MPI_CHK(MPI_Win_lock_all(0, w.win));
        MPI_CHK(MPI_Rget(gbuf, NSLOT, MPI_INT, right, rt_disp(&w, right, 0), NSLOT, MPI_INT,
                         w.win, &r));
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int k = 0; k < NSLOT; k++)
            CHECK(gbuf[k] == -(right * 100 + k), "%s: Rget element %d = %d", wn, k, gbuf[k]);
        MPI_CHK(MPI_Rput(obuf, NSLOT, MPI_INT, right, rt_disp(&w, right, 0), NSLOT, MPI_INT,
                         w.win, &r));
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int k = 0; k < NSLOT; k++)      /* locally complete: may reuse the buffer */
            obuf[k] = -7;
        MPI_CHK(MPI_Win_unlock_all(w.win));
        /* MPI_Send/Recv so every way exchanges the token */
        MPI_CHK(MPI_Sendrecv(sendbuf, 2, MPI_INT, right, 42 + way, recvbuf, 2, MPI_INT, left,
                             42 + way, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        MPI_CHK(MPI_Win_lock_all(0, w.win));
        MPI_CHK(MPI_Irecv(recvbuf, 2, MPI_INT, left, 42 + way, MPI_COMM_WORLD, &reqs[n++]));
        MPI_CHK(MPI_Rget(gbuf, NSLOT, MPI_INT, right, rt_disp(&w, right, 0), NSLOT, MPI_INT,
                         w.win, &reqs[n++]));
        MPI_CHK(MPI_Isend(sendbuf, 2, MPI_INT, right, 42 + way, MPI_COMM_WORLD, &reqs[n++]));
        complete(way, n, reqs, st);
        n = 0;
        for (int k = 0; k < NSLOT; k++)
            CHECK(gbuf[k] == -(right * 100 + k), "%s: Rget element %d = %d", wn, k, gbuf[k]);
        MPI_CHK(MPI_Rput(obuf, NSLOT, MPI_INT, right, rt_disp(&w, right, 0), NSLOT, MPI_INT,
                         w.win, &reqs[n++]));
        MPI_CHK(MPI_Win_unlock_all(w.win));
        MPI_CHK(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
        CHECK(recvbuf[0] == way && recvbuf[1] == left, "%s: received {%d,%d}", wn, recvbuf[0],
              recvbuf[1]);
    }

    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_lock_self(&w);
    for (int k = 0; k < NSLOT; k++)
        CHECK(mem[k] == val(way, left, k), "%s: target %d element %d = %d, expected %d", wn, me,
              k, mem[k], val(way, left, k));
    rt_unlock_self(&w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    int flavor = RT_ALLOCATE;
    rt_init_world(&argc, &argv, &me, &np);
    right = (me + 1) % np;
    left = (me + np - 1) % np;
    if (argc > 1 && rt_flavor_from_name(argv[1]) >= 0)
        flavor = rt_flavor_from_name(argv[1]);

    rt_win_create(flavor, sizeof(int) * NSLOT * 2, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                  &w);
    for (int way = 0; way < NWAYS; way++)
        run(way);
    rt_win_free(&w);
    return rt_finalize();
}
