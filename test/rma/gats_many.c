/*
 * gats_many: many back-to-back nonblocking general-active-target (PSCW) epochs between
 * two ranks, all left pending and completed by one MPI_Waitall per batch.
 *
 *   origin (rank 0), epoch i: MPIX_Win_istart(group {1}); MPI_Put of 8 bytes (the value
 *                             of epoch i) into slot i % SLOTS; MPIX_Win_icomplete
 *   target (rank 1), epoch i: MPIX_Win_ipost(group {0}); MPIX_Win_iwait
 *
 * Four batches of `count` epochs (default 10,000). After each batch the target checks
 * that every slot holds the value of the last epoch that wrote it (so the epochs were
 * matched one to one and in order), and both ranks check every request was completed
 * and freed. VmRSS (/proc/self/status) is read after batch 1 (the warm-up) and after
 * batch 4 on each rank; its growth must stay below RSS_BOUND_KIB, i.e. completed epochs
 * and their requests are not leaked. RSS keeps the high-water mark of the epochs that
 * were pending at once (timing-dependent), so the bound is generous; the heap bytes in
 * use (glibc mallinfo2) after each batch, when nothing is pending, are the tight check:
 * the smaller of their growths in batches 3 and 4 must stay below HEAP_BYTES_PER_EPOCH
 * for each epoch of a batch (a leaked object grows the heap in every batch, and is
 * larger; what the allocators keep of a new high-water mark of pending epochs appears
 * in one batch: once under ASan on a loaded machine the origin's heap grew 817 KiB over
 * 20,000 epochs, 42 bytes each, and 0 in three reruns).
 * Rank 0 prints, for each rank, a line
 *   RSS after batch1 X KiB, after batch4 Y KiB, growth Z KiB; heap in use growth H KiB
 *   (rank r, role)
 * Under AddressSanitizer (make check-asan) freed memory waits in ASan's quarantine (up to
 * 256 MiB), so RSS grows whatever nbrma does: the RSS bound is not checked, the heap
 * in use is ASan's count of live allocated bytes, and its bound is looser (see
 * HEAP_BYTES_PER_EPOCH: LeakSanitizer catches leaks there).
 *
 * Usage: gats_many [count]   (2 processes; more are allowed and stay idle; count
 *        defaults to 3,000 where a progress thread or UCX over tcp shares the 2 cores:
 *        NBRMA_PROGRESS=thread, NBRMA_TRANSPORT=ucx, NBRMA_VIRTUAL_NODES, whose 30,000
 *        epochs took 11-36 s beside another suite)
 */
#include <malloc.h>
#include <stdint.h>
#ifdef __SANITIZE_ADDRESS__
/* from libasan (sanitizer/allocator_interface.h, which Debian's gcc 12 does not ship) */
size_t __sanitizer_get_current_allocated_bytes(void);
#define RSS_CHECKED 0
#else
#define RSS_CHECKED 1
#endif

#include "rmatest.h"

#define SLOTS 16
#define NBATCH 4
#define DEFAULT_COUNT 10000
#define RSS_BOUND_KIB (32 * 1024L)
/* Under ASan, LeakSanitizer reports any object nbrma leaks at exit, so the growth check
 * only has to catch unbounded retention: ASan's live-byte count once grew 84 bytes an
 * epoch on a loaded CI run (what request and epoch pools keep of the pending
 * high-water mark, larger there than in batch 1). */
#ifdef __SANITIZE_ADDRESS__
#define HEAP_BYTES_PER_EPOCH 256L
#else
#define HEAP_BYTES_PER_EPOCH 48L
#endif

static int me, np;

/* heap bytes in use (malloc arena + mmapped chunks) in KiB */
static long heap_kib(void)
{
#ifdef __SANITIZE_ADDRESS__
    return (long) (__sanitizer_get_current_allocated_bytes() / 1024);
#else
    struct mallinfo2 m = mallinfo2();
    return (long) ((m.uordblks + m.hblkhd) / 1024);
#endif
}

static uint64_t value(int b, int i)
{
    return ((uint64_t) (b + 1) << 32) | (uint64_t) (uint32_t) i;
}

/* one batch of n epochs; returns its duration in seconds */
static double batch(rt_win_t *w, int b, int n, MPI_Group peer_g, uint64_t *src,
                    MPI_Request *reqs, uint64_t *expected)
{
    double t0;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    t0 = MPI_Wtime();
    if (me == 0) {
        for (int i = 0; i < n; i++) {
            src[i] = value(b, i);
            MPI_CHK(MPIX_Win_istart(peer_g, 0, w->win, &reqs[2 * i]));
            MPI_CHK(MPI_Put(&src[i], 8, MPI_BYTE, 1, rt_disp(w, 1, i % SLOTS), 8, MPI_BYTE,
                            w->win));
            MPI_CHK(MPIX_Win_icomplete(w->win, &reqs[2 * i + 1]));
        }
    } else if (me == 1) {
        for (int i = 0; i < n; i++) {
            MPI_CHK(MPIX_Win_ipost(peer_g, 0, w->win, &reqs[2 * i]));
            MPI_CHK(MPIX_Win_iwait(w->win, &reqs[2 * i + 1]));
        }
    }
    if (me <= 1) {
        MPI_CHK(MPI_Waitall(2 * n, reqs, MPI_STATUSES_IGNORE));
        int left = 0;
        for (int i = 0; i < 2 * n; i++)
            left += reqs[i] != MPI_REQUEST_NULL;
        CHECK(left == 0, "batch %d: %d requests not freed by MPI_Waitall", b + 1, left);
    }
    if (me == 1) {
        /* the exposures are over: the window memory is ours to read */
        const uint64_t *mem = (const uint64_t *) w->base;
        for (int s = 0; s < SLOTS && s < n; s++)
            expected[s] = value(b, s + SLOTS * ((n - 1 - s) / SLOTS));
        for (int s = 0; s < SLOTS; s++)
            CHECK(mem[s] == expected[s],
                  "batch %d: slot %d = batch %llu epoch %llu, expected batch %llu epoch %llu",
                  b + 1, s, (unsigned long long) (mem[s] >> 32),
                  (unsigned long long) (mem[s] & 0xffffffffu),
                  (unsigned long long) (expected[s] >> 32),
                  (unsigned long long) (expected[s] & 0xffffffffu));
    }
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
    int n = DEFAULT_COUNT;
    const char *progress = getenv("NBRMA_PROGRESS"), *transport = getenv("NBRMA_TRANSPORT");
    if ((progress && strcmp(progress, "thread") == 0) ||
        (transport && strcmp(transport, "ucx") == 0) || getenv("NBRMA_VIRTUAL_NODES"))
        n = 3000;
    rt_win_t w;
    MPI_Group peer_g;
    long rss[NBATCH], heap[NBATCH], all[3 * 2];
    double secs[NBATCH];

    rt_init_world(&argc, &argv, &me, &np);
    if (argc > 1 && atoi(argv[1]) > 0)
        n = atoi(argv[1]);
    rt_require_procs(2, "gats_many needs 2 processes");

    uint64_t *src = malloc(sizeof(uint64_t) * (size_t) n);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t) n);
    uint64_t expected[SLOTS] = { 0 };

    rt_win_create(RT_ALLOCATE, sizeof(uint64_t) * SLOTS, sizeof(uint64_t), MPI_INFO_NULL,
                  MPI_COMM_WORLD, &w);
    peer_g = rt_peer_group(&w);

    for (int b = 0; b < NBATCH; b++) {
        secs[b] = batch(&w, b, n, peer_g, src, reqs, expected);
        rss[b] = rt_status_kib("VmRSS");
        heap[b] = heap_kib();
    }

    /* memory growth between the end of the warm-up batch and the end of the last */
    long growth = rss[NBATCH - 1] - rss[0];
    long heap_growth = heap[NBATCH - 1] - heap[0];
    /* a leak grows the heap in every batch; what the allocators keep of a new pending
     * high-water mark appears once (thread mode: ~280 KiB in about 1 run of 12, whether
     * blocking collectives are MPICH's or nonblocking twins): the smaller growth of the last two
     * batches is the check */
    const long last = heap[NBATCH - 1] - heap[NBATCH - 2], before = heap[NBATCH - 2] - heap[NBATCH - 3];
    const long per_batch = last < before ? last : before;
    if (me <= 1) {
        CHECK(rss[0] > 0 && rss[NBATCH - 1] > 0, "cannot read VmRSS from /proc/self/status");
        CHECK(!RSS_CHECKED || growth < RSS_BOUND_KIB,
              "RSS grew by %ld KiB between batch 1 and batch %d (bound %ld KiB)", growth,
              NBATCH, RSS_BOUND_KIB);
        const long heap_bound_kib = HEAP_BYTES_PER_EPOCH * n / 1024;
        CHECK(per_batch < heap_bound_kib,
              "heap in use grew by %ld and %ld KiB in batches %d and %d (bound %ld KiB a "
              "batch: %ld bytes an epoch)",
              before, last, NBATCH - 1, NBATCH, heap_bound_kib, HEAP_BYTES_PER_EPOCH);
    }
    {
        long mine[3] = { rss[0], rss[NBATCH - 1], heap_growth };
        MPI_Comm pair;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, me <= 1 ? 0 : MPI_UNDEFINED, me, &pair));
        if (pair != MPI_COMM_NULL) {
            MPI_CHK(MPI_Gather(mine, 3, MPI_LONG, all, 3, MPI_LONG, 0, pair));
            MPI_CHK(MPI_Comm_free(&pair));
        }
    }
    if (me == 0) {
        printf("%d epochs per batch:", n);
        for (int b = 0; b < NBATCH; b++)
            printf(" batch%d %.3f s", b + 1, secs[b]);
        printf("\n");
        for (int r = 0; r < 2; r++)
            printf("RSS after batch1 %ld KiB, after batch%d %ld KiB, growth %ld KiB; "
                   "heap in use growth %ld KiB (rank %d, %s)\n",
                   all[3 * r], NBATCH, all[3 * r + 1], all[3 * r + 1] - all[3 * r], all[3 * r + 2], r,
                   r == 0 ? "origin" : "target");
        fflush(stdout);
    }

    if (peer_g != MPI_GROUP_NULL)
        MPI_CHK(MPI_Group_free(&peer_g));
    rt_win_free(&w);
    free(src);
    free(reqs);
    return rt_finalize();
}
