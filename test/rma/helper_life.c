/*
 * helper_life: the MPI program behind test/rma/helper_lifecycle: the node's
 * SmartInterrupts helper under NBRMA_PROGRESS=interrupt (the program sets it before
 * MPI_Init), from start to end. First argument, the scenario:
 *
 *   normal      a window, a fence epoch with puts checked, MPI_Finalize; rank 0 then
 *               checks that its helper is gone (MPI_Finalize reaps it)
 *   abort       as normal up to the epoch, then the last rank calls MPI_Abort
 *   kill_one    ... then the last rank kills itself (SIGKILL); mpiexec kills the rest
 *   kill_all    ... then every rank kills itself
 *   helpers2    NBRMA_HELPERS=2 (3 ranks): two helpers run, the epoch works, normal end
 *   bad_helpers NBRMA_HELPERS=<second argument>: window creation fails everywhere with
 *               MPI_ERR_INFO and a message naming NBRMA_HELPERS; MPI still works
 *   no_helper   NBRMA_HELPER=<second argument> (a program that does not exist or fails
 *               at start): the same with MPI_ERR_OTHER and a message naming the helper
 *   mismatch    NBRMA_PROGRESS=interrupt on rank 0 only: MPI_Init works everywhere, and
 *               every window creation fails on every rank with MPI_ERR_INFO and a
 *               message saying NBRMA_PROGRESS differs between ranks; MPI still works
 *   helper_fds  the helper holds no descriptor of its ranks: each of its descriptors is
 *               /dev/null or a pidfd (no pipe to the launcher, no socket), normal end
 *   kill_waiting  rank 0 (which started the helper) holds an exclusive lock on rank 1
 *               while the others wait for it, then kills itself: the job must end as
 *               without a helper (the driver times it)
 *   helper_killed  rank 0 kills the helper after the first epoch; then 10 times rank 1
 *               asks for a lock rank 0 holds, ends the epoch with MPIX_Win_iunlock and
 *               computes (only its progress thread can take the lock when rank 0
 *               releases it): the puts must arrive, and the ranks say once that the
 *               helper is gone
 *
 * Before the end, every scenario with a helper notes "helper pid <pid>" (rank 0, after
 * checking that /proc/<pid>/comm is nbrma-helper), every rank "rank pid <pid>", on
 * stdout and in the file $HELPER_LIFE_NOTES, for the driver, which checks that no helper
 * of the job is left once mpiexec returned.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <unistd.h>

#include "rmatest.h"

#define N 8

static int me, np;

/* Window creation must fail with error class `want` and a message containing `word`. */
static void creation_fails(int want, const char *word)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Win win;
    int *base = NULL;
    int err = MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                               &win);
    CHECK(err != MPI_SUCCESS, "MPI_Win_allocate succeeded although the helper cannot run");
    if (err != MPI_SUCCESS) {
        int cls = 0, len = 0;
        char msg[MPI_MAX_ERROR_STRING];
        MPI_Error_class(err, &cls);
        MPI_Error_string(err, msg, &len);
        CHECK(cls == want, "error class %d, not %d (%s)", cls, want, msg);
        CHECK(strstr(msg, word) != NULL && strstr(msg, "NBRMA_PROGRESS=interrupt") != NULL,
              "the message does not name %s: %s", word, msg);
        if (me == 0)
            printf("window creation failed as it should: %s\n", msg);
    }
    int one = 1, sum = 0;
    MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == np, "MPI_Allreduce after the failed creation gave %d", sum);
}

/* A fence epoch: every rank puts its rank into its right neighbour; checked. */
static void epoch(MPI_Win win, int *base)
{
    for (int i = 0; i < N; i++)
        base[i] = -1;
    MPI_CHK(MPI_Win_fence(0, win));
    int right = (me + 1) % np, value = me;
    MPI_CHK(MPI_Put(&value, 1, MPI_INT, right, me % N, 1, MPI_INT, win));
    MPI_CHK(MPI_Win_fence(0, win));
    int left = (me + np - 1) % np;
    CHECK(base[left % N] == left, "the put from rank %d did not arrive: %d", left, base[left % N]);
}

/* A line for the driver: on stdout, and appended to $HELPER_LIFE_NOTES if set (mpiexec
 * may drop what a rank printed when MPI_Abort or a SIGKILL ends the job). */
static void note(const char *format, ...)
{
    char line[128];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    fputs(line, stdout);
    fflush(stdout);
    const char *path = getenv("HELPER_LIFE_NOTES");
    int fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT, 0600) : -1;
    if (fd >= 0) {
        if (write(fd, line, strlen(line)) < 0)
            perror("helper_life: notes");
        close(fd);
    }
}

static int helper_alive(pid_t pid)
{
    char path[64], comm[64] = "", state = 0;
    snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int got = fscanf(f, "%*d (%63[^)]) %c", comm, &state);
    fclose(f);
    return got == 2 && strcmp(comm, "nbrma-helper") == 0 && state != 'Z';
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "normal";
    setenv("NBRMA_PROGRESS", "interrupt", 1);
    if (strcmp(scenario, "helpers2") == 0)
        setenv("NBRMA_HELPERS", "2", 1);
    if (strcmp(scenario, "bad_helpers") == 0)
        setenv("NBRMA_HELPERS", argc > 2 ? argv[2] : "0", 1);
    if (strcmp(scenario, "no_helper") == 0)
        setenv("NBRMA_HELPER", argc > 2 ? argv[2] : "/nonexistent/nbrma-helper", 1);
    if (strcmp(scenario, "mismatch") == 0 && (!getenv("PMI_RANK") || atoi(getenv("PMI_RANK"))))
        unsetenv("NBRMA_PROGRESS"); /* interrupt on rank 0 only (mpiexec's PMI_RANK) */
    rt_init_world(&argc, &argv, &me, &np);
    note("rank pid %d\n", (int) getpid());

    if (strcmp(scenario, "bad_helpers") == 0) {
        creation_fails(MPI_ERR_INFO, "NBRMA_HELPERS");
        return rt_finalize();
    }
    if (strcmp(scenario, "no_helper") == 0) {
        creation_fails(MPI_ERR_OTHER, argc > 2 ? argv[2] : "/nonexistent/nbrma-helper");
        return rt_finalize();
    }
    if (strcmp(scenario, "mismatch") == 0) {
        creation_fails(MPI_ERR_INFO, "NBRMA_PROGRESS differs between ranks");
        return rt_finalize();
    }

    MPI_Win win;
    int *base = NULL;
    MPI_CHK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                             &win));
    unsigned long long pid = 0, helpers = 0;
    MPI_CHK(nbrma_get_counter("helper_pid", &pid));
    MPI_CHK(nbrma_get_counter("helpers", &helpers));
    const unsigned long long want = strcmp(scenario, "helpers2") == 0 ? 2 : 1;
    CHECK(helpers == want, "%llu helpers, not %llu", helpers, want);
    CHECK(pid > 0 && helper_alive((pid_t) pid), "no running nbrma-helper with pid %llu", pid);
    if (me == 0)
        note("helper pid %llu\n", pid);
    epoch(win, base);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD)); /* the pid line is out before anyone dies */

    if (strcmp(scenario, "helper_fds") == 0 && me == 0) {
        char directory[64], path[320], target[256];
        snprintf(directory, sizeof directory, "/proc/%llu/fd", pid);
        int held = 0;
        for (int fd = 0; fd < 1024; fd++) {
            snprintf(path, sizeof path, "%s/%d", directory, fd);
            const ssize_t n = readlink(path, target, sizeof target - 1);
            if (n < 0) continue;
            target[n] = '\0';
            held++;
            CHECK(strcmp(target, "/dev/null") == 0 || strstr(target, "pidfd") != NULL,
                  "the helper holds descriptor %d: %s", fd, target);
        }
        CHECK(held >= 3, "could read only %d of the helper's descriptors", held);
    }
    if (strcmp(scenario, "kill_waiting") == 0) {
        if (me == 0) MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        if (me == 0) {
            usleep(300000); /* the others are waiting for the lock */
            raise(SIGKILL);
        }
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win); /* never granted */
        sleep(60);
    }
    if (strcmp(scenario, "helper_killed") == 0) {
        if (me == 0) {
            CHECK(kill((pid_t) pid, SIGKILL) == 0, "cannot kill the helper %llu", pid);
            while (helper_alive((pid_t) pid)) usleep(1000);
        }
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        /* rank 1 opens an exclusive lock epoch on itself while rank 0 holds the lock,
         * closes it with MPIX_Win_iunlock and computes: its progress thread must take the
         * lock when rank 0 releases it, which the helper would have woken it for */
        for (int i = 0; i < 10; i++) {
            if (me == 0) MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
            const int value = 1000 + i;
            if (me == 0) {
                usleep(10000);
                MPI_CHK(MPI_Win_unlock(1, win));
            } else if (me == 1) {
                MPI_Request requests[2];
                MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, 1, 0, win, &requests[0]));
                MPI_CHK(MPI_Put(&value, 1, MPI_INT, 1, 0, 1, MPI_INT, win));
                MPI_CHK(MPIX_Win_iunlock(1, win, &requests[1]));
                usleep(60000); /* computing */
                MPI_CHK(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
            }
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
            if (me == 1) CHECK(base[0] == value, "epoch %d: the put did not arrive: %d", i, base[0]);
        }
    }
    if (strcmp(scenario, "abort") == 0 && me == np - 1)
        MPI_Abort(MPI_COMM_WORLD, 3);
    if ((strcmp(scenario, "kill_one") == 0 && me == np - 1) || strcmp(scenario, "kill_all") == 0)
        raise(SIGKILL);
    if (strcmp(scenario, "abort") == 0 || strcmp(scenario, "kill_one") == 0) {
        MPI_Barrier(MPI_COMM_WORLD); /* never returns: mpiexec ends the job */
        sleep(60);
    }

    MPI_CHK(MPI_Win_free(&win));
    int errs = rt_finalize();
    if (me == 0 && helper_alive((pid_t) pid)) {
        printf("helper %llu still runs after MPI_Finalize\n", pid);
        errs = 1;
    }
    return errs;
}
