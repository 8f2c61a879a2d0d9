/*
 * ucx_errors: error paths of the UCX transport, on windows created with the info key
 * nbrma_transport=ucx (every peer through UCX, self included), in either suite mode:
 *   nbrma_transport=bogus at creation                           -> MPI_ERR_INFO_VALUE
 *   MPI_Win_attach of a region overlapping an attached one      -> MPI_ERR_ARG
 *   a put into a region the target detached (its rkey is stale) -> MPI_ERR_RMA_RANGE
 * and the window stays usable: a put into a region re-attached at the same address
 * (a new registration, a new rkey) and lock/put/unlock, fetch_and_op and
 * compare_and_swap over UCX move the right data.
 *
 * 2 processes: rank 1 is the origin, rank 0 the target.
 */
#include "rmatest.h"

#define N 8

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    const int me = rt_rank();
    if (rt_nprocs() != 2) {
        if (me == 0)
            printf("ucx_errors needs 2 processes\n");
        MPI_Finalize();
        return 1;
    }

    MPI_Info info;
    MPI_Win win;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "nbrma_transport", "bogus"));
    int *mem = NULL;
    int rc = MPI_Win_allocate(N * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &mem, &win);
    rt_expect_error(rc, MPI_ERR_INFO_VALUE, "MPI_Win_allocate", "nbrma_transport=bogus");

    MPI_CHK(MPI_Info_set(info, "nbrma_transport", "ucx"));
    MPI_CHK(MPI_Win_create_dynamic(info, MPI_COMM_WORLD, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    rt_expect_info(win, "nbrma_transport", "ucx", "MPI_Win_create_dynamic");

    static long region[N], other[N];
    MPI_Aint address = 0;
    if (me == 0) {
        MPI_CHK(MPI_Win_attach(win, region, sizeof region));
        rc = MPI_Win_attach(win, &region[N / 2], sizeof region);
        rt_expect_error(rc, MPI_ERR_ARG, "MPI_Win_attach", "overlapping attach");
        MPI_CHK(MPI_Get_address(region, &address));
    }
    MPI_CHK(MPI_Bcast(&address, 1, MPI_AINT, 0, MPI_COMM_WORLD));

    long put_value = 1234, one = 1, fetched = -1, compare = 1235, swap = 77;
    if (me == 1) {  /* attached: put, fetch_and_op, compare_and_swap over UCX */
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        MPI_CHK(MPI_Put(&put_value, 1, MPI_LONG, 0, address + 8, 1, MPI_LONG, win));
        MPI_CHK(MPI_Win_flush(0, win));
        MPI_CHK(MPI_Fetch_and_op(&one, &fetched, MPI_LONG, 0, address + 8, MPI_SUM, win));
        MPI_CHK(MPI_Win_flush(0, win));
        CHECK(fetched == 1234, "fetch_and_op fetched %ld, expected 1234", fetched);
        MPI_CHK(MPI_Compare_and_swap(&swap, &compare, &fetched, MPI_LONG, 0, address + 8, win));
        MPI_CHK(MPI_Win_unlock(0, win));
        CHECK(fetched == 1235, "compare_and_swap fetched %ld, expected 1235", fetched);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        CHECK(region[1] == 77, "region[1] = %ld, expected 77", region[1]);
        MPI_CHK(MPI_Win_detach(win, region));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    if (me == 1) {  /* detached: refused, nothing written */
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        rc = MPI_Put(&put_value, 1, MPI_LONG, 0, address, 1, MPI_LONG, win);
        rt_expect_error(rc, MPI_ERR_RMA_RANGE, "MPI_Put", "put into a detached region");
        MPI_CHK(MPI_Win_unlock(0, win));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    if (me == 0) {  /* re-attached at the same address: a new rkey */
        CHECK(region[0] == 0, "region[0] = %ld after a refused put", region[0]);
        MPI_CHK(MPI_Win_attach(win, region, sizeof region));
        MPI_CHK(MPI_Win_attach(win, other, sizeof other));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 1) {
        put_value = 4321;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        MPI_CHK(MPI_Put(&put_value, 1, MPI_LONG, 0, address + 16, 1, MPI_LONG, win));
        MPI_CHK(MPI_Win_unlock(0, win));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        CHECK(region[2] == 4321, "region[2] = %ld after re-attach, expected 4321", region[2]);
        MPI_CHK(MPI_Win_detach(win, region));
        MPI_CHK(MPI_Win_detach(win, other));
    }
    MPI_CHK(MPI_Win_free(&win));
    MPI_CHK(MPI_Info_free(&info));
    return rt_finalize();
}
