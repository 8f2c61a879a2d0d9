/*
 * atomicity: concurrent read-modify-write operations on one word of rank 0 are atomic.
 *
 * Phase 1: every rank does ITER MPI_Fetch_and_op(MPI_SUM, +1, MPI_INT64_T) on the same
 *          word under lock_all (flushing each); the final value is exactly
 *          nprocs*ITER and the fetched values are all distinct (0 .. nprocs*ITER-1).
 * Phase 2: ITER MPI_Accumulate(MPI_SUM, +1, MPI_INT) per rank under shared locks
 *          (ACC_PER_EPOCH per epoch); the final value is exact.
 * Phase 3: CAS_ITER increments per rank done by an MPI_Compare_and_swap spin loop
 *          under lock_all; the final value is exact.
 *
 * Usage: atomicity [ITER]   (default 10000; 2000 where peers go through UCX:
 *        NBRMA_TRANSPORT=ucx or NBRMA_VIRTUAL_NODES, as in runtests-ucx/-mixed)
 *
 * Over UCX on tcp rank 0 serves every atomic in software, and with 4 ranks on 2 cores
 * beside another suite (make -j2 check) a flushed round trip took up to ~2.5 ms: 10000
 * per rank came near the suite's 120 s limit (102 s), where 2000 still make 8000
 * contended updates of one word.
 */
#include "rmatest.h"
#include <stdint.h>

#define ACC_PER_EPOCH 100

int main(int argc, char **argv)
{
    int me, np;
    long iter = 10000, cas_iter;
    rt_win_t w;

    rt_init_world(&argc, &argv, &me, &np);
    const char *transport = getenv("NBRMA_TRANSPORT");
    if ((transport && strcmp(transport, "ucx") == 0) || getenv("NBRMA_VIRTUAL_NODES"))
        iter = 2000;
    if (argc > 1 && atol(argv[1]) > 0)
        iter = atol(argv[1]);
    cas_iter = iter / 20 > 0 ? iter / 20 : 1;

    /* rank 0's window: [0] int64 FOP counter, [1] int accumulate counter (low half),
     * [2] int64 CAS counter */
    rt_win_create(RT_ALLOCATE, me == 0 ? 3 * sizeof(int64_t) : 0, 1, MPI_INFO_NULL,
                  MPI_COMM_WORLD, &w);
    const MPI_Aint d_fop = 0, d_acc = sizeof(int64_t), d_cas = 2 * sizeof(int64_t);

    /* ---- phase 1: fetch_and_op ---- */
    int64_t *fetched = malloc(sizeof(int64_t) * (size_t) iter);
    const int64_t one = 1;
    MPI_CHK(MPI_Win_lock_all(0, w.win));
    for (long i = 0; i < iter; i++) {
        MPI_CHK(MPI_Fetch_and_op(&one, &fetched[i], MPI_INT64_T, 0, d_fop, MPI_SUM, w.win));
        MPI_CHK(MPI_Win_flush(0, w.win));
    }
    MPI_CHK(MPI_Win_unlock_all(w.win));
    for (long i = 1; i < iter; i++)
        CHECK(fetched[i] > fetched[i - 1], "rank %d: fetched values not increasing: [%ld]=%lld "
              "then %lld", me, i - 1, (long long) fetched[i - 1], (long long) fetched[i]);

    int64_t *all = NULL;
    if (me == 0)
        all = malloc(sizeof(int64_t) * (size_t) iter * (size_t) np);
    MPI_CHK(MPI_Gather(fetched, (int) iter, MPI_INT64_T, all, (int) iter, MPI_INT64_T, 0,
                       MPI_COMM_WORLD));
    if (me == 0) {
        const long total = iter * np;
        char *seen = calloc((size_t) total, 1);
        long dup = 0, range = 0;
        for (long i = 0; i < total; i++) {
            if (all[i] < 0 || all[i] >= total)
                range++;
            else if (seen[all[i]]++)
                dup++;
        }
        CHECK(dup == 0 && range == 0, "fetch_and_op: %ld duplicate and %ld out-of-range "
              "fetched values", dup, range);
        free(seen);
        free(all);
    }

    /* ---- phase 2: accumulate under shared locks ---- */
    const int ione = 1;
    for (long i = 0; i < iter; i += ACC_PER_EPOCH) {
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
        for (long j = i; j < i + ACC_PER_EPOCH && j < iter; j++)
            MPI_CHK(MPI_Accumulate(&ione, 1, MPI_INT, 0, d_acc, 1, MPI_INT, MPI_SUM, w.win));
        MPI_CHK(MPI_Win_unlock(0, w.win));
    }

    /* ---- phase 3: compare_and_swap spin increment ---- */
    long retries = 0;
    MPI_CHK(MPI_Win_lock_all(0, w.win));
    for (long i = 0; i < cas_iter; i++) {
        int64_t cur, next, old;
        MPI_CHK(MPI_Fetch_and_op(NULL, &cur, MPI_INT64_T, 0, d_cas, MPI_NO_OP, w.win));
        MPI_CHK(MPI_Win_flush(0, w.win));
        for (;;) {
            next = cur + 1;
            MPI_CHK(MPI_Compare_and_swap(&next, &cur, &old, MPI_INT64_T, 0, d_cas, w.win));
            MPI_CHK(MPI_Win_flush(0, w.win));
            if (old == cur)
                break;
            cur = old;
            retries++;
        }
    }
    MPI_CHK(MPI_Win_unlock_all(w.win));

    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        rt_lock_self(&w);
        int64_t fop = *(int64_t *) (w.base + d_fop), cas = *(int64_t *) (w.base + d_cas);
        int acc = *(int *) (w.base + d_acc);
        CHECK(fop == (int64_t) iter * np, "fetch_and_op counter %lld, expected %lld",
              (long long) fop, (long long) iter * np);
        CHECK(acc == (int) (iter * np), "accumulate counter %d, expected %ld", acc, iter * np);
        CHECK(cas == (int64_t) cas_iter * np, "compare_and_swap counter %lld, expected %lld",
              (long long) cas, (long long) cas_iter * np);
        rt_unlock_self(&w);
    }

    free(fetched);
    rt_win_free(&w);
    return rt_finalize();
}
