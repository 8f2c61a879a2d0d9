/*
 * cma_ptracer: nbrma consents to being traced (PR_SET_PTRACER) only where Yama asks
 * for it, only while a window needs it, and never takes back what someone else gave
 *. Rank 1 reads a word of rank 0 with process_vm_readv, the access
 * a window's cross-memory attach makes, at each step:
 *
 *   Yama ptrace_scope 1: not readable before any window (else someone else, e.g. UCX,
 *   consented: then it must stay readable after nbrma's windows are gone, and the rest
 *   is skipped); readable while an MPI_Win_create window or a dynamic one exists, still
 *   while the second of two exists, no longer once the last is freed;
 *   scope 2 or 3: MPI_Win_create fails on every rank with
 *   MPI_ERR_UNSUPPORTED_OPERATION naming ptrace_scope (unless rank 1 may read rank 0
 *   anyway, being privileged: then it must work);
 *   no Yama or scope 0: nothing to consent to; the program says so (SKIP) after checking
 *   that a window works.
 *
 * With NBRMA_TRANSPORT=ucx nbrma does not use cross-memory attach itself: SKIP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rmatest.h"

static volatile unsigned long long word = 0x5eed5eed5eedull;
static int pid0;
static unsigned long long address0;

/* Rank 1: 1 if it can read rank 0's word, 0 on EPERM, -1 on another failure. Collective. */
static int readable(void)
{
    int result = 0;
    if (rt_rank() == 1) {
        unsigned long long value = 0;
        struct iovec local = { &value, sizeof value };
        struct iovec remote = { (void *) (unsigned long) address0, sizeof value };
        ssize_t moved = process_vm_readv(pid0, &local, 1, &remote, 1, 0);
        result = moved == (ssize_t) sizeof value && value == word ? 1 : errno == EPERM ? 0 : -1;
    }
    MPI_CHK(MPI_Bcast(&result, 1, MPI_INT, 1, MPI_COMM_WORLD));
    return result;
}

static int yama_scope(void)
{
    int scope = -1;
    FILE *file = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (file) {
        if (fscanf(file, "%d", &scope) != 1)
            scope = -1;
        fclose(file);
    }
    return scope;
}

static void create(int flavor, rt_win_t *w)
{
    rt_win_create(flavor, sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, w);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    const char *transport = getenv("NBRMA_TRANSPORT");
    const int scope = yama_scope();
    const char *skip = NULL;
    pid0 = (int) getpid();
    address0 = (unsigned long long) (unsigned long) &word;
    MPI_CHK(MPI_Bcast(&pid0, 1, MPI_INT, 0, MPI_COMM_WORLD));
    MPI_CHK(MPI_Bcast(&address0, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD));
    rt_win_t a, b;

    if (transport && strcmp(transport, "ucx") == 0) {
        skip = "NBRMA_TRANSPORT=ucx: nbrma uses no cross-memory attach of its own";
    } else if (scope == 1) {
        if (readable() != 0) {
            skip = "Yama ptrace_scope 1, but rank 0 is readable before any window (someone "
                   "else consented): checked only that nbrma leaves that consent alone";
            create(RT_CREATE, &a);
            rt_win_free(&a);
            CHECK(readable() == 1, "someone else's consent was withdrawn with the window");
        } else {
            create(RT_CREATE, &a);
            CHECK(readable() == 1, "not readable while an MPI_Win_create window exists");
            create(RT_DYNAMIC, &b);
            rt_win_free(&a);
            CHECK(readable() == 1, "not readable while a dynamic window still exists");
            rt_win_free(&b);
            CHECK(readable() == 0, "still readable after the last window was freed");
            create(RT_DYNAMIC, &a);
            CHECK(readable() == 1, "not readable again with a new window");
            rt_win_free(&a);
            CHECK(readable() == 0, "still readable after the new window was freed");
        }
    } else if (scope >= 2) {
        if (readable() == 1) {
            skip = "Yama ptrace_scope >= 2 but rank 1 may read rank 0 (privileged): checked "
                   "only that windows work";
            create(RT_CREATE, &a);
            rt_win_free(&a);
        } else {
            static int buffer[2];
            MPI_Win win = MPI_WIN_NULL;
            int rc = MPI_Win_create(buffer, sizeof buffer, sizeof(int), MPI_INFO_NULL,
                                    MPI_COMM_WORLD, &win);
            char msg[MPI_MAX_ERROR_STRING] = "";
            int len = 0;
            rt_expect_error(rc, MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Win_create",
                            "Yama ptrace_scope >= 2");
            MPI_Error_string(rc, msg, &len);
            CHECK(rc == MPI_SUCCESS || strstr(msg, "ptrace_scope") != NULL,
                  "message \"%s\" does not name ptrace_scope", msg);
            if (rc == MPI_SUCCESS)
                MPI_CHK(MPI_Win_free(&win));
        }
    } else {
        skip = "no Yama (or ptrace_scope 0): no consent is ever needed, nothing to withdraw; "
               "checked only that windows work and rank 0 stays readable";
        CHECK(readable() == 1, "rank 0 not readable without Yama");
        create(RT_CREATE, &a);
        rt_win_free(&a);
        CHECK(readable() == 1, "rank 0 not readable after a window without Yama");
    }
    if (skip && rt_rank() == 0)
        printf("SKIP: %s\n", skip);
    return rt_finalize();
}
