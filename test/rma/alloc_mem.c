/*
 * alloc_mem: windows over MPI_Alloc_mem memory. nbrma hands out node-shareable memory
 * there, so MPI_Win_create and MPI_Win_attach over it are shared with node-local peers
 * as they are (counter user_memory_shared: one per window or attached region), with no
 * page of the application's moved.
 *
 *   epochs      for create and dynamic windows (the window is part of a larger
 *               allocation, at an odd offset): a put, a get, an accumulate, a
 *               fetch_and_op and a compare_and_swap to the right neighbour in a fence, a
 *               PSCW, a lock and a lock_all epoch with a flush; every result checked;
 *   reuse       one allocation under 50 windows created and freed in turn;
 *   many        200 allocations of mixed sizes are distinct, do not overlap, keep their
 *               contents, and are given back;
 *   untouched   MPI_Alloc_mem of 1 GiB with a window over it, and MPI_Win_allocate of
 *               1 GiB, grow the process's resident memory by less than 64 MiB: no page
 *               is touched that the application did not touch;
 *   arguments   size 0 (a pointer MPI_Free_mem takes back), a negative size
 *               (MPI_ERR_ARG), a size beyond the machine (MPI_ERR_NO_MEM), the info key
 *               mpi_minimum_memory_alignment (4096 and 2 MiB kept; "3" and "x" refused
 *               with MPI_ERR_INFO_VALUE; other keys ignored), each error naming
 *               MPI_Alloc_mem; MPI_Free_mem of memory MPICH's own MPI_Alloc_mem gave
 *               (MPICH frees it).
 */
#include "rmatest.h"

#include <dlfcn.h>
#include <stdint.h>

#define WORDS 64

static int me, np, right, left;
static MPI_Aint bases[256];

/* displacement of word i of rank r's window */
static MPI_Aint disp(int dynamic, int r, int i)
{
    return dynamic ? bases[r] + (MPI_Aint) i * (MPI_Aint) sizeof(int64_t) : (MPI_Aint) i;
}

enum { FENCE, PSCW, LOCK, LOCK_ALL, EPOCHS };
static const char *const epoch_names[EPOCHS] = { "fence", "pscw", "lock", "lock_all" };

static void open_epoch(int kind, MPI_Win win, MPI_Group neighbours)
{
    if (kind == FENCE) MPI_CHK(MPI_Win_fence(0, win));
    if (kind == PSCW) {
        MPI_CHK(MPI_Win_post(neighbours, 0, win));
        MPI_CHK(MPI_Win_start(neighbours, 0, win));
    }
    if (kind == LOCK) MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    if (kind == LOCK_ALL) MPI_CHK(MPI_Win_lock_all(0, win));
}

static void close_epoch(int kind, MPI_Win win)
{
    if (kind == FENCE) MPI_CHK(MPI_Win_fence(0, win));
    if (kind == PSCW) {
        MPI_CHK(MPI_Win_complete(win));
        MPI_CHK(MPI_Win_wait(win));
    }
    if (kind == LOCK) MPI_CHK(MPI_Win_unlock(right, win));
    if (kind == LOCK_ALL) {
        MPI_CHK(MPI_Win_flush(right, win));
        MPI_CHK(MPI_Win_unlock_all(win));
    }
    if (kind == LOCK || kind == LOCK_ALL) MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void epochs(int dynamic)
{
    char *allocation;
    MPI_CHK(MPI_Alloc_mem(WORDS * sizeof(int64_t) + 1024, MPI_INFO_NULL, &allocation));
    int64_t *window = (int64_t *) (allocation + 1000 - 1000 % 8 + 8); /* inside, not at its start */
    MPI_Win win;
    MPI_Group world, neighbours;
    const int ranks[2] = { left, right };
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_CHK(MPI_Group_incl(world, left == right ? 1 : 2, ranks, &neighbours));
    for (int kind = 0; kind < EPOCHS; kind++) {
        for (int i = 0; i < WORDS; i++) window[i] = (int64_t) me * 1000 + i;
        rt_win_over(window, WORDS * sizeof(int64_t), sizeof(int64_t), dynamic, MPI_INFO_NULL,
                    bases, &win);
        const int64_t put = -(int64_t) me - 1, add = 5, one = 1, compare = (int64_t) right * 1000 + 4,
                      swap = 77;
        int64_t got = -1, fetched = -1, old = -1;
        open_epoch(kind, win, neighbours);
        MPI_CHK(MPI_Put(&put, 1, MPI_INT64_T, right, disp(dynamic, right, 1), 1, MPI_INT64_T, win));
        MPI_CHK(MPI_Get(&got, 1, MPI_INT64_T, right, disp(dynamic, right, 2), 1, MPI_INT64_T, win));
        MPI_CHK(MPI_Accumulate(&add, 1, MPI_INT64_T, right, disp(dynamic, right, 3), 1, MPI_INT64_T,
                               MPI_SUM, win));
        MPI_CHK(MPI_Compare_and_swap(&swap, &compare, &old, MPI_INT64_T, right,
                                     disp(dynamic, right, 4), win));
        MPI_CHK(MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, right, disp(dynamic, right, 5),
                                 MPI_SUM, win));
        close_epoch(kind, win);
        const char *what = epoch_names[kind];
        const char *flavor = dynamic ? "dynamic" : "create";
        CHECK(got == (int64_t) right * 1000 + 2, "%s %s: get read %lld", flavor, what,
              (long long) got);
        CHECK(old == compare, "%s %s: compare_and_swap read %lld", flavor, what, (long long) old);
        CHECK(fetched == (int64_t) right * 1000 + 5, "%s %s: fetch_and_op read %lld", flavor, what,
              (long long) fetched);
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
        CHECK(window[1] == -(int64_t) left - 1 && window[3] == (int64_t) me * 1000 + 3 + 5 &&
                  window[4] == 77 && window[5] == (int64_t) me * 1000 + 6 &&
                  window[0] == (int64_t) me * 1000,
              "%s %s: window holds %lld %lld %lld %lld %lld", flavor, what, (long long) window[0],
              (long long) window[1], (long long) window[3], (long long) window[4],
              (long long) window[5]);
        MPI_CHK(MPI_Win_unlock(me, win));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        if (dynamic) MPI_CHK(MPI_Win_detach(win, window));
        MPI_CHK(MPI_Win_free(&win));
    }
    MPI_CHK(MPI_Group_free(&neighbours));
    MPI_CHK(MPI_Group_free(&world));
    MPI_CHK(MPI_Free_mem(allocation));
}

static void reuse(void)
{
    int *memory;
    MPI_CHK(MPI_Alloc_mem(4096, MPI_INFO_NULL, &memory));
    for (int round = 0; round < 50; round++) {
        MPI_Win win;
        const int value = me * 100 + round;
        MPI_CHK(MPI_Win_create(memory, 4096, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
        MPI_CHK(MPI_Put(&value, 1, MPI_INT, right, round, 1, MPI_INT, win));
        MPI_CHK(MPI_Win_unlock(right, win));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        CHECK(memory[round] == left * 100 + round, "reuse round %d: got %d", round, memory[round]);
        MPI_CHK(MPI_Win_free(&win));
    }
    MPI_CHK(MPI_Free_mem(memory));
}

static void many(void)
{
    enum { N = 200 };
    static unsigned char *blocks[N];
    static size_t sizes[N];
    for (int i = 0; i < N; i++) {
        sizes[i] = (i % 7 == 0) ? (size_t) (1 << 20) + 100 * i : (size_t) 1 + 37 * i;
        MPI_CHK(MPI_Alloc_mem((MPI_Aint) sizes[i], MPI_INFO_NULL, &blocks[i]));
        CHECK((uintptr_t) blocks[i] % 16 == 0, "many: block %d at %p", i, (void *) blocks[i]);
        memset(blocks[i], i & 0xff, sizes[i]);
    }
    for (int i = 0; i < N; i++) {
        for (int j = i + 1; j < N; j++)
            CHECK(blocks[i] + sizes[i] <= blocks[j] || blocks[j] + sizes[j] <= blocks[i],
                  "many: blocks %d and %d overlap", i, j);
        size_t wrong = 0;
        for (size_t b = 0; b < sizes[i]; b++) wrong += blocks[i][b] != (unsigned char) (i & 0xff);
        CHECK(wrong == 0, "many: block %d lost %zu bytes", i, wrong);
    }
    for (int i = 0; i < N; i += 2) MPI_CHK(MPI_Free_mem(blocks[i]));
    for (int i = 1; i < N; i += 2) MPI_CHK(MPI_Free_mem(blocks[i]));
}

static void expect_alloc_error(MPI_Aint size, const char *key, const char *value, int cls,
                               const char *what)
{
    MPI_Info info = MPI_INFO_NULL;
    void *base = NULL;
    if (key) {
        MPI_CHK(MPI_Info_create(&info));
        MPI_CHK(MPI_Info_set(info, key, value));
    }
    const int rc = MPI_Alloc_mem(size, info, &base);
    rt_expect_error(rc, cls, "MPI_Alloc_mem", what);
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING] = "";
        int length = 0;
        MPI_Error_string(rc, text, &length);
        CHECK(strstr(text, "MPI_Alloc_mem") != NULL, "%s: message \"%s\"", what, text);
    } else {
        MPI_Free_mem(base);
    }
    if (info != MPI_INFO_NULL) MPI_CHK(MPI_Info_free(&info));
}

static void arguments(void)
{
    void *zero = NULL;
    MPI_CHK(MPI_Alloc_mem(0, MPI_INFO_NULL, &zero));
    MPI_CHK(MPI_Free_mem(zero));
    expect_alloc_error(-8, NULL, NULL, MPI_ERR_ARG, "negative size");
    expect_alloc_error((MPI_Aint) 1 << 60, NULL, NULL, MPI_ERR_NO_MEM, "2^60 bytes");
    expect_alloc_error(64, "mpi_minimum_memory_alignment", "3", MPI_ERR_INFO_VALUE,
                       "alignment 3");
    expect_alloc_error(64, "mpi_minimum_memory_alignment", "x", MPI_ERR_INFO_VALUE,
                       "alignment x");
    const char *alignments[] = { "4096", "2097152" };
    for (int i = 0; i < 2; i++) {
        MPI_Info info;
        char *base = NULL;
        MPI_CHK(MPI_Info_create(&info));
        MPI_CHK(MPI_Info_set(info, "mpi_minimum_memory_alignment", alignments[i]));
        MPI_CHK(MPI_Info_set(info, "some_other_key", "anything"));
        MPI_CHK(MPI_Alloc_mem(100, info, &base));
        CHECK((uintptr_t) base % (uintptr_t) atol(alignments[i]) == 0, "alignment %s: got %p",
              alignments[i], (void *) base);
        base[99] = 1;
        MPI_CHK(MPI_Free_mem(base));
        MPI_CHK(MPI_Info_free(&info));
    }
    /* memory MPICH's own MPI_Alloc_mem gave (the library's, found by dlsym on its
     * handle) goes back to MPICH */
    void *mpich = dlopen("libmpich.so.12", RTLD_LAZY | RTLD_NOLOAD);
    int (*mpich_alloc)(MPI_Aint, MPI_Info, void *) =
        mpich ? (int (*)(MPI_Aint, MPI_Info, void *)) dlsym(mpich, "PMPI_Alloc_mem") : NULL;
    CHECK(mpich_alloc != NULL, "MPICH's PMPI_Alloc_mem not found: %s", dlerror());
    if (mpich_alloc) {
        char *theirs = NULL;
        MPI_CHK(mpich_alloc(100, MPI_INFO_NULL, &theirs));
        theirs[99] = 1;
        MPI_CHK(MPI_Free_mem(theirs));
    }
}

static void untouched(void)
{
    const MPI_Aint gib = (MPI_Aint) 1 << 30;
    const long before = rt_status_kib("VmRSS");
    char *memory, *allocated;
    MPI_Win created, win;
    MPI_CHK(MPI_Alloc_mem(gib, MPI_INFO_NULL, &memory));
    MPI_CHK(MPI_Win_create(memory, gib, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &created));
    MPI_CHK(MPI_Win_allocate(gib, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &allocated, &win));
    const long after = rt_status_kib("VmRSS");
    CHECK(after - before < 64 * 1024, "untouched: resident memory grew by %ld kB", after - before);
    memory[gib - 1] = allocated[gib - 1] = 1; /* usable to the last byte */
    MPI_CHK(MPI_Win_free(&win));
    MPI_CHK(MPI_Win_free(&created));
    MPI_CHK(MPI_Free_mem(memory));
}

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);
    if (np > 256) MPI_Abort(MPI_COMM_WORLD, 1);
    right = (me + 1) % np;
    left = (me + np - 1) % np;
    const unsigned long long shared0 = rt_counter("user_memory_shared");
    epochs(0);
    epochs(1);
    const unsigned long long shared = rt_counter("user_memory_shared") - shared0;
    reuse();
    many();
    untouched();
    arguments();

    const char *transport = getenv("NBRMA_TRANSPORT");
    const char *vnodes = getenv("NBRMA_VIRTUAL_NODES");
    /* a peer in this rank's virtual node (world rank mod k) is reached over shm */
    const int k = vnodes && atoi(vnodes) > 0 ? atoi(vnodes) : 1;
    int same_node = 0;
    for (int r = 0; r < np; r++) same_node += r != me && r % k == me % k;
    const int shm_peers = !(transport && strcmp(transport, "ucx") == 0) && same_node > 0;
    /* EPOCHS windows of each flavor; attached regions are shared only without virtual
     * nodes (dynamic windows of mixed transports publish UCX directories) */
    const unsigned long long expected = shm_peers ? (vnodes ? EPOCHS : 2 * EPOCHS) : 0;
    CHECK(shared == expected, "%llu windows or attached regions over MPI_Alloc_mem memory were "
          "mapped by node-local peers, expected %llu", shared, expected);
    return rt_finalize();
}
