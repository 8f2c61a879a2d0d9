/*
 * complete_requests: the requests nbrma's opening calls return (MPIX_Win_ilock,
 * ilock_all, istart, ipost), and closing calls whose epoch ended inside the call, are
 * complete receives from MPI_PROC_NULL (MPICH's built-in handle, handed out directly once
 * known, and recognized by MPI_Wait). They must behave as any complete request, whichever
 * call completes them, and a program's own receives from MPI_PROC_NULL must too:
 *
 *   MPI_Wait (status ignored, and with a status), MPI_Test, MPI_Request_free,
 *   MPI_Waitall over them mixed with the program's MPI_Irecv from MPI_PROC_NULL and a
 *   real two-sided exchange, MPI_Waitall ignoring statuses (alone, and with a null
 *   handle and a real exchange), MPI_Request_get_status; every handle ends MPI_REQUEST_NULL
 *   (get_status leaves it), a receive from MPI_PROC_NULL reports count 0 and the status
 *   MPICH gave the program's first such receive (MPICH 4.0.2 reports source 0 and tag 0
 *   there, not MPI_PROC_NULL and MPI_ANY_TAG as MPI says; nbrma changes nothing in it),
 *   and the puts inside the epochs arrive.
 */
#include "rmatest.h"

#define ROUNDS 50

static int me, np;
static MPI_Status reference; /* MPICH's status of a receive from MPI_PROC_NULL */

static void check_null_status(const MPI_Status *status, const char *what)
{
    int count = -1;
    MPI_CHK(MPI_Get_count(status, MPI_BYTE, &count));
    CHECK(status->MPI_SOURCE == reference.MPI_SOURCE && status->MPI_TAG == reference.MPI_TAG &&
              count == 0,
          "%s: status source %d tag %d count %d (MPICH's own: source %d tag %d)", what,
          status->MPI_SOURCE, status->MPI_TAG, count, reference.MPI_SOURCE,
          reference.MPI_TAG);
}

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);
    MPI_Request first;
    MPI_CHK(MPI_Irecv(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &first));
    MPI_CHK(MPI_Wait(&first, &reference));
    long long *base;
    MPI_Win win;
    MPI_CHK(MPI_Win_allocate(8 * np, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    for (int i = 0; i < np; i++)
        base[i] = -1;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    const int right = (me + 1) % np, left = (me - 1 + np) % np;

    for (int round = 0; round < ROUNDS; round++) {
        long long value = 1000 * round + me;
        MPI_Request opened, closed;
        MPI_Status status;
        MPI_CHK(MPIX_Win_ilock(MPI_LOCK_EXCLUSIVE, right, 0, win, &opened));
        MPI_CHK(MPI_Put(&value, 1, MPI_LONG_LONG, right, me, 1, MPI_LONG_LONG, win));
        MPI_CHK(MPIX_Win_iunlock(right, win, &closed));
        switch (round % 6) {
        case 0:  /* MPI_Wait, status ignored, then with a status */
            MPI_CHK(MPI_Wait(&opened, MPI_STATUS_IGNORE));
            MPI_CHK(MPI_Wait(&closed, &status));
            break;
        case 1: {  /* MPI_Test until done */
            int flag = 0;
            while (!flag)
                MPI_CHK(MPI_Test(&opened, &flag, MPI_STATUS_IGNORE));
            flag = 0;
            while (!flag)
                MPI_CHK(MPI_Test(&closed, &flag, &status));
            break;
        }
        case 2: {  /* get_status leaves the handle; a wait frees it */
            int flag = 0;
            MPI_CHK(MPI_Request_get_status(opened, &flag, MPI_STATUS_IGNORE));
            CHECK(flag && opened != MPI_REQUEST_NULL, "round %d: get_status flag %d", round,
                  flag);
            MPI_CHK(MPI_Wait(&opened, MPI_STATUS_IGNORE));
            MPI_CHK(MPI_Wait(&closed, MPI_STATUS_IGNORE));
            break;
        }
        case 3: {  /* freed unwaited (the closing one after it completed) */
            MPI_CHK(MPI_Request_free(&opened));
            MPI_CHK(MPI_Wait(&closed, MPI_STATUS_IGNORE));
            break;
        }
        case 4: {  /* Waitall ignoring statuses (nbrma sets these to null itself): alone,
                    * or with a null handle and a real exchange */
            if ((round / 6) % 2 == 0) {
                MPI_Request two[2] = { opened, closed };
                MPI_CHK(MPI_Waitall(2, two, MPI_STATUSES_IGNORE));
                CHECK(two[0] == MPI_REQUEST_NULL && two[1] == MPI_REQUEST_NULL,
                      "round %d: Waitall (statuses ignored) left a request", round);
            } else {
                MPI_Request all[5];
                long long token = round, got = -1;
                all[0] = opened;
                all[1] = MPI_REQUEST_NULL;
                all[2] = closed;
                MPI_CHK(MPI_Irecv(&got, 1, MPI_LONG_LONG, left, 8, MPI_COMM_WORLD, &all[3]));
                MPI_CHK(MPI_Isend(&token, 1, MPI_LONG_LONG, right, 8, MPI_COMM_WORLD, &all[4]));
                MPI_CHK(MPI_Waitall(5, all, MPI_STATUSES_IGNORE));
                for (int i = 0; i < 5; i++)
                    CHECK(all[i] == MPI_REQUEST_NULL,
                          "round %d: Waitall (statuses ignored) left request %d", round, i);
                CHECK(got == round, "round %d: received %lld", round, got);
            }
            opened = closed = MPI_REQUEST_NULL;
            break;
        }
        default: {  /* Waitall with the program's own requests */
            MPI_Request all[5];
            MPI_Status statuses[5];
            long long token = round, got = -1;
            all[0] = opened;
            MPI_CHK(MPI_Irecv(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &all[1]));
            all[2] = closed;
            MPI_CHK(MPI_Irecv(&got, 1, MPI_LONG_LONG, left, 9, MPI_COMM_WORLD, &all[3]));
            MPI_CHK(MPI_Isend(&token, 1, MPI_LONG_LONG, right, 9, MPI_COMM_WORLD, &all[4]));
            MPI_CHK(MPI_Waitall(5, all, statuses));
            for (int i = 0; i < 5; i++)
                CHECK(all[i] == MPI_REQUEST_NULL, "round %d: Waitall left request %d", round, i);
            check_null_status(&statuses[1], "Waitall, the program's MPI_PROC_NULL receive");
            CHECK(got == round, "round %d: received %lld", round, got);
            opened = closed = MPI_REQUEST_NULL;
            break;
        }
        }
        CHECK(opened == MPI_REQUEST_NULL && closed == MPI_REQUEST_NULL,
              "round %d: a request handle is not MPI_REQUEST_NULL after completion", round);
        /* the program's own receive from MPI_PROC_NULL, waited with a status */
        MPI_Request own;
        MPI_CHK(MPI_Irecv(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &own));
        MPI_CHK(MPI_Wait(&own, &status));
        check_null_status(&status, "MPI_Wait on the program's MPI_PROC_NULL receive");
        CHECK(own == MPI_REQUEST_NULL, "round %d: own receive not MPI_REQUEST_NULL", round);
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
        CHECK(base[left] == 1000 * round + left, "round %d: put from %d: %lld", round, left,
              base[left]);
        MPI_CHK(MPI_Win_unlock(me, win));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    }
    MPI_CHK(MPI_Win_free(&win));
    return rt_finalize();
}
