/*
 * segment_reuse: MPI_Win_create and MPI_Win_create_dynamic windows reuse a freed
 * window's node segment (its control regions, kept mapped: transport/shm/segment_cache)
 * and such a window behaves exactly as one on a fresh segment. Each round creates a
 * window (create and dynamic flavors in turn, on MPI_COMM_WORLD or on halves of it, so
 * that the cached segments sometimes fit and sometimes do not and the ranks must agree
 * on a fresh one), then checks in it:
 *
 *   clean control   every notification counter reads 0 after MPIX_Win_notify_set_num,
 *                   although the window before it left counters at non-zero values;
 *   locks           an exclusive lock on every rank in turn with a get + flush + put
 *                   increment of a counter (only the lock protects it): exact total;
 *   data            a put into the right neighbour under MPI_Win_lock_all, seen there;
 *   notifications   MPIX_Put_notify to the right neighbour bumps its counter 1 to 1.
 *
 * In nbrma the counter segments_reused must grow (every transport mode: the segment
 * holds the control regions whatever reaches the peers).
 */
#include "rmatest.h"

#define ROUNDS 12
#define NOTIFY 4

static int me, np;


static void one_round(int round, MPI_Comm comm)
{
    int rank, size;
    MPI_CHK(MPI_Comm_rank(comm, &rank));
    MPI_CHK(MPI_Comm_size(comm, &size));
    const int dynamic = round % 2;
    static long long memory[4];
    MPI_Win win;
    MPI_Aint base = 0;
    memory[0] = memory[1] = memory[2] = memory[3] = 0;
    if (dynamic) {
        MPI_CHK(MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &win));
        MPI_CHK(MPI_Win_attach(win, memory, sizeof memory));
        MPI_CHK(MPI_Get_address(memory, &base));
    } else {
        MPI_CHK(MPI_Win_create(memory, sizeof memory, sizeof(long long), MPI_INFO_NULL, comm,
                               &win));
    }
    MPI_Aint *bases = malloc(sizeof(MPI_Aint) * size);
    MPI_CHK(MPI_Allgather(&base, 1, MPI_AINT, bases, 1, MPI_AINT, comm));
    /* displacement of element i at rank r */
#define DISP(r, i) (dynamic ? bases[r] + (MPI_Aint)((i) * sizeof(long long)) : (MPI_Aint)(i))

#ifndef NO_NBRMA
    MPI_CHK(MPIX_Win_notify_set_num(win, NOTIFY));
    for (int i = 0; i < NOTIFY; i++) {
        MPI_Count value = -1;
        MPI_CHK(MPIX_Win_notify_get_value(win, i, &value));
        CHECK(value == 0, "round %d: notification counter %d starts at %lld", round, i,
              (long long) value);
    }
#endif
    MPI_CHK(MPI_Barrier(comm));

    for (int t = 0; t < size; t++) {
        long long v = -1;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
        MPI_CHK(MPI_Get(&v, 1, MPI_LONG_LONG, t, DISP(t, 0), 1, MPI_LONG_LONG, win));
        MPI_CHK(MPI_Win_flush(t, win));
        v += 1;
        MPI_CHK(MPI_Put(&v, 1, MPI_LONG_LONG, t, DISP(t, 0), 1, MPI_LONG_LONG, win));
        MPI_CHK(MPI_Win_unlock(t, win));
    }
    const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    long long mine = 1000 * round + rank;
    MPI_CHK(MPI_Win_lock_all(0, win));
    MPI_CHK(MPI_Put(&mine, 1, MPI_LONG_LONG, right, DISP(right, 1), 1, MPI_LONG_LONG, win));
#ifndef NO_NBRMA
    MPI_CHK(MPIX_Put_notify(&mine, 1, MPI_LONG_LONG, right, DISP(right, 2), 1, MPI_LONG_LONG,
                            (round + 1) % NOTIFY, win));
#endif
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Barrier(comm));

    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    CHECK(memory[0] == size, "round %d: lock-protected counter %lld, expected %d", round,
          memory[0], size);
    CHECK(memory[1] == 1000 * round + left, "round %d: put from %d: %lld", round, left,
          memory[1]);
    MPI_CHK(MPI_Win_unlock(rank, win));
#ifndef NO_NBRMA
    for (int i = 0; i < NOTIFY; i++) {
        MPI_Count value = -1;
        MPI_CHK(MPIX_Win_notify_get_value(win, i, &value));
        CHECK(value == (i == (round + 1) % NOTIFY), "round %d: notification counter %d is %lld",
              round, i, (long long) value);
    }
#endif
    MPI_CHK(MPI_Barrier(comm));
    if (dynamic) MPI_CHK(MPI_Win_detach(win, memory));
    MPI_CHK(MPI_Win_free(&win));
    free(bases);
#undef DISP
}

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);
    MPI_Comm half;
    MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, me < np / 2, me, &half));
    unsigned long long reused0 = rt_counter("segments_reused");

    for (int round = 0; round < ROUNDS; round++) {
        /* world, world, half, half, world, half, ... : fits and misfits */
        const int on_half = np >= 4 && (round % 5 == 2 || round % 5 == 3 || round % 5 == 0);
        one_round(round, on_half ? half : MPI_COMM_WORLD);
    }
    /* an allocate window in between takes no cached segment and leaves them usable */
    long long *shared;
    MPI_Win alloc;
    MPI_CHK(MPI_Win_allocate(8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &shared, &alloc));
    MPI_CHK(MPI_Win_free(&alloc));
    one_round(ROUNDS, MPI_COMM_WORLD);

#ifndef NO_NBRMA
    CHECK(rt_counter("segments_reused") > reused0, "no window reused a freed window's segment");
#else
    (void) reused0;
#endif
    MPI_CHK(MPI_Comm_free(&half));
    return rt_finalize();
}
