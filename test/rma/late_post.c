/*
 * late_post: an access epoch toward a target that posts late does not hold the origin.
 *
 * The target (rank 1) sleeps DELAY_MS before MPI_Win_post; it reads CLOCK_MONOTONIC
 * (one clock for all processes of the node, unlike MPI_Wtime, which need not be global)
 * just before posting and sends that time to the origin after the epoch. The origin
 * (rank 0) opens its epoch at once, issues its operations and closes it with
 * MPIX_Win_icomplete, noting the time icomplete returned; then it computes, counting
 * iterations, while MPI_Test-ing the icomplete request, and finally MPI_Waits for it.
 * Checked, on nbrma (the stand-ins of -DNO_NBRMA block like MPI_Win_complete):
 *   - icomplete returned before the target posted (time of return < time of post);
 *   - the request was still pending for at least one work iteration;
 * and everywhere: the data arrived (the target checks its memory right after
 * MPI_Win_wait; the origin checks what its gets fetched after MPI_Wait).
 * Rounds: MPIX_Win_istart + put; MPIX_Win_istart + put, accumulate, get; blocking
 * MPI_Win_start (never blocks on nbrma either) + put.
 *
 * 2 processes (more are allowed and stay idle).
 */
#define _GNU_SOURCE
#include <unistd.h>

#include "rmatest.h"

#define DELAY_MS 200
#define WIN_INTS 16
#define TIME_TAG 55

enum { R_ISTART_PUT = 0, R_ISTART_ACC_GET, R_START_PUT, NROUNDS };
static const char *round_names[NROUNDS] = { "istart/put/icomplete",
                                            "istart/put+accumulate+get/icomplete",
                                            "start/put/icomplete" };

static int me, np;
static volatile unsigned long sink;

/* a little computation standing for the application's work */
static void work(void)
{
    unsigned long x = sink;
    for (int i = 0; i < 1000; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

static int init_val(int k)
{
    return -100 - k;
}

static int put_val(int r, int k)
{
    return 1000 * (r + 1) + k;
}

static void run_round(rt_win_t *w, MPI_Group peer_g, int r)
{
    int *mem = (int *) w->base;

    rt_lock_self(w);
    for (int k = 0; k < WIN_INTS; k++)
        mem[k] = init_val(k);
    rt_unlock_self(w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    if (me == 0) {
        int obuf[3] = { put_val(r, 0), put_val(r, 1), put_val(r, 2) }, gbuf = -1, flag = 0;
        MPI_Request open = MPI_REQUEST_NULL, close;
        double t_ret, t_done, t_post;
        long iters = 0;

        if (r == R_START_PUT)
            MPI_CHK(MPI_Win_start(peer_g, 0, w->win));
        else
            MPI_CHK(MPIX_Win_istart(peer_g, 0, w->win, &open));
        MPI_CHK(MPI_Put(&obuf[0], 1, MPI_INT, 1, rt_disp(w, 1, 0), 1, MPI_INT, w->win));
        if (r == R_ISTART_ACC_GET) {
            MPI_CHK(MPI_Accumulate(&obuf[1], 1, MPI_INT, 1, rt_disp(w, 1, 1), 1, MPI_INT,
                                   MPI_SUM, w->win));
            MPI_CHK(MPI_Get(&gbuf, 1, MPI_INT, 1, rt_disp(w, 1, 2), 1, MPI_INT, w->win));
        }
        MPI_CHK(MPIX_Win_icomplete(w->win, &close));
        t_ret = rt_now();
        MPI_CHK(MPI_Wait(&open, MPI_STATUS_IGNORE)); /* an opening request: complete */
        for (;;) {
            MPI_CHK(MPI_Test(&close, &flag, MPI_STATUS_IGNORE));
            if (flag)
                break;
            work();
            iters++;
        }
        MPI_CHK(MPI_Wait(&close, MPI_STATUS_IGNORE));
        t_done = rt_now();
        MPI_CHK(MPI_Recv(&t_post, 1, MPI_DOUBLE, 1, TIME_TAG, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
#ifndef NO_NBRMA
        CHECK(t_ret < t_post, "%s: icomplete returned %.3f ms after the target posted",
              round_names[r], 1e3 * (t_ret - t_post));
        CHECK(iters > 0, "%s: the icomplete request was already complete on the first test",
              round_names[r]);
#endif
        CHECK(t_done >= t_post, "%s: the epoch completed %.3f ms before the target posted",
              round_names[r], 1e3 * (t_post - t_done));
        if (r == R_ISTART_ACC_GET)
            CHECK(gbuf == init_val(2), "%s: get fetched %d, expected %d", round_names[r], gbuf,
                  init_val(2));
        printf("%s: icomplete returned %.1f ms %s the post; %ld work iterations while "
               "pending; epoch done %.1f ms after the post\n",
               round_names[r], 1e3 * (t_ret < t_post ? t_post - t_ret : t_ret - t_post),
               t_ret < t_post ? "before" : "after", iters, 1e3 * (t_done - t_post));
        fflush(stdout);
    } else if (me == 1) {
        double t_post;
        usleep(DELAY_MS * 1000);
        t_post = rt_now();
        MPI_CHK(MPI_Win_post(peer_g, 0, w->win));
        MPI_CHK(MPI_Win_wait(w->win));
        for (int k = 0; k < WIN_INTS; k++) {
            int exp = init_val(k);
            if (k == 0)
                exp = put_val(r, 0);
            else if (k == 1 && r == R_ISTART_ACC_GET)
                exp = init_val(1) + put_val(r, 1);
            CHECK(mem[k] == exp, "%s: target slot %d = %d after MPI_Win_wait, expected %d",
                  round_names[r], k, mem[k], exp);
        }
        MPI_CHK(MPI_Send(&t_post, 1, MPI_DOUBLE, 0, TIME_TAG, MPI_COMM_WORLD));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    rt_win_t w;

    rt_init_world(&argc, &argv, &me, &np);
    rt_require_procs(2, "late_post needs 2 processes");

    rt_win_create(RT_ALLOCATE, sizeof(int) * WIN_INTS, sizeof(int), MPI_INFO_NULL,
                  MPI_COMM_WORLD, &w);
    MPI_Group peer_g = rt_peer_group(&w);
    for (int r = 0; r < NROUNDS; r++)
        run_round(&w, peer_g, r);

    if (peer_g != MPI_GROUP_NULL)
        MPI_CHK(MPI_Group_free(&peer_g));
    rt_win_free(&w);
    return rt_finalize();
}
