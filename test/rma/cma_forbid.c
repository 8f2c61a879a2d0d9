/*
 * cma_forbid: NBRMA_CMA=0 forbids cross-memory attach. Windows whose
 * memory the user owns (MPI_Win_create, MPI_Win_create_dynamic) need it between ranks
 * of a node, so their creation fails on every rank with MPI_ERR_UNSUPPORTED_OPERATION
 * and a message naming the call and NBRMA_CMA; MPI_Win_allocate windows, and
 * MPI_Win_create on MPI_COMM_SELF (no peer on the node), still work; without the
 * variable MPI_Win_create works again. The library reads NBRMA_CMA at each creation, so
 * the program sets it itself.
 *
 * With NBRMA_TRANSPORT=ucx every peer goes through UCX, and where no rank shares a node
 * with another (as nbrma sees nodes: MPI_Win_shared_query of an allocated window),
 * no cross-memory attach is needed: the windows must then be created and work despite
 * NBRMA_CMA=0.
 */
#include "rmatest.h"

/* Each rank puts (rank + 1) * 10 into its right neighbour; checks what arrived. */
static void check_window_works(int flavor, const char *what)
{
    rt_win_t w;
    int me = rt_rank(), np = rt_nprocs(), value = (me + 1) * 10;
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    rt_win_create(flavor, sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w.win));
    MPI_CHK(MPI_Put(&value, 1, MPI_INT, right, rt_disp(&w, right, 0), 1, MPI_INT, w.win));
    MPI_CHK(MPI_Win_unlock(right, w.win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_lock_self(&w);
    CHECK(*(int *) w.base == (left + 1) * 10, "%s %s: got %d", what, rt_flavor_names[flavor],
          *(int *) w.base);
    rt_unlock_self(&w);
    rt_win_free(&w);
}

/* 1 iff some rank shares a node with another rank in nbrma's view. */
static int any_node_local_peer(void)
{
    MPI_Win win;
    char *base;
    int me = rt_rank(), np = rt_nprocs(), mine = 0, any = 0;
    MPI_CHK(MPI_Win_allocate(8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    for (int r = 0; r < np; r++) {
        MPI_Aint size = 0;
        int unit = 0;
        void *peer = NULL;
        MPI_CHK(MPI_Win_shared_query(win, r, &size, &unit, &peer));
        mine |= r != me && peer != NULL;
    }
    MPI_CHK(MPI_Win_free(&win));
    MPI_CHK(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD));
    return any;
}

static void expect_refused(int rc, const char *call)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    rt_expect_error(rc, MPI_ERR_UNSUPPORTED_OPERATION, call, "NBRMA_CMA=0");
    if (rc != MPI_SUCCESS) {
        MPI_Error_string(rc, msg, &len);
        CHECK(strstr(msg, "NBRMA_CMA") != NULL, "%s: message \"%s\" does not name NBRMA_CMA",
              call, msg);
    }
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    const char *transport = getenv("NBRMA_TRANSPORT");
    const int needs_cma = !(transport && strcmp(transport, "ucx") == 0) && any_node_local_peer();
    static int buffer[4];
    MPI_Win win = MPI_WIN_NULL;

    setenv("NBRMA_CMA", "0", 1);
    int rc = MPI_Win_create(buffer, sizeof buffer, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                            &win);
    if (!needs_cma) {
        CHECK(rc == MPI_SUCCESS, "no cross-memory attach needed: MPI_Win_create failed (%d)", rc);
        if (rc == MPI_SUCCESS)
            MPI_CHK(MPI_Win_free(&win));
        check_window_works(RT_CREATE, "NBRMA_CMA=0 without node-local CMA");
        check_window_works(RT_DYNAMIC, "NBRMA_CMA=0 without node-local CMA");
    } else {
        expect_refused(rc, "MPI_Win_create");
        CHECK(win == MPI_WIN_NULL, "a refused MPI_Win_create returned a window");
        if (rc == MPI_SUCCESS)
            MPI_CHK(MPI_Win_free(&win));
        rc = MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        expect_refused(rc, "MPI_Win_create_dynamic");
        if (rc == MPI_SUCCESS)
            MPI_CHK(MPI_Win_free(&win));
    }
    check_window_works(RT_ALLOCATE, "NBRMA_CMA=0");

    /* alone on MPI_COMM_SELF there is nobody to read: allowed, and it works */
    rc = MPI_Win_create(buffer, sizeof buffer, sizeof(int), MPI_INFO_NULL, MPI_COMM_SELF, &win);
    CHECK(rc == MPI_SUCCESS, "NBRMA_CMA=0: MPI_Win_create on MPI_COMM_SELF failed (%d)", rc);
    if (rc == MPI_SUCCESS) {
        int value = 7, back = 0;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        MPI_CHK(MPI_Put(&value, 1, MPI_INT, 0, 2, 1, MPI_INT, win));
        MPI_CHK(MPI_Win_flush(0, win));
        MPI_CHK(MPI_Get(&back, 1, MPI_INT, 0, 2, 1, MPI_INT, win));
        MPI_CHK(MPI_Win_unlock(0, win));
        CHECK(back == 7 && buffer[2] == 7, "MPI_COMM_SELF window: got %d, memory %d", back,
              buffer[2]);
        MPI_CHK(MPI_Win_free(&win));
    }

    unsetenv("NBRMA_CMA");
    check_window_works(RT_CREATE, "without NBRMA_CMA");
    check_window_works(RT_DYNAMIC, "without NBRMA_CMA");
    return rt_finalize();
}
