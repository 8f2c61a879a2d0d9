/*
 * large_count: the MPI-4 large-count ("_c") RMA interfaces with small counts:
 * MPI_Win_allocate_c, MPI_Win_create_c, MPI_Win_allocate_shared_c,
 * MPI_Win_shared_query_c, MPI_Put_c, MPI_Get_c, MPI_Accumulate_c,
 * MPI_Get_accumulate_c, MPI_Rput_c, MPI_Rget_c, MPI_Raccumulate_c,
 * MPI_Rget_accumulate_c.
 */
#include "rmatest.h"

#define BLK 12
enum { W_ALLOCATE = 0, W_CREATE, W_SHARED, NWIN };
static const char *win_names[NWIN] = { "MPI_Win_allocate_c", "MPI_Win_create_c",
                                       "MPI_Win_allocate_shared_c" };
static int me, np;

static double init_val(int t, int o, int k)
{
    return 1000.0 * t + 10.0 * o + k + 0.5;
}

static double put_val(int t, int o, int k)
{
    return 100000.0 + 1000.0 * t + 10.0 * o + k + 0.25;
}

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);

    const MPI_Aint size = (MPI_Aint) sizeof(double) * BLK * np;
    const MPI_Aint du = (MPI_Aint) sizeof(double);
    const int t = (me + 1) % np;
    double *obuf = malloc(sizeof(double) * BLK);
    double *rbuf = malloc(sizeof(double) * BLK);

    for (int wk = 0; wk < NWIN; wk++) {
        MPI_Win win;
        double *base = NULL, *own = NULL;
        MPI_Request reqs[4];

        if (wk == W_ALLOCATE) {
            MPI_CHK(MPI_Win_allocate_c(size, du, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
        } else if (wk == W_CREATE) {
            own = base = calloc(1, (size_t) size);
            MPI_CHK(MPI_Win_create_c(base, size, du, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        } else {
            MPI_CHK(MPI_Win_allocate_shared_c(size, du, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                                              &win));
        }
        MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

        {   /* attributes of a window created with an MPI_Aint disp_unit */
            int *dup, flag = 0;
            MPI_Aint *sz;
            MPI_CHK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &dup, &flag));
            CHECK(flag && *dup == (int) du, "%s: MPI_WIN_DISP_UNIT", win_names[wk]);
            MPI_CHK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &sz, &flag));
            CHECK(flag && *sz == size, "%s: MPI_WIN_SIZE", win_names[wk]);
        }

        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win));
        for (int o = 0; o < np; o++)
            for (int k = 0; k < BLK; k++)
                base[o * BLK + k] = init_val(me, o, k);
        MPI_CHK(MPI_Win_unlock(me, win));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

        for (int k = 0; k < BLK; k++) {
            obuf[k] = put_val(t, me, k);
            rbuf[k] = -1.0;
        }
        /* my block at target t: [0,1] Put_c, [2,3] Accumulate_c, [4] Get_accumulate_c,
         * [5] Rput_c, [6] Raccumulate_c, [7] Rget_accumulate_c, [8..11] untouched.
         * Block t of target t (written by no one) is read by Get_c [0..2] and
         * Rget_c [3..4]; results land in rbuf[8..12). */
        const MPI_Aint my = (MPI_Aint) me * BLK, tb = (MPI_Aint) t * BLK;
        const MPI_Count two = 2, one = 1, zero = 0;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
        MPI_CHK(MPI_Put_c(&obuf[0], two, MPI_DOUBLE, t, my + 0, two, MPI_DOUBLE, win));
        MPI_CHK(MPI_Put_c(&obuf[9], zero, MPI_DOUBLE, t, my + 9, zero, MPI_DOUBLE, win));
        MPI_CHK(MPI_Accumulate_c(&obuf[2], two, MPI_DOUBLE, t, my + 2, two, MPI_DOUBLE, MPI_SUM,
                                 win));
        MPI_CHK(MPI_Get_accumulate_c(&obuf[4], one, MPI_DOUBLE, &rbuf[4], one, MPI_DOUBLE, t,
                                     my + 4, one, MPI_DOUBLE, MPI_SUM, win));
        MPI_CHK(MPI_Rput_c(&obuf[5], one, MPI_DOUBLE, t, my + 5, one, MPI_DOUBLE, win,
                           &reqs[0]));
        MPI_CHK(MPI_Raccumulate_c(&obuf[6], one, MPI_DOUBLE, t, my + 6, one, MPI_DOUBLE,
                                  MPI_SUM, win, &reqs[1]));
        MPI_CHK(MPI_Rget_accumulate_c(&obuf[7], one, MPI_DOUBLE, &rbuf[7], one, MPI_DOUBLE, t,
                                      my + 7, one, MPI_DOUBLE, MPI_SUM, win, &reqs[2]));
        MPI_CHK(MPI_Get_c(&rbuf[8], (MPI_Count) 3, MPI_DOUBLE, t, tb + 0, (MPI_Count) 3,
                          MPI_DOUBLE, win));
        MPI_CHK(MPI_Rget_c(&rbuf[11], one, MPI_DOUBLE, t, tb + 3, one, MPI_DOUBLE, win,
                           &reqs[3]));
        MPI_CHK(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE));
        MPI_CHK(MPI_Win_unlock(t, win));

        CHECK(rbuf[4] == init_val(t, me, 4), "%s: Get_accumulate_c fetched %g", win_names[wk],
              rbuf[4]);
        CHECK(rbuf[7] == init_val(t, me, 7), "%s: Rget_accumulate_c fetched %g", win_names[wk],
              rbuf[7]);
        for (int k = 0; k < 4; k++)
            CHECK(rbuf[8 + k] == init_val(t, t, k), "%s: Get_c/Rget_c element %d = %g",
                  win_names[wk], k, rbuf[8 + k]);

        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win));
        {
            const int o = (me + np - 1) % np;     /* the rank that wrote to me */
            for (int b = 0; b < np; b++)
                for (int k = 0; k < BLK; k++) {
                    double exp = init_val(me, b, k), got = base[b * BLK + k];
                    if (b == o) {
                        if (k < 2 || k == 5)
                            exp = put_val(me, o, k);
                        else if (k < 8)
                            exp = init_val(me, o, k) + put_val(me, o, k);
                    }
                    CHECK(got == exp, "%s: target %d block %d element %d = %g, expected %g",
                          win_names[wk], me, b, k, got, exp);
                }
        }
        MPI_CHK(MPI_Win_unlock(me, win));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

        if (wk == W_SHARED) {
            /* MPI_Win_shared_query_c: every segment is directly readable */
            MPI_CHK(MPI_Win_lock_all(0, win));
            MPI_CHK(MPI_Win_sync(win));
            for (int r = 0; r < np; r++) {
                MPI_Aint qsize = -1, qdu = -1;
                double *qbase = NULL;
                MPI_CHK(MPI_Win_shared_query_c(win, r, &qsize, &qdu, &qbase));
                CHECK(qsize == size, "shared_query_c(%d): size %ld", r, (long) qsize);
                CHECK(qdu == du, "shared_query_c(%d): disp_unit %ld", r, (long) qdu);
                CHECK(qbase != NULL, "shared_query_c(%d): NULL base", r);
                if (qbase != NULL)
                    CHECK(qbase[r * BLK + 9] == init_val(r, r, 9),
                          "shared_query_c(%d): load through pointer read %g", r,
                          qbase[r * BLK + 9]);
                if (r == me)
                    CHECK(qbase == base, "shared_query_c(self) != allocated base");
            }
            MPI_CHK(MPI_Win_unlock_all(win));
        }

        MPI_CHK(MPI_Win_free(&win));
        free(own);
    }

    free(obuf);
    free(rbuf);
    return rt_finalize();
}
