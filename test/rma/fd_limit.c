/*
 * fd_limit: windows cost no file descriptor. With RLIMIT_NOFILE lowered to 64 after
 * MPI_Init, 200 MPI_Win_create windows over the user's memory, 50 over MPI_Alloc_mem
 * memory and 20 MPI_Win_allocate windows live at once, as under MPICH; then each rank
 * puts into every window of its right neighbour, and every value is checked. Then, with
 * every descriptor below the limit in use, MPI_Win_allocate fails with MPI_ERR_NO_MEM
 * and a message naming RLIMIT_NOFILE, and works again once the limit is back.
 */
#include "rmatest.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

static void limit_hit(void)
{
    MPI_Win win;
    int *base;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    /* every descriptor below the limit in use: the holes filled with /dev/null */
    int fillers[64], filled = 0;
    for (int fd; filled < 64 && (fd = open("/dev/null", O_RDONLY)) >= 0;) fillers[filled++] = fd;
    CHECK(errno == EMFILE, "open stopped with %s, not EMFILE", strerror(errno));
    const int rc = MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    while (filled > 0) close(fillers[--filled]);
    rt_expect_error(rc, MPI_ERR_NO_MEM, "MPI_Win_allocate", "no descriptor left");
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING] = "";
        int length = 0;
        MPI_Error_string(rc, text, &length);
        CHECK(strstr(text, "MPI_Win_allocate") && strstr(text, "RLIMIT_NOFILE"),
              "the message does not name the call and the limit: %s", text);
    } else {
        MPI_CHK(MPI_Win_free(&win));
    }
    MPI_CHK(MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    MPI_CHK(MPI_Win_free(&win));
}


#define CREATED 200
#define ALLOCATED 50
#define OWN 20
#define WINDOWS (CREATED + ALLOCATED + OWN)

int main(int argc, char **argv)
{
    static MPI_Win windows[WINDOWS];
    static int user[CREATED][8];
    static int *bases[WINDOWS];
    rt_init(&argc, &argv);
    const int me = rt_rank(), np = rt_nprocs();
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    struct rlimit limit;
    CHECK(getrlimit(RLIMIT_NOFILE, &limit) == 0, "getrlimit failed");
    limit.rlim_cur = 64;
    CHECK(setrlimit(RLIMIT_NOFILE, &limit) == 0, "setrlimit(RLIMIT_NOFILE, 64) failed");

    for (int i = 0; i < WINDOWS; i++) {
        int rc;
        if (i < CREATED) {
            bases[i] = user[i];
            rc = MPI_Win_create(bases[i], 8 * sizeof(int), sizeof(int), MPI_INFO_NULL,
                                MPI_COMM_WORLD, &windows[i]);
        } else if (i < CREATED + ALLOCATED) {
            MPI_CHK(MPI_Alloc_mem(8 * sizeof(int), MPI_INFO_NULL, &bases[i]));
            rc = MPI_Win_create(bases[i], 8 * sizeof(int), sizeof(int), MPI_INFO_NULL,
                                MPI_COMM_WORLD, &windows[i]);
        } else {
            rc = MPI_Win_allocate(8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                                  &bases[i], &windows[i]);
        }
        if (rc != MPI_SUCCESS) {
            char text[MPI_MAX_ERROR_STRING] = "";
            int length = 0;
            MPI_Error_string(rc, text, &length);
            CHECK(rc == MPI_SUCCESS, "window %d of %d with 64 descriptors: %s", i, WINDOWS, text);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int j = 0; j < 8; j++) bases[i][j] = -1;
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < WINDOWS; i++) {
        const int value = me * 10000 + i;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, windows[i]));
        MPI_CHK(MPI_Put(&value, 1, MPI_INT, right, 3, 1, MPI_INT, windows[i]));
        MPI_CHK(MPI_Win_unlock(right, windows[i]));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    int wrong = 0;
    for (int i = 0; i < WINDOWS; i++) {
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, windows[i]));
        wrong += bases[i][3] != left * 10000 + i;
        MPI_CHK(MPI_Win_unlock(me, windows[i]));
    }
    CHECK(wrong == 0, "%d of %d windows did not get their put", wrong, WINDOWS);
    for (int i = 0; i < WINDOWS; i++) {
        MPI_CHK(MPI_Win_free(&windows[i]));
        if (i >= CREATED && i < CREATED + ALLOCATED) MPI_CHK(MPI_Free_mem(bases[i]));
    }
    limit_hit();
    return rt_finalize();
}
