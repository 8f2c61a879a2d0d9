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
 * Phase 4: the same three on words narrower than 4 bytes (8- and 16-bit atomics where
 *          the transport has them, the accumulate lock where not): fetch_and_op +1 on an
 *          MPI_UNSIGNED_SHORT (exact, fetched values distinct), accumulate +1 on an
 *          MPI_CHAR and the compare-and-swap loop on an MPI_UNSIGNED_CHAR (exact modulo
 *          256), each byte between two sentinel bytes that must stay as they were;
 *          and accumulate +1 on 8 MPI_CHAR filling one aligned 8-byte word (one 64-bit
 *          atomic on its lanes over shared memory) while fetch_and_op +1 on its fourth
 *          byte runs beside it (every lane exact modulo 256: no carry into a neighbour,
 *          no lost update); and +1 on 24 MPI_CHAR from an odd displacement (the
 *          general path: whole words as one atomic, the bytes before and after one by
 *          one), each exact modulo 256.
 * Phase 5: ops no single atomic does (a compare-and-swap loop an element where the
 *          transport has atomics of the width, the accumulate lock where not):
 *          fetch_and_op +1.0 on an MPI_DOUBLE (exact, fetched values distinct),
 *          accumulate +1.0f on an MPI_FLOAT (exact) and MPI_MAX on an MPI_INT (the largest
 *          value any rank sent).
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

/* The values a counter incremented by one `total` times handed back (-1: not a whole
 * number): each of 0 .. total-1 exactly once. Frees `values`. */
static void check_distinct(const char *what, long *values, long total)
{
    char *seen = calloc((size_t) total, 1);
    long dup = 0, range = 0;
    for (long i = 0; i < total; i++) {
        if (values[i] < 0 || values[i] >= total)
            range++;
        else if (seen[values[i]]++)
            dup++;
    }
    CHECK(dup == 0 && range == 0, "%s: %ld duplicate and %ld out-of-range fetched values", what,
          dup, range);
    free(seen);
    free(values);
}

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
     * [2] int64 CAS counter, then phase 4's: a 16-bit FOP counter at +24, and the char
     * accumulate and CAS counters at +33 and +37, each between sentinel bytes, 8 char
     * counters at +56 and 24 at +65 */
    rt_win_create(RT_ALLOCATE, me == 0 ? 12 * sizeof(int64_t) : 0, 1, MPI_INFO_NULL,
                  MPI_COMM_WORLD, &w);
    const MPI_Aint d_fopd = 40, d_accf = 48, d_max = 52; /* phase 5's */
    const MPI_Aint d_fop = 0, d_acc = sizeof(int64_t), d_cas = 2 * sizeof(int64_t);
    const MPI_Aint d_fop16 = 24, d_acc8 = 33, d_cas8 = 37, d_lanes = 56, d_run = 65;
    const unsigned char sentinel = 0x5a;
    if (me == 0) {
        rt_lock_self(&w);
        for (MPI_Aint d = 32; d < 40; d++)
            w.base[d] = (char) sentinel;
        w.base[d_acc8] = w.base[d_cas8] = 0;
        *(int *) (w.base + d_max) = -1;
        rt_unlock_self(&w);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

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
        long *values = malloc(sizeof(long) * (size_t) total);
        for (long i = 0; i < total; i++)
            values[i] = (long) all[i];
        check_distinct("fetch_and_op", values, total);
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

    /* ---- phase 4: words of 2 and 1 bytes ---- */
    const long small_iter = iter * np < 65536 ? iter : 65535 / np;
    unsigned short *fetched16 = malloc(sizeof(unsigned short) * (size_t) small_iter);
    const unsigned short one16 = 1;
    const char one8 = 1;
    char ones8[24];
    memset(ones8, 1, sizeof ones8);
    char lane_before;
    MPI_CHK(MPI_Win_lock_all(0, w.win));
    for (long i = 0; i < small_iter; i++) {
        MPI_CHK(MPI_Fetch_and_op(&one16, &fetched16[i], MPI_UNSIGNED_SHORT, 0, d_fop16, MPI_SUM,
                                 w.win));
        MPI_CHK(MPI_Accumulate(&one8, 1, MPI_CHAR, 0, d_acc8, 1, MPI_CHAR, MPI_SUM, w.win));
        MPI_CHK(MPI_Accumulate(ones8, 8, MPI_CHAR, 0, d_lanes, 8, MPI_CHAR, MPI_SUM, w.win));
        MPI_CHK(MPI_Fetch_and_op(&one8, &lane_before, MPI_CHAR, 0, d_lanes + 3, MPI_SUM, w.win));
        MPI_CHK(MPI_Accumulate(ones8, 24, MPI_CHAR, 0, d_run, 24, MPI_CHAR, MPI_SUM, w.win));
        MPI_CHK(MPI_Win_flush(0, w.win));
    }
    for (long i = 0; i < cas_iter; i++) {
        unsigned char cur, next, old;
        MPI_CHK(MPI_Fetch_and_op(NULL, &cur, MPI_UNSIGNED_CHAR, 0, d_cas8, MPI_NO_OP, w.win));
        MPI_CHK(MPI_Win_flush(0, w.win));
        for (;;) {
            next = (unsigned char) (cur + 1);
            MPI_CHK(MPI_Compare_and_swap(&next, &cur, &old, MPI_UNSIGNED_CHAR, 0, d_cas8, w.win));
            MPI_CHK(MPI_Win_flush(0, w.win));
            if (old == cur)
                break;
            cur = old;
        }
    }
    MPI_CHK(MPI_Win_unlock_all(w.win));
    for (long i = 1; i < small_iter; i++)
        CHECK(fetched16[i] > fetched16[i - 1], "rank %d: 16-bit fetched values not increasing: "
              "[%ld]=%u then %u", me, i - 1, fetched16[i - 1], fetched16[i]);
    unsigned short *all16 = NULL;
    if (me == 0)
        all16 = malloc(sizeof(unsigned short) * (size_t) small_iter * (size_t) np);
    MPI_CHK(MPI_Gather(fetched16, (int) small_iter, MPI_UNSIGNED_SHORT, all16, (int) small_iter,
                       MPI_UNSIGNED_SHORT, 0, MPI_COMM_WORLD));
    if (me == 0) {
        const long total = small_iter * np;
        long *values = malloc(sizeof(long) * (size_t) total);
        for (long i = 0; i < total; i++)
            values[i] = all16[i];
        check_distinct("16-bit fetch_and_op", values, total);
        free(all16);
    }

    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        rt_lock_self(&w);
        const unsigned short fop16 = *(unsigned short *) (w.base + d_fop16);
        const unsigned char acc8 = (unsigned char) w.base[d_acc8];
        const unsigned char cas8 = (unsigned char) w.base[d_cas8];
        CHECK(fop16 == (unsigned short) (small_iter * np), "16-bit fetch_and_op counter %u, "
              "expected %ld", fop16, small_iter * np);
        CHECK(acc8 == (unsigned char) (small_iter * np), "char accumulate counter %u, expected "
              "%ld modulo 256 = %u", acc8, small_iter * np, (unsigned char) (small_iter * np));
        CHECK(cas8 == (unsigned char) (cas_iter * np), "char compare_and_swap counter %u, "
              "expected %ld modulo 256 = %u", cas8, cas_iter * np, (unsigned char) (cas_iter * np));
        for (int lane = 0; lane < 8; lane++) {
            const long sums = small_iter * np * (lane == 3 ? 2 : 1);
            CHECK((unsigned char) w.base[d_lanes + lane] == (unsigned char) sums,
                  "8 x MPI_CHAR accumulate: byte %d is %u, expected %ld modulo 256 = %u", lane,
                  (unsigned char) w.base[d_lanes + lane], sums, (unsigned char) sums);
        }
        for (int i = 0; i < 24; i++)
            CHECK((unsigned char) w.base[d_run + i] == (unsigned char) (small_iter * np),
                  "24 x MPI_CHAR accumulate: byte %d is %u, expected %ld modulo 256 = %u", i,
                  (unsigned char) w.base[d_run + i], small_iter * np,
                  (unsigned char) (small_iter * np));
        for (MPI_Aint d = 32; d < 40; d++)
            if (d != d_acc8 && d != d_cas8)
                CHECK((unsigned char) w.base[d] == sentinel, "sentinel byte +%ld is 0x%02x, "
                      "not 0x%02x: a narrow atomic wrote beside its word", (long) d,
                      (unsigned char) w.base[d], sentinel);
        rt_unlock_self(&w);
    }
    free(fetched16);

    /* ---- phase 5: floating-point sums and MPI_MAX ---- */
    double *fetchedd = malloc(sizeof(double) * (size_t) small_iter);
    const double oned = 1.0;
    const float onef = 1.0f;
    MPI_CHK(MPI_Win_lock_all(0, w.win));
    for (long i = 0; i < small_iter; i++) {
        const int mine = (int) (i * np + me);
        MPI_CHK(MPI_Fetch_and_op(&oned, &fetchedd[i], MPI_DOUBLE, 0, d_fopd, MPI_SUM, w.win));
        MPI_CHK(MPI_Accumulate(&onef, 1, MPI_FLOAT, 0, d_accf, 1, MPI_FLOAT, MPI_SUM, w.win));
        MPI_CHK(MPI_Accumulate(&mine, 1, MPI_INT, 0, d_max, 1, MPI_INT, MPI_MAX, w.win));
        MPI_CHK(MPI_Win_flush(0, w.win));
    }
    MPI_CHK(MPI_Win_unlock_all(w.win));
    for (long i = 1; i < small_iter; i++)
        CHECK(fetchedd[i] > fetchedd[i - 1], "rank %d: double fetched values not increasing: "
              "[%ld]=%g then %g", me, i - 1, fetchedd[i - 1], fetchedd[i]);
    double *alld = NULL;
    if (me == 0)
        alld = malloc(sizeof(double) * (size_t) small_iter * (size_t) np);
    MPI_CHK(MPI_Gather(fetchedd, (int) small_iter, MPI_DOUBLE, alld, (int) small_iter, MPI_DOUBLE,
                       0, MPI_COMM_WORLD));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        const long total = small_iter * np;
        long *values = malloc(sizeof(long) * (size_t) total);
        for (long i = 0; i < total; i++)
            values[i] = alld[i] == (double) (long) alld[i] ? (long) alld[i] : -1;
        check_distinct("double fetch_and_op", values, total);
        free(alld);
        rt_lock_self(&w);
        const double fopd = *(double *) (w.base + d_fopd);
        const float accf = *(float *) (w.base + d_accf);
        const int max = *(int *) (w.base + d_max);
        CHECK(fopd == (double) total, "double fetch_and_op counter %g, expected %ld", fopd, total);
        CHECK(accf == (float) total, "float accumulate counter %g, expected %ld", accf, total);
        CHECK(max == (int) (total - 1), "MPI_MAX accumulate %d, expected %ld", max, total - 1);
        rt_unlock_self(&w);
    }
    free(fetchedd);

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
