/*
 * settings_check: settings with values nbrma does not allow are reported, never read
 * silently as something else.
 *
 *   environment  NBRMA_CMA=x and NBRMA_SHARE_USER_MEMORY=maybe are named at MPI_Init on
 *                stderr with their values and the values allowed; NBRMA_HELPER= (empty)
 *                is unset, not reported; windows still work (the defaults hold);
 *   info keys    access_after_access_reorder=maybe, accumulate_ops=bogus,
 *                accumulate_ordering=rar,bogus, no_locks=yes: window creation fails on
 *                every rank with MPI_ERR_INFO_VALUE, given on the last rank only; the
 *                last rank's message names the call, the key, the value and the values
 *                allowed; the reorder key's other spelling (MPI_WIN_..._REORDER=1), valid
 *                values and keys nbrma does not know are accepted; MPI_Win_set_info with
 *                a bad value fails with MPI_ERR_INFO_VALUE.
 */
#include "rmatest.h"

#include <unistd.h>

static int me, np;

static void bad_key(const char *key, const char *value)
{
    MPI_Info info;
    MPI_Win win = MPI_WIN_NULL;
    int *base = NULL;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "some_key_of_another_library", "whatever"));
    if (me == np - 1) MPI_CHK(MPI_Info_set(info, key, value));
    const int rc = MPI_Win_allocate(sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &base, &win);
    rt_expect_error(rc, MPI_ERR_INFO_VALUE, "MPI_Win_allocate", key);
    if (rc == MPI_SUCCESS) MPI_CHK(MPI_Win_free(&win));
    if (rc != MPI_SUCCESS && me == np - 1) {
        char text[MPI_MAX_ERROR_STRING] = "";
        int length = 0;
        MPI_Error_string(rc, text, &length);
        CHECK(strstr(text, key) && strstr(text, value) && strstr(text, "allowed"),
              "the message does not name %s=%s and the values allowed: %s", key, value, text);
    }
    MPI_CHK(MPI_Info_free(&info));
}

int main(int argc, char **argv)
{
    setenv("NBRMA_CMA", "x", 1);
    setenv("NBRMA_SHARE_USER_MEMORY", "maybe", 1);
    setenv("NBRMA_HELPER", "", 1);
    /* stderr into a file while MPI_Init runs */
    char path[] = "/tmp/nbrma-settings-XXXXXX";
    const int capture = mkstemp(path);
    const int saved = dup(2);
    if (capture >= 0) dup2(capture, 2);
    rt_init(&argc, &argv);
    dup2(saved, 2);
    close(saved);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    char said[4096] = "";
    if (capture >= 0) {
        const ssize_t n = pread(capture, said, sizeof said - 1, 0);
        said[n > 0 ? n : 0] = '\0';
        close(capture);
        unlink(path);
    }
    CHECK(strstr(said, "NBRMA_CMA=\"x\" is not valid (allowed: 0, 1)") != NULL,
          "MPI_Init did not report NBRMA_CMA=x: \"%s\"", said);
    CHECK(strstr(said, "NBRMA_SHARE_USER_MEMORY=\"maybe\" is not valid (allowed: 0, 1)") != NULL,
          "MPI_Init did not report NBRMA_SHARE_USER_MEMORY=maybe: \"%s\"", said);
    CHECK(strstr(said, "NBRMA_HELPER") == NULL, "MPI_Init reported the empty NBRMA_HELPER: \"%s\"",
          said);

    /* the defaults hold: a window over the user's memory works */
    int buffer[2] = { -1, -1 };
    MPI_Win win;
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    MPI_CHK(MPI_Win_create(buffer, sizeof buffer, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_CHK(MPI_Put(&me, 1, MPI_INT, right, 1, 1, MPI_INT, win));
    MPI_CHK(MPI_Win_unlock(right, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
    CHECK(buffer[1] == left, "the put did not arrive: %d", buffer[1]);
    MPI_CHK(MPI_Win_unlock(me, win));
    MPI_CHK(MPI_Win_free(&win));

    bad_key("access_after_access_reorder", "maybe");
    bad_key("accumulate_ops", "bogus");
    bad_key("accumulate_ordering", "rar,bogus");
    bad_key("no_locks", "yes");

    MPI_Info info;
    int *base = NULL;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "MPI_WIN_ACCESS_AFTER_ACCESS_REORDER", "1"));
    MPI_CHK(MPI_Info_set(info, "accumulate_ordering", "rar,waw"));
    MPI_CHK(MPI_Info_set(info, "accumulate_ops", "same_op"));
    MPI_CHK(MPI_Win_allocate(sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &base, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Info_set(info, "exposure_after_access_reorder", "perhaps"));
    rt_expect_error(MPI_Win_set_info(win, info), MPI_ERR_INFO_VALUE, "MPI_Win_set_info",
                    "exposure_after_access_reorder=perhaps");
    MPI_CHK(MPI_Info_free(&info));
    MPI_CHK(MPI_Win_free(&win));
    return rt_finalize();
}
