/*
 * error_messages: an erroneous call's message names the user's call and the offending
 * values, and carries no line number of nbrma's sources:
 *
 *   MPI_Put to rank np           "MPI_Put", "target rank <np> of a window of <np> ranks"
 *   MPI_Put past the window      "MPI_Put", "displacement 100 x disp_unit 4",
 *                                "window of 64 bytes"
 *   MPI_Put with count -1        "MPI_Put", "origin_count -1"
 *   MPI_Win_lock of rank -7      "MPI_Win_lock", "target rank -7"
 *   MPI_Win_flush of rank np     "MPI_Win_flush", "target rank <np>"
 *   MPI_Get past a dynamic       "MPI_Get", "not inside one region"
 *   window's region
 *   a window over an             "MPI_Win_create_dynamic", "intercommunicator" (and
 *   intercommunicator            MPI_Win_allocate), MPI_ERR_COMM
 * No message holds "(<digits>)" or "MPI_Win_call_errhandler".
 */
#include "rmatest.h"

#include <ctype.h>

static void expect_message(int rc, int cls, const char *call, const char *part1, const char *part2)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int length = 0;
    rt_expect_error(rc, cls, call, part1);
    if (rc == MPI_SUCCESS) return;
    MPI_Error_string(rc, text, &length);
    CHECK(strstr(text, call) && strstr(text, part1) && (!part2 || strstr(text, part2)),
          "%s: the message does not say \"%s\"%s%s: %s", call, part1, part2 ? " and " : "",
          part2 ? part2 : "", text);
    CHECK(!strstr(text, "MPI_Win_call_errhandler"), "%s: the message names the wrong call: %s",
          call, text);
    for (const char *open = strchr(text, '('); open; open = strchr(open + 1, '(')) {
        const char *p = open + 1;
        while (isdigit((unsigned char) *p)) p++;
        CHECK(!(p > open + 1 && *p == ')'), "%s: a line number in the message: %s", call, text);
    }
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    const int me = rt_rank(), np = rt_nprocs();
    char expect[96];
    int *base, value = 1;
    MPI_Win win;
    MPI_CHK(MPI_Win_allocate(64, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Win_lock_all(0, win));
    snprintf(expect, sizeof expect, "target rank %d of a window of %d ranks", np, np);
    expect_message(MPI_Put(&value, 1, MPI_INT, np, 0, 1, MPI_INT, win), MPI_ERR_RANK, "MPI_Put",
                   expect, NULL);
    expect_message(MPI_Put(&value, 1, MPI_INT, 0, 100, 1, MPI_INT, win), MPI_ERR_RMA_RANGE,
                   "MPI_Put", "displacement 100 x disp_unit 4", "window of 64 bytes");
    expect_message(MPI_Put(&value, -1, MPI_INT, 0, 0, 1, MPI_INT, win), MPI_ERR_COUNT, "MPI_Put",
                   "origin_count -1", NULL);
    snprintf(expect, sizeof expect, "target rank %d", np);
    expect_message(MPI_Win_flush(np, win), MPI_ERR_RANK, "MPI_Win_flush", expect, NULL);
    MPI_CHK(MPI_Win_unlock_all(win));
    expect_message(MPI_Win_lock(MPI_LOCK_SHARED, -7, 0, win), MPI_ERR_RANK, "MPI_Win_lock",
                   "target rank -7", NULL);
    MPI_CHK(MPI_Win_free(&win));

    int64_t region[4] = { 0, 0, 0, 0 }, got[8];
    MPI_Aint address;
    MPI_CHK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Win_attach(win, region, sizeof region));
    MPI_CHK(MPI_Get_address(region, &address));
    MPI_CHK(MPI_Bcast(&address, 1, MPI_AINT, 0, MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    expect_message(MPI_Get(got, 8, MPI_INT64_T, 0, address, 8, MPI_INT64_T, win),
                   MPI_ERR_RMA_RANGE, "MPI_Get", "not inside one region", NULL);
    MPI_CHK(MPI_Win_unlock(0, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_detach(win, region));
    MPI_CHK(MPI_Win_free(&win));

    if (np >= 2) {  /* the even ranks and the odd ranks, joined */
        MPI_Comm half, inter;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half));
        MPI_CHK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, me % 2 ? 0 : 1, 7, &inter));
        MPI_CHK(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
        win = MPI_WIN_NULL;
        expect_message(MPI_Win_create_dynamic(MPI_INFO_NULL, inter, &win), MPI_ERR_COMM,
                       "MPI_Win_create_dynamic", "intercommunicator", NULL);
        expect_message(MPI_Win_allocate(64, 1, MPI_INFO_NULL, inter, &base, &win), MPI_ERR_COMM,
                       "MPI_Win_allocate", "intercommunicator", NULL);
        CHECK(win == MPI_WIN_NULL, "a window was made over an intercommunicator");
        MPI_CHK(MPI_Comm_free(&inter));
        MPI_CHK(MPI_Comm_free(&half));
    }
    return rt_finalize();
}
