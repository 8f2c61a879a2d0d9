/*
 * ucx_allocated: MPI_Win_allocate windows created with the info key nbrma_transport=ucx
 * (every peer through UCX, self included), whose memory and control region UCX
 * allocates: UCX's shared-memory transports reach them with loads, stores and CPU
 * atomics (in the shm suite mode, where UCX picks its transports; over tcp in
 * runtests-ucx). Checks, on every rank:
 *   - the memory is the application's to use: zero-sized on one rank, written and read
 *     locally; MPI_Win_shared_query gives this rank's own base and no other rank's;
 *   - fetching MPI_BAND / MPI_BOR / MPI_BXOR (MPI_Fetch_and_op and MPI_Get_accumulate,
 *     MPI_INT and MPI_LONG_LONG) from every rank on one word: the final word and every
 *     fetched value (UCX 1.13's shared-memory atomics get these wrong; nbrma runs them
 *     as compare-and-swap loops);
 *   - exclusive locks exclude: every rank increments a counter with get + put under
 *     MPI_LOCK_EXCLUSIVE, ROUNDS times;
 *   - a flush completes puts at their target: under MPI_Win_lock_all every rank puts a
 *     row into every other rank's memory ROUNDS times (one word, then the rest), each
 *     time flushed, then sends the owner a message; on receipt the owner finds the last
 *     row in its memory (where UCX's shared-memory transports map the memory, these
 *     puts are copies into the mapping with no UCX flush after them);
 *   - notified RMA orders data before the notice: every other rank's MPIX_Put_notify
 *     and MPIX_Accumulate_notify to rank 0 are in its memory when the threshold fires;
 *   - a window larger than any machine (2^60 bytes on rank 0) fails with MPI_ERR_NO_MEM
 *     on every rank, naming MPI_Win_allocate and the cause, and nothing is left behind.
 */
#include "rmatest.h"

#define ROUNDS 100
#define SLOTS 64 /* long longs per rank */

static int me, np;

static MPI_Win make_window(MPI_Aint bytes, long long **base)
{
    MPI_Info info;
    MPI_Win win;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "nbrma_transport", "ucx"));
    MPI_CHK(MPI_Win_allocate(bytes, sizeof(long long), info, MPI_COMM_WORLD, base, &win));
    MPI_CHK(MPI_Info_free(&info));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    rt_expect_info(win, "nbrma_transport", "ucx", "MPI_Win_allocate");
    return win;
}

/* The last rank allocates nothing; the others SLOTS long longs. */
static void memory(void)
{
    long long *base = NULL;
    const MPI_Aint bytes = me == np - 1 ? 0 : SLOTS * (MPI_Aint) sizeof(long long);
    MPI_Win win = make_window(bytes, &base);
    if (bytes > 0) {
        CHECK(base != NULL, "MPI_Win_allocate of %ld bytes gave NULL", (long) bytes);
        for (int i = 0; i < SLOTS; i++)
            base[i] = me * 1000 + i;
    }
    MPI_CHK(MPI_Win_lock_all(0, win));
    MPI_CHK(MPI_Win_sync(win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    /* a get of every other rank's memory: what its owner stored */
    for (int r = 0; r < np - 1; r++) {
        long long got[SLOTS];
        MPI_CHK(MPI_Get(got, SLOTS, MPI_LONG_LONG, r, 0, SLOTS, MPI_LONG_LONG, win));
        MPI_CHK(MPI_Win_flush(r, win));
        int bad = 0;
        for (int i = 0; i < SLOTS; i++)
            bad += got[i] != r * 1000 + i;
        CHECK(bad == 0, "MPI_Get of rank %d's memory: %d of %d words wrong", r, bad, SLOTS);
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    for (int r = 0; r < np; r++) {
        MPI_Aint size = -1;
        int unit = 0;
        void *peer = (void *) 1;
        MPI_CHK(MPI_Win_shared_query(win, r, &size, &unit, &peer));
        if (r == me && bytes > 0)
            CHECK(peer == base && size == bytes, "MPI_Win_shared_query of myself: %p (%ld "
                  "bytes), my base %p (%ld)", peer, (long) size, (void *) base, (long) bytes);
        else
            CHECK(peer == NULL && size == 0, "MPI_Win_shared_query of rank %d: %p (%ld bytes), "
                  "expected NULL (not shared)", r, peer, (long) size);
    }
    MPI_CHK(MPI_Win_free(&win));
}

/* Every rank applies `op` with its own bit to word 0 (int) and word 1 (long long) of
 * rank 0, through MPI_Fetch_and_op (fop) or MPI_Get_accumulate; the words start at
 * `start`. */
static void bitwise(MPI_Op op, const char *name, long long start, int fop)
{
    long long *base = NULL;
    MPI_Win win = make_window(2 * (MPI_Aint) sizeof(long long), &base);
    int *word = (int *) base;
    if (me == 0) {
        *word = (int) start;
        base[1] = start;
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    const int bit = 1 << me;
    const int operand_int = op == MPI_BAND ? ~bit : bit;
    const long long operand_ll = op == MPI_BAND ? ~(long long) bit : bit;
    int fetched_int = -1;
    long long fetched_ll = -1;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    if (fop) {
        MPI_CHK(MPI_Fetch_and_op(&operand_int, &fetched_int, MPI_INT, 0, 0, op, win));
        MPI_CHK(MPI_Fetch_and_op(&operand_ll, &fetched_ll, MPI_LONG_LONG, 0, 1, op, win));
    } else {
        MPI_CHK(MPI_Get_accumulate(&operand_int, 1, MPI_INT, &fetched_int, 1, MPI_INT, 0, 0, 1,
                                   MPI_INT, op, win));
        MPI_CHK(MPI_Get_accumulate(&operand_ll, 1, MPI_LONG_LONG, &fetched_ll, 1, MPI_LONG_LONG,
                                   0, 1, 1, MPI_LONG_LONG, op, win));
    }
    MPI_CHK(MPI_Win_unlock(0, win));
    const char *call = fop ? "MPI_Fetch_and_op" : "MPI_Get_accumulate";
    /* what this rank fetched: the start with some other ranks' bits applied, never its
     * own (no rank touches another's bit) */
    const long long all = (1ll << np) - 1, mine_before = start & bit;
    CHECK((fetched_int & bit) == mine_before && (fetched_int & ~all) == (start & ~all),
          "%s(MPI_INT, %s) fetched %#x from %#llx", call, name, fetched_int, start);
    CHECK((fetched_ll & bit) == mine_before && (fetched_ll & ~all) == (start & ~all),
          "%s(MPI_LONG_LONG, %s) fetched %#llx from %#llx", call, name, fetched_ll, start);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        const long long expected = op == MPI_BAND ? start & ~all
                                   : op == MPI_BOR ? start | all
                                                   : start ^ all;
        CHECK(*word == (int) expected, "%s(MPI_INT, %s): word %#x, expected %#x", call, name,
              *word, (int) expected);
        CHECK(base[1] == expected, "%s(MPI_LONG_LONG, %s): word %#llx, expected %#llx", call,
              name, base[1], expected);
    }
    MPI_CHK(MPI_Win_free(&win));
}

/* Every rank, ROUNDS times: lock rank 0 exclusively, get its counter, put it back plus
 * one, unlock. */
static void exclusive(void)
{
    long long *base = NULL;
    MPI_Win win = make_window(sizeof(long long), &base);
    const int target = 0;
    if (me == target)
        *base = 0;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < ROUNDS; i++) {
        long long value = -1;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win));
        MPI_CHK(MPI_Get(&value, 1, MPI_LONG_LONG, target, 0, 1, MPI_LONG_LONG, win));
        MPI_CHK(MPI_Win_flush(target, win));
        value += 1;
        MPI_CHK(MPI_Put(&value, 1, MPI_LONG_LONG, target, 0, 1, MPI_LONG_LONG, win));
        MPI_CHK(MPI_Win_unlock(target, win));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == target)
        CHECK(*base == (long long) np * ROUNDS, "exclusive get + put increments: counter %lld, "
              "expected %lld (a lost update: the lock did not exclude)", *base,
              (long long) np * ROUNDS);
    MPI_CHK(MPI_Win_free(&win));
}

/* Rank `from`'s row, round `round`, word `i`. */
static long long row_word(int from, int round, int i)
{
    return (long long) (from + 1) * 1000000 + round * 100 + i;
}

static void flushed_puts(void)
{
    long long *base = NULL;
    MPI_Win win = make_window((MPI_Aint) np * SLOTS * (MPI_Aint) sizeof(long long), &base);
    memset(base, 0, (size_t) np * SLOTS * sizeof(long long));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock_all(0, win));
    long long row[SLOTS];
    const MPI_Aint mine = (MPI_Aint) me * SLOTS;
    for (int k = 1; k < np; k++) {
        const int to = (me + k) % np;
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < SLOTS; i++)
                row[i] = row_word(me, round, i);
            MPI_CHK(MPI_Put(row, 1, MPI_LONG_LONG, to, mine, 1, MPI_LONG_LONG, win));
            MPI_CHK(MPI_Put(row + 1, SLOTS - 1, MPI_LONG_LONG, to, mine + 1, SLOTS - 1,
                            MPI_LONG_LONG, win));
            MPI_CHK(MPI_Win_flush(to, win));
        }
        MPI_CHK(MPI_Send(&k, 1, MPI_INT, to, 7, MPI_COMM_WORLD));
    }
    for (int k = 1; k < np; k++) {
        int notice = 0;
        MPI_Status status;
        MPI_CHK(MPI_Recv(&notice, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &status));
        MPI_CHK(MPI_Win_sync(win));
        const int from = status.MPI_SOURCE;
        const volatile long long *mem = base + (MPI_Aint) from * SLOTS;
        int bad = 0;
        for (int i = 0; i < SLOTS; i++)
            bad += mem[i] != row_word(from, ROUNDS - 1, i);
        CHECK(bad == 0, "flushed puts of rank %d: %d of %d words not there when its message "
              "came (word 0: %lld, expected %lld)", from, bad, SLOTS, (long long) mem[0],
              row_word(from, ROUNDS - 1, 0));
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_free(&win));
}

/* Every other rank: ROUNDS puts with notice 0 into its own slots of rank 0 and ROUNDS
 * accumulates with notice 1 into one cell; rank 0 waits for both thresholds. */
static void notified(void)
{
    long long *base = NULL;
    const MPI_Aint words = me == 0 ? (MPI_Aint) np * ROUNDS + 1 : 0;
    MPI_Win win = make_window(words * (MPI_Aint) sizeof(long long), &base);
    MPI_CHK(MPIX_Win_notify_set_num(win, 2));
    if (me == 0)
        memset(base, 0, (size_t) words * sizeof(long long));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    const MPI_Count expected = (MPI_Count) (np - 1) * ROUNDS;
    const MPI_Aint cell = (MPI_Aint) np * ROUNDS;
    if (me != 0) {
        static long long value[ROUNDS];
        const long long one = 1;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        for (int r = 0; r < ROUNDS; r++) {
            value[r] = (long long) me * 100000 + r;
            MPI_CHK(MPIX_Put_notify(&value[r], 1, MPI_LONG_LONG, 0, me * ROUNDS + r, 1,
                                    MPI_LONG_LONG, 0, win));
            MPI_CHK(MPIX_Accumulate_notify(&one, 1, MPI_LONG_LONG, 0, cell, 1, MPI_LONG_LONG,
                                           MPI_SUM, 1, win));
        }
        MPI_CHK(MPI_Win_unlock(0, win));
    } else {
        MPI_Request reqs[2];
        MPI_CHK(MPIX_Win_notify_ithreshold(win, 0, expected, &reqs[0]));
        MPI_CHK(MPIX_Win_notify_ithreshold(win, 1, expected, &reqs[1]));
        MPI_CHK(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
        const volatile long long *mem = base;
        int bad = 0;
        for (int o = 1; o < np; o++)
            for (int r = 0; r < ROUNDS; r++)
                bad += mem[o * ROUNDS + r] != (long long) o * 100000 + r;
        CHECK(bad == 0, "notified puts: %d slots missing when the threshold fired", bad);
        CHECK(mem[cell] == expected, "notified accumulates: cell %lld when the threshold "
              "fired, expected %lld", (long long) mem[cell], (long long) expected);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_free(&win));
}

static void too_large(void)
{
    MPI_Info info;
    MPI_Win win = MPI_WIN_NULL;
    long long *base = NULL;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "nbrma_transport", "ucx"));
    MPI_CHK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    const MPI_Aint bytes = me == 0 ? (MPI_Aint) 1 << 60 : 64;
    int rc = MPI_Win_allocate(bytes, 1, info, MPI_COMM_WORLD, &base, &win);
    rt_expect_error(rc, MPI_ERR_NO_MEM, "MPI_Win_allocate", "2^60 bytes over UCX");
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        CHECK(strstr(msg, "allocate the window memory") != NULL, "2^60 bytes over UCX: the "
              "error string \"%s\" does not name the cause", msg);
    } else {
        MPI_CHK(MPI_Win_free(&win));
    }
    MPI_CHK(MPI_Info_free(&info));
    /* the next window is made as if nothing had happened */
    memory();
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    me = rt_rank();
    np = rt_nprocs();
    memory();
    for (int fop = 0; fop <= 1; fop++) {
        bitwise(MPI_BAND, "MPI_BAND", 0x7ff0, fop);
        bitwise(MPI_BOR, "MPI_BOR", 0x100, fop);
        bitwise(MPI_BXOR, "MPI_BXOR", 0x5a5a, fop);
    }
    exclusive();
    flushed_puts();
    notified();
    too_large();
    return rt_finalize();
}
