/*
 * user_memory: MPI_Win_create windows and regions attached to dynamic windows over memory
 * the user owns, whose pages nbrma moves into shared memory for node-local peers when
 * asked to (NBRMA_SHARE_USER_MEMORY=1, which this program sets before MPI_Init;
 * transport/shm/user_memory.hpp), behave as the user's memory throughout (rounds
 * alternate MPI_Win_create and MPI_Win_create_dynamic + MPI_Win_attach). Each rank's window is 3 KiB in the middle of a heap
 * block, between two neighbour words in the same pages that only the owner writes.
 *
 *   content        the bytes the rank wrote before MPI_Win_create are there after it,
 *                  read by every peer with MPI_Get;
 *   atomics        every rank adds 1 to a counter at every rank ITERS times with
 *                  MPI_Fetch_and_op, with MPI_Accumulate (MPI_SUM) and with a
 *                  MPI_Compare_and_swap loop, under MPI_Win_lock_all: exact totals;
 *   local stores   the owner's own stores (MPI_Win_sync) reach a peer's MPI_Get, and a
 *                  peer's MPI_Put the owner's loads;
 *   neighbours     words beside the window in its pages keep the owner's values;
 *   opting out     with the info key nbrma_share_user_memory=false nothing moves
 *                  (create and dynamic), MPI_Win_get_info says false, puts and
 *                  fetch_and_op still arrive;
 *   after free     the window's last content stays in the user's memory, which is
 *                  private again, and the next round's window over it sees it; a window
 *                  over half of it while the first lives (create) sees it too.
 *
 * The counter user_memory_shared must grow by exactly the windows and attached regions
 * that moved: none with NBRMA_TRANSPORT=ucx or without a peer in the same virtual node,
 * the four MPI_Win_create windows with virtual nodes (dynamic windows of mixed transports
 * do not move their regions), those and the two attached regions otherwise.
 */
#include "rmatest.h"

#include <stdint.h>
#include <string.h>

#define ITERS 200
#define WORDS 384 /* 3 KiB window */

static int me, np;

static MPI_Aint bases[64]; /* dynamic: every rank's window address */

/* displacement of word i at rank r */
static MPI_Aint disp(int dynamic, int r, int i)
{
    return dynamic ? bases[r] + (MPI_Aint) i * (MPI_Aint) sizeof(int64_t) : (MPI_Aint) i;
}

static void run(int64_t *window, int round, int dynamic)
{
    MPI_Win win;
    for (int i = 0; i < WORDS; i++) window[i] = (int64_t) me * 100000 + i;
    window[0] = window[1] = window[2] = 0; /* counters: fetch_and_op, accumulate, CAS */
    rt_win_over(window, WORDS * sizeof(int64_t), sizeof(int64_t), dynamic, MPI_INFO_NULL, bases,
                &win);

    /* content written before creation, read by every peer */
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int t = 0; t < np; t++) {
        int64_t got[4] = {-1, -1, -1, -1};
        MPI_CHK(MPI_Get(got, 4, MPI_INT64_T, t, disp(dynamic, t, WORDS - 4), 4, MPI_INT64_T, win));
        MPI_CHK(MPI_Win_flush(t, win));
        for (int i = 0; i < 4; i++)
            CHECK(got[i] == (int64_t) t * 100000 + WORDS - 4 + i,
                  "round %d: word %d of rank %d reads %lld", round, WORDS - 4 + i, t,
                  (long long) got[i]);
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* atomics from every rank at once */
    MPI_CHK(MPI_Win_lock_all(0, win));
    const int64_t one = 1;
    int cas_backwards = 0;
    for (int i = 0; i < ITERS; i++) {
        for (int k = 0; k < np; k++) {
            const int t = (me + k) % np;
            int64_t old = -1;
            MPI_CHK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, t, disp(dynamic, t, 0), MPI_SUM, win));
            MPI_CHK(MPI_Accumulate(&one, 1, MPI_INT64_T, t, disp(dynamic, t, 1), 1, MPI_INT64_T,
                                   MPI_SUM, win));
            /* a compare-and-swap increment of word 2, retried until it takes */
            int64_t seen = -1;
            MPI_CHK(MPI_Fetch_and_op(NULL, &seen, MPI_INT64_T, t, disp(dynamic, t, 2), MPI_NO_OP,
                                     win));
            MPI_CHK(MPI_Win_flush(t, win));
            for (;;) {
                int64_t next = seen + 1, got = -1;
                MPI_CHK(MPI_Compare_and_swap(&next, &seen, &got, MPI_INT64_T, t,
                                             disp(dynamic, t, 2), win));
                MPI_CHK(MPI_Win_flush(t, win));
                if (got == seen) break;
                if (got < seen) cas_backwards++;
                seen = got;
            }
        }
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
    CHECK(window[0] == (int64_t) ITERS * np, "round %d: fetch_and_op total %lld, expected %d",
          round, (long long) window[0], ITERS * np);
    CHECK(window[1] == (int64_t) ITERS * np, "round %d: accumulate total %lld, expected %d",
          round, (long long) window[1], ITERS * np);
    MPI_CHK(MPI_Win_unlock(me, win));
    CHECK(window[2] == (int64_t) ITERS * np, "round %d: compare-and-swap total %lld, expected %d",
          round, (long long) window[2], ITERS * np);
    CHECK(cas_backwards == 0, "round %d: %d compare-and-swaps saw the counter go backwards",
          round, cas_backwards);

    /* local stores and remote puts meet */
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win));
    window[10] = 4242 + me;
    MPI_CHK(MPI_Win_sync(win));
    MPI_CHK(MPI_Win_unlock(me, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    int64_t seen = -1, tag = 777000 + me;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    MPI_CHK(MPI_Get(&seen, 1, MPI_INT64_T, right, disp(dynamic, right, 10), 1, MPI_INT64_T, win));
    MPI_CHK(MPI_Put(&tag, 1, MPI_INT64_T, right, disp(dynamic, right, 11), 1, MPI_INT64_T, win));
    MPI_CHK(MPI_Win_unlock(right, win));
    CHECK(seen == 4242 + right, "round %d: rank %d's local store reads %lld", round, right,
          (long long) seen);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
    CHECK(window[11] == 777000 + left, "round %d: the put from %d reads %lld", round, left,
          (long long) window[11]);
    MPI_CHK(MPI_Win_unlock(me, win));

    /* a second window over the first half of the same memory, while the first lives */
    if (!dynamic) {
        MPI_Win half;
        MPI_CHK(MPI_Win_create(window, WORDS / 2 * sizeof(int64_t), sizeof(int64_t),
                               MPI_INFO_NULL, MPI_COMM_WORLD, &half));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, half));
        seen = -1;
        MPI_CHK(MPI_Get(&seen, 1, MPI_INT64_T, right, 11, 1, MPI_INT64_T, half));
        MPI_CHK(MPI_Win_unlock(right, half));
        CHECK(seen == 777000 + me, "round %d: the half window reads %lld at rank %d", round,
              (long long) seen, right);
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Win_free(&half));
    } else {
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Win_detach(win, window));
    }
    MPI_CHK(MPI_Win_free(&win));

    /* after free: the content stays, the memory is the user's */
    CHECK(window[0] == (int64_t) ITERS * np && window[11] == 777000 + left,
          "round %d: after MPI_Win_free the window reads %lld, %lld", round,
          (long long) window[0], (long long) window[11]);
    window[12] = -5;
    CHECK(window[12] == -5, "round %d: a store after free did not stick", round);
}

/* The window info key nbrma_share_user_memory=false: the memory stays where it is (no
 * move counted), MPI_Win_get_info says so, and the window works (a put and a
 * fetch_and_op to the right neighbour, read back there). */
static void opt_out(int dynamic)
{
    int64_t *memory = malloc(8 * sizeof(int64_t));
    memory[0] = memory[1] = 0;
    MPI_Info info;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "nbrma_share_user_memory", "false"));
    const unsigned long long before = rt_counter("user_memory_shared");
    MPI_Win win;
    rt_win_over(memory, 8 * sizeof(int64_t), sizeof(int64_t), dynamic, info, bases, &win);
    MPI_CHK(MPI_Info_free(&info));
    rt_expect_info(win, "nbrma_share_user_memory", "false", "nbrma_share_user_memory=false");
    const int right = (me + 1) % np;
    const int64_t tag = 5000 + me, one = 1;
    int64_t old = -1;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    MPI_CHK(MPI_Put(&tag, 1, MPI_INT64_T, right, disp(dynamic, right, 1), 1, MPI_INT64_T, win));
    MPI_CHK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, right, disp(dynamic, right, 0), MPI_SUM,
                             win));
    MPI_CHK(MPI_Win_unlock(right, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    const int left = (me + np - 1) % np;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
    CHECK(memory[0] == 1 && memory[1] == 5000 + left && old == 0,
          "opted out (%s): counter %lld, put %lld, fetched %lld", dynamic ? "dynamic" : "create",
          (long long) memory[0], (long long) memory[1], (long long) old);
    MPI_CHK(MPI_Win_unlock(me, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(rt_counter("user_memory_shared") == before, "an opted-out window's memory moved");
    if (dynamic) MPI_CHK(MPI_Win_detach(win, memory));
    MPI_CHK(MPI_Win_free(&win));
    free(memory);
}

int main(int argc, char **argv)
{
    setenv("NBRMA_SHARE_USER_MEMORY", "1", 1);
    rt_init_world(&argc, &argv, &me, &np);
    if (np > 64) {
        if (me == 0) printf("user_memory: at most 64 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    unsigned long long shared0 = rt_counter("user_memory_shared");

    /* neighbours in the same pages, before and after the window */
    int64_t *block = malloc((WORDS + 64) * sizeof(int64_t));
    int64_t *window = block + 32;
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 32; i++) block[i] = block[32 + WORDS + i] = -(int64_t) i - round;
        run(window, round, round % 2);
        for (int i = 0; i < 32; i++)
            CHECK(block[i] == -(int64_t) i - round && block[32 + WORDS + i] == -(int64_t) i - round,
                  "round %d: neighbour word %d changed", round, i);
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    }
    free(block);
    opt_out(0);
    opt_out(1);

    const char *transport = getenv("NBRMA_TRANSPORT");
    const char *vnodes = getenv("NBRMA_VIRTUAL_NODES");
    const int shm_peers = !(transport && strcmp(transport, "ucx") == 0) &&
                          (!vnodes || np / atoi(vnodes) >= 2);
    /* two create rounds of two windows each; the two attached regions move only
     * without virtual nodes */
    const unsigned long long expected = shm_peers ? (vnodes ? 4 : 6) : 0;
    const unsigned long long shared = rt_counter("user_memory_shared") - shared0;
    CHECK(shared == expected, "%llu windows or attached regions were mapped by node-local "
          "peers, expected %llu", shared, expected);
    return rt_finalize();
}
