/*
 * user_memory_churn: MPI_Win_create windows over heap memory that the program allocates
 * and frees around them, as real codes do, while nbrma keeps freed windows' pages moved
 * for the next window (NBRMA_SHARE_USER_MEMORY=1, which this program sets before MPI_Init;
 * transport/shm/user_memory.hpp). Every round allocates a buffer of
 * a random size (a third of them above glibc's mmap threshold, so freeing them unmaps
 * the memory and the next large buffer may be mapped at the same address), creates a
 * window over it, and checks:
 *
 *   data           a get of the right neighbour's last word and a fetch_and_op on its
 *                  first read what the neighbour wrote before creating the window;
 *   own memory     the rank's first word holds its value plus the neighbour's
 *                  fetch_and_op after the barrier, and again after MPI_Win_free;
 *   fork           every 50th round a child stores into the window and into a small
 *                  heap block beside it: the parent sees neither store;
 *   neighbours     that heap block keeps its value through MPI_Win_free.
 *
 * Some rounds free the small block, some keep it (the heap's layout changes).
 */
#include "rmatest.h"

#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 120

int main(int argc, char **argv)
{
    setenv("NBRMA_SHARE_USER_MEMORY", "1", 1);
    rt_init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    srand(1234 + me);
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    int64_t *kept[ROUNDS];
    int nkept = 0;
    for (int round = 0; round < ROUNDS; round++) {
        const size_t words = 1 + (rand() % 3 == 0 ? 40000 + rand() % 40000 : rand() % 2000);
        int64_t *buffer = malloc(words * 8 + 64);
        int64_t *beside = malloc(64);
        const int64_t base = (int64_t) round * 1000000 + (int64_t) me * 100000;
        for (size_t i = 0; i < words; i++) buffer[i] = base + (int64_t) i;
        beside[0] = 77;
        MPI_Win win;
        MPI_CHK(MPI_Win_create(buffer, (MPI_Aint) (words * 8), 8, MPI_INFO_NULL, MPI_COMM_WORLD,
                               &win));
        unsigned long mine = words, theirs = 0;
        MPI_CHK(MPI_Sendrecv(&mine, 1, MPI_UNSIGNED_LONG, left, 0, &theirs, 1, MPI_UNSIGNED_LONG,
                             right, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        const int64_t their_base = (int64_t) round * 1000000 + (int64_t) right * 100000;
        int64_t got = -1, one = 1, old = -1;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
        MPI_CHK(MPI_Get(&got, 1, MPI_INT64_T, right, (MPI_Aint) theirs - 1, 1, MPI_INT64_T, win));
        MPI_CHK(MPI_Win_flush(right, win));
        MPI_CHK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, right, 0, MPI_SUM, win));
        MPI_CHK(MPI_Win_unlock(right, win));
        CHECK(got == their_base + (int64_t) theirs - 1, "round %d: get read %lld", round,
              (long long) got);
        CHECK(old == their_base, "round %d: fetch_and_op read %lld", round, (long long) old);
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        CHECK(buffer[0] == base + 1, "round %d: own first word %lld", round,
              (long long) buffer[0]);
        if (round % 50 == 7) {
            pid_t child = fork();
            if (child == 0) {
                buffer[1] = -1;
                beside[0] = -1;
                _exit(0);
            }
            CHECK(child > 0, "round %d: fork failed", round);
            if (child > 0) waitpid(child, NULL, 0);
            CHECK(buffer[1] == base + 1 && beside[0] == 77,
                  "round %d: a forked child's store reached the parent", round);
        }
        MPI_CHK(MPI_Win_free(&win));
        CHECK(buffer[0] == base + 1 && beside[0] == 77, "round %d: after MPI_Win_free %lld, %lld",
              round, (long long) buffer[0], (long long) beside[0]);
        free(buffer);
        if (round % 3)
            free(beside);
        else
            kept[nkept++] = beside;
    }
    for (int i = 0; i < nkept; i++) free(kept[i]);
    return rt_finalize();
}
