/*
 * accumulate_whole: bulk accumulates mixed with single-element atomics on the same bytes
 * from every rank stay exact, and one accumulate-family call is atomic as a whole against
 * the others (as MPICH and Open MPI make it on a node, and programs rely on).
 *
 * Every location sees one op and MPI_NO_OP only, as the default accumulate_ops
 * (same_op_no_op) asks, and one basic type.
 *
 * Phase 1 (exact elements): rank 0 exposes N doubles, N int64s and N int64 counters.
 *          Every rank, ROUNDS times, under lock_all, exclusive locks or shared locks in
 *          turn (epochs of EPOCH calls): MPI_Accumulate(+1.0 on all N doubles) and
 *          MPI_Fetch_and_op(+1.0) on one of them, MPI_Get_accumulate(MPI_NO_OP) of all of
 *          them; MPI_Accumulate(+r on the int64s from an odd element on, or a strided
 *          vector over every other one every fourth round) and MPI_Get_accumulate(+1, a
 *          block of 64 of them at a moving element); a compare-and-swap loop (+1) on one
 *          counter and MPI_Get_accumulate(MPI_NO_OP) of all counters. Each rank counts
 *          what it added where; rank 0 compares every element with the sum of all ranks'.
 * Phase 2 (whole calls): ranks 1.. accumulate +1 on a block of B int64s spanning several
 *          4 KiB granules, alternately as one call of B elements and as MPI_Accumulate of
 *          one MPI_Type_contiguous(B) element; rank 0 meanwhile reads the block with
 *          MPI_Get_accumulate(MPI_NO_OP): every read must find all B elements equal (no
 *          call seen half done).
 * Phase 3 (links): the MPICH linked-list pattern with 16-byte links {MPI_Aint disp; int
 *          rank; int check} written with MPI_Accumulate(16 MPI_BYTE, MPI_REPLACE) and read
 *          with MPI_Get_accumulate(NULL, 0, MPI_DATATYPE_NULL, ..., 16 MPI_BYTE,
 *          MPI_NO_OP): every rank appends K elements to one list (a compare-and-swap of
 *          the tail element's claim word, then the whole link written), chasing stale tails by
 *          reading links; every link read must be whole (nil, or a displacement inside the
 *          window, a rank in range and its check word). Rank 0 walks the list at the end:
 *          every element once. Under lock_all and under shared locks.
 * Phase 4 (torn reads): ranks 1.. replace rank 0's 16-byte link and a 40-byte record of
 *          five equal words over and over (MPI_BYTE, MPI_REPLACE) while rank 0 reads both
 *          with MPI_NO_OP: every read whole.
 *
 * Phase 2 runs where every accumulate applies under the target's stripes (shared
 * memory): over UCX 8-byte elements are one network atomic each, which MPI allows, and a
 * target that reads its own block in a loop there starves the writers' atomics over tcp
 * (a line says it is skipped).
 *
 * Usage: accumulate_whole [ROUNDS]   (default 200; 4 where peers go through UCX: one network atomic an element)
 */
#include "rmatest.h"
#include <stddef.h>
#include <stdint.h>

#define N 3000    /* phase 1's elements (24 KiB: 6 granules) */
#define EPOCH 8   /* calls an epoch in phase 1 */
#define B 1536    /* phase 2's block (12 KiB: 3 granules, from an odd granule offset) */
#define K 60      /* phase 3's elements a rank */

enum sync { LOCK_ALL, EXCLUSIVE, SHARED };

static void open_epoch(enum sync s, MPI_Win win)
{
    if (s == LOCK_ALL)
        MPI_CHK(MPI_Win_lock_all(0, win));
    else
        MPI_CHK(MPI_Win_lock(s == EXCLUSIVE ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, 0, 0, win));
}

static void close_epoch(enum sync s, MPI_Win win)
{
    if (s == LOCK_ALL)
        MPI_CHK(MPI_Win_unlock_all(win));
    else
        MPI_CHK(MPI_Win_unlock(0, win));
}

/* ------------------------------------------------------------------ phase 1 */

static void phase_exact(int me, int np, long rounds)
{
    /* rank 0: N doubles at 0, N int64s after, N int64 counters after them */
    const MPI_Aint d_int = N * (MPI_Aint) sizeof(double), d_cas = 2 * d_int;
    rt_win_t w;
    rt_win_create(RT_ALLOCATE, me == 0 ? N * 24 : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    if (me == 0) {
        rt_lock_self(&w);
        memset(w.base, 0, N * 24);
        rt_unlock_self(&w);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    double *ones = malloc(sizeof(double) * N), *fetched = malloc(sizeof(double) * N);
    int64_t *mine = malloc(sizeof(int64_t) * N), *back = malloc(sizeof(int64_t) * 64);
    double *added_d = calloc(N, sizeof(double));
    int64_t *added_i = calloc(N, sizeof(int64_t)), *added_c = calloc(N, sizeof(int64_t));
    int64_t *counters = calloc(N, sizeof(int64_t));
    for (int i = 0; i < N; i++) {
        ones[i] = 1.0;
        mine[i] = me + 1;
    }
    MPI_Datatype every_other;
    MPI_CHK(MPI_Type_vector(N / 2 - 1, 1, 2, MPI_INT64_T, &every_other));
    MPI_CHK(MPI_Type_commit(&every_other));

    static const int64_t inc[64] = { [0 ... 63] = 1 };
    long calls = 0;
    for (long round = 0; round < rounds; round++) {
        const enum sync s = (enum sync) (calls / EPOCH % 3);
        if (calls % EPOCH == 0)
            open_epoch(s, w.win);
        /* the whole double block +1.0 */
        MPI_CHK(MPI_Accumulate(ones, N, MPI_DOUBLE, 0, 0, N, MPI_DOUBLE, MPI_SUM, w.win));
        for (int i = 0; i < N; i++)
            added_d[i] += 1.0;
        /* the int64s +(me + 1) from element 1, or every other one of them (strided) */
        if (round % 4 == 3) {
            MPI_CHK(MPI_Accumulate(mine, N / 2 - 1, MPI_INT64_T, 0, d_int + 8, 1, every_other,
                                   MPI_SUM, w.win));
            for (int i = 1; i < N - 2; i += 2)
                added_i[i] += me + 1;
        } else {
            MPI_CHK(MPI_Accumulate(mine, N - 1, MPI_INT64_T, 0, d_int + 8, N - 1, MPI_INT64_T,
                                   MPI_SUM, w.win));
            for (int i = 1; i < N; i++)
                added_i[i] += me + 1;
        }
        /* single elements where the blocks are */
        const int k = (int) ((round * 37 + me * 11) % N);
        const double one = 1.0;
        double before;
        MPI_CHK(MPI_Fetch_and_op(&one, &before, MPI_DOUBLE, 0, k * 8, MPI_SUM, w.win));
        added_d[k] += 1.0;
        /* a compare-and-swap loop +1 on a counter, which MPI_NO_OP reads whole below */
        const int j = (int) ((round * 53 + me * 7) % N);
        int64_t cur, next, old;
        MPI_CHK(MPI_Fetch_and_op(NULL, &cur, MPI_INT64_T, 0, d_cas + j * 8, MPI_NO_OP, w.win));
        MPI_CHK(MPI_Win_flush(0, w.win));
        for (;;) {
            next = cur + 1;
            MPI_CHK(MPI_Compare_and_swap(&next, &cur, &old, MPI_INT64_T, 0, d_cas + j * 8,
                                         w.win));
            MPI_CHK(MPI_Win_flush(0, w.win));
            if (old == cur)
                break;
            cur = old;
        }
        added_c[j] += 1;
        MPI_CHK(MPI_Get_accumulate(NULL, 0, MPI_DATATYPE_NULL, counters, N, MPI_INT64_T, 0,
                                   d_cas, N, MPI_INT64_T, MPI_NO_OP, w.win));
        /* a fetching block +1 at a moving element */
        const int b = (int) ((round * 101 + me * 13) % (N - 64));
        MPI_CHK(MPI_Get_accumulate(inc, 64, MPI_INT64_T, back, 64, MPI_INT64_T, 0, d_int + b * 8,
                                   64, MPI_INT64_T, MPI_SUM, w.win));
        for (int i = b; i < b + 64; i++)
            added_i[i] += 1;
        /* a fetching block read of the doubles */
        MPI_CHK(MPI_Get_accumulate(NULL, 0, MPI_DATATYPE_NULL, fetched, N, MPI_DOUBLE, 0, 0, N,
                                   MPI_DOUBLE, MPI_NO_OP, w.win));
        calls++;
        if (calls % EPOCH == 0 || round == rounds - 1)
            close_epoch(s, w.win);
        if (round % 16 == 0) {
            /* what was fetched is whole numbers no greater than every rank's total */
            for (int i = 0; i < N; i++)
                CHECK(fetched[i] == (double) (long) fetched[i] && fetched[i] >= 0 &&
                      fetched[i] <= (double) (rounds + 2) * np * 2,
                      "phase 1: fetched double [%d] = %g", i, fetched[i]);
            for (int i = 0; i < 64; i++)
                CHECK(back[i] >= 0, "phase 1: fetched int64 [%d] = %lld", i, (long long) back[i]);
            for (int i = 0; i < N; i++)
                CHECK(counters[i] >= 0 && counters[i] <= rounds * np, "phase 1: counter [%d] = "
                      "%lld", i, (long long) counters[i]);
        }
    }
    double *sum_d = me == 0 ? malloc(sizeof(double) * N) : NULL;
    int64_t *sum_i = me == 0 ? malloc(sizeof(int64_t) * N) : NULL;
    int64_t *sum_c = me == 0 ? malloc(sizeof(int64_t) * N) : NULL;
    MPI_CHK(MPI_Reduce(added_d, sum_d, N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
    MPI_CHK(MPI_Reduce(added_i, sum_i, N, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD));
    MPI_CHK(MPI_Reduce(added_c, sum_c, N, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        rt_lock_self(&w);
        const double *d = (const double *) w.base;
        const int64_t *v = (const int64_t *) (w.base + d_int);
        const int64_t *c = (const int64_t *) (w.base + d_cas);
        long wrong_d = 0, wrong_i = 0, wrong_c = 0;
        for (int i = 0; i < N; i++) {
            if (c[i] != sum_c[i] && wrong_c++ < 3)
                CHECK(0, "phase 1: counter [%d] = %lld, expected %lld", i, (long long) c[i],
                      (long long) sum_c[i]);
            if (d[i] != sum_d[i] && wrong_d++ < 3)
                CHECK(0, "phase 1: double [%d] = %.1f, expected %.1f", i, d[i], sum_d[i]);
            if (v[i] != sum_i[i] && wrong_i++ < 3)
                CHECK(0, "phase 1: int64 [%d] = %lld, expected %lld", i, (long long) v[i],
                      (long long) sum_i[i]);
        }
        CHECK(wrong_d == 0 && wrong_i == 0 && wrong_c == 0,
              "phase 1: %ld doubles, %ld int64s and %ld counters wrong of %d", wrong_d, wrong_i,
              wrong_c, N);
        rt_unlock_self(&w);
    }
    MPI_CHK(MPI_Type_free(&every_other));
    free(sum_d);
    free(sum_i);
    free(sum_c);
    free(added_c);
    free(counters);
    free(ones);
    free(fetched);
    free(mine);
    free(back);
    free(added_d);
    free(added_i);
    rt_win_free(&w);
}

/* ------------------------------------------------------------------ phase 2 */

static void phase_whole(int me, int np, long rounds)
{
    const MPI_Aint first = 4096 + 64; /* from a granule's second line on */
    rt_win_t w;
    rt_win_create(RT_ALLOCATE, me == 0 ? first + B * 8 : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    if (me == 0) {
        rt_lock_self(&w);
        memset(w.base, 0, first + B * 8);
        rt_unlock_self(&w);
    }
    MPI_Datatype block;
    MPI_CHK(MPI_Type_contiguous(B, MPI_INT64_T, &block));
    MPI_CHK(MPI_Type_commit(&block));
    int64_t *inc = malloc(sizeof(int64_t) * B), *seen = malloc(sizeof(int64_t) * B);
    for (int i = 0; i < B; i++)
        inc[i] = 1;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    long torn = 0, reads = 0;
    MPI_CHK(MPI_Win_lock_all(0, w.win));
    if (me != 0) {
        for (long r = 0; r < rounds * 4; r++) {
            if (r % 2)
                MPI_CHK(MPI_Accumulate(inc, B, MPI_INT64_T, 0, first, 1, block, MPI_SUM, w.win));
            else
                MPI_CHK(MPI_Accumulate(inc, B, MPI_INT64_T, 0, first, B, MPI_INT64_T, MPI_SUM,
                                       w.win));
            MPI_CHK(MPI_Win_flush(0, w.win));
        }
    } else {
        /* read while the others add, until they are done (a barrier would need progress) */
        const int64_t total = (int64_t) (np - 1) * rounds * 4;
        int64_t last = -1;
        while (last < total) {
            MPI_CHK(MPI_Get_accumulate(NULL, 0, MPI_DATATYPE_NULL, seen, B, MPI_INT64_T, 0, first,
                                       B, MPI_INT64_T, MPI_NO_OP, w.win));
            MPI_CHK(MPI_Win_flush(0, w.win));
            reads++;
            long differ = 0;
            for (int i = 1; i < B; i++)
                differ += seen[i] != seen[0];
            if (differ && torn++ < 3)
                CHECK(0, "phase 2: one read saw %ld of %d elements differ from the first "
                      "(%lld; last %lld)", differ, B, (long long) seen[0],
                      (long long) seen[B - 1]);
            CHECK(seen[0] >= last || differ, "phase 2: block went back from %lld to %lld",
                  (long long) last, (long long) seen[0]);
            if (!differ)
                last = seen[0];
            if (reads > 100000000L)
                break;
        }
        CHECK(last == total, "phase 2: the block ended at %lld, expected %lld", (long long) last,
              (long long) total);
    }
    MPI_CHK(MPI_Win_unlock_all(w.win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        rt_lock_self(&w);
        const int64_t *v = (const int64_t *) (w.base + first);
        long wrong = 0;
        for (int i = 0; i < B; i++)
            wrong += v[i] != (int64_t) (np - 1) * rounds * 4;
        CHECK(wrong == 0, "phase 2: %ld of %d elements wrong", wrong, B);
        rt_unlock_self(&w);
    }
    MPI_CHK(MPI_Type_free(&block));
    free(inc);
    free(seen);
    rt_win_free(&w);
}

/* ------------------------------------------------------------------ phase 3 */

typedef struct {
    MPI_Aint disp; /* of the next element in its rank's window; -1: none */
    int rank;      /* -1: none */
    int check;     /* link_check(disp, rank) */
} link_t;

typedef struct {
    int64_t value;
    int claim; /* 0, or the rank + 1 that links an element behind this one */
    int pad;
    link_t next;
} elem_t;

static int link_check(MPI_Aint disp, int rank)
{
    return (int) (((uint64_t) disp * 2654435761u) ^ (uint64_t) (rank * 40503 + 12345));
}

static long bad_links = 0;

/* A link read must be whole: nil, or a known element with its check word. */
static void validate(const link_t *l, int np, MPI_Aint size)
{
    const int nil = l->disp == -1 && l->rank == -1 && l->check == 0;
    const int whole = l->rank >= 0 && l->rank < np && l->disp >= 0 && l->disp < size &&
                      l->disp % (MPI_Aint) sizeof(elem_t) == 0 &&
                      l->check == link_check(l->disp, l->rank);
    if (!nil && !whole && bad_links++ < 3)
        CHECK(0, "a torn link: disp %ld, rank %d, check %d", (long) l->disp, l->rank,
              l->check);
}

static void read_link(link_t *l, int rank, MPI_Aint disp, MPI_Win win, int np, MPI_Aint size)
{
    MPI_CHK(MPI_Get_accumulate(NULL, 0, MPI_DATATYPE_NULL, l, sizeof *l, MPI_BYTE, rank, disp,
                               sizeof *l, MPI_BYTE, MPI_NO_OP, win));
    MPI_CHK(MPI_Win_flush(rank, win));
    validate(l, np, size);
}

static void phase_links(int me, int np, int shared_locks)
{
    /* element 0 of rank 0 is the list's head; a rank's elements 1..K are its own */
    const MPI_Aint size = (K + 1) * (MPI_Aint) sizeof(elem_t);
    rt_win_t w;
    rt_win_create(RT_ALLOCATE, size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    rt_lock_self(&w);
    elem_t *mine = (elem_t *) w.base;
    for (int i = 0; i <= K; i++) {
        mine[i].value = (int64_t) me * K + i - 1;
        mine[i].claim = mine[i].pad = 0;
        mine[i].next = (link_t) { -1, -1, 0 };
    }
    rt_unlock_self(&w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    const int unclaimed = 0, claimer = me + 1;
    link_t tail = { 0, 0, link_check(0, 0) }; /* where this rank thinks the tail is */
    if (!shared_locks)
        MPI_CHK(MPI_Win_lock_all(0, w.win));
    for (int i = 1; i <= K; i++) {
        const link_t new_elem = { i * (MPI_Aint) sizeof(elem_t), me,
                                  link_check(i * (MPI_Aint) sizeof(elem_t), me) };
        for (;;) {
            const MPI_Aint next_at = tail.disp + (MPI_Aint) offsetof(elem_t, next);
            if (shared_locks)
                MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, tail.rank, 0, w.win));
            int claimed;
            MPI_CHK(MPI_Compare_and_swap(&claimer, &unclaimed, &claimed, MPI_INT, tail.rank,
                                         tail.disp + (MPI_Aint) offsetof(elem_t, claim), w.win));
            MPI_CHK(MPI_Win_flush(tail.rank, w.win));
            if (claimed == unclaimed) {
                MPI_CHK(MPI_Accumulate(&new_elem, sizeof new_elem, MPI_BYTE, tail.rank, next_at,
                                       sizeof new_elem, MPI_BYTE, MPI_REPLACE, w.win));
                MPI_CHK(MPI_Win_flush(tail.rank, w.win));
                if (shared_locks)
                    MPI_CHK(MPI_Win_unlock(tail.rank, w.win));
                tail = new_elem;
                break;
            }
            /* stale: chase the tail's link once it is whole */
            link_t next;
            do {
                read_link(&next, tail.rank, next_at, w.win, np, size);
            } while (next.disp == -1 && bad_links == 0);
            if (shared_locks)
                MPI_CHK(MPI_Win_unlock(tail.rank, w.win));
            if (bad_links)
                break;
            tail = next;
        }
        if (bad_links)
            break;
    }
    if (!shared_locks)
        MPI_CHK(MPI_Win_unlock_all(w.win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    long found = 0;
    if (me == 0 && bad_links == 0) {
        /* walk the list: every element once */
        char *seen = calloc((size_t) np * K, 1);
        link_t at = { 0, 0, link_check(0, 0) };
        MPI_CHK(MPI_Win_lock_all(0, w.win));
        for (;;) {
            link_t next;
            read_link(&next, at.rank, at.disp + (MPI_Aint) offsetof(elem_t, next), w.win, np,
                      size);
            if (next.disp == -1 || bad_links)
                break;
            int64_t value;
            MPI_CHK(MPI_Get(&value, 1, MPI_INT64_T, next.rank, next.disp, 1, MPI_INT64_T, w.win));
            MPI_CHK(MPI_Win_flush(next.rank, w.win));
            CHECK(value >= 0 && value < (int64_t) np * K && !seen[value],
                  "phase 3: element %lld twice or unknown", (long long) value);
            if (value < 0 || value >= (int64_t) np * K || seen[value]++)
                break;
            found++;
            at = next;
        }
        MPI_CHK(MPI_Win_unlock_all(w.win));
        CHECK(found == (long) np * K, "phase 3 (%s): %ld of %d elements in the list",
              shared_locks ? "shared locks" : "lock_all", found, np * K);
        free(seen);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_win_free(&w);
}

/* ------------------------------------------------------------------ phase 4 */

/* Ranks 1.. replace rank 0's 16-byte link and a 40-byte record of five equal words over
 * and over (MPI_Accumulate of MPI_BYTE, MPI_REPLACE); rank 0 reads both with MPI_NO_OP
 * meanwhile: every read whole. */
static void phase_torn(int me, int np, long rounds)
{
    enum { RECORD = 40 };
    rt_win_t w;
    rt_win_create(RT_ALLOCATE, me == 0 ? 64 + RECORD : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    if (me == 0) {
        rt_lock_self(&w);
        memset(w.base, 0, 64 + RECORD);
        *(link_t *) w.base = (link_t) { -1, -1, 0 };
        rt_unlock_self(&w);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    const long writes = rounds * 20;
    const MPI_Aint size = 1 << 20;
    long torn = 0;
    MPI_CHK(MPI_Win_lock_all(0, w.win));
    if (me != 0) {
        for (long i = 0; i < writes; i++) {
            const MPI_Aint disp = (MPI_Aint) ((i * 7 + me) % 4096 + 1) * (MPI_Aint) sizeof(elem_t);
            const link_t l = { disp, me, link_check(disp, me) };
            int64_t record[RECORD / 8];
            for (int k = 0; k < RECORD / 8; k++)
                record[k] = (int64_t) i * np + me;
            MPI_CHK(MPI_Accumulate(&l, sizeof l, MPI_BYTE, 0, 0, sizeof l, MPI_BYTE, MPI_REPLACE,
                                   w.win));
            MPI_CHK(MPI_Accumulate(record, RECORD, MPI_BYTE, 0, 64, RECORD, MPI_BYTE,
                                   MPI_REPLACE, w.win));
            MPI_CHK(MPI_Win_flush(0, w.win));
        }
        const int done = 1;
        int ignored;
        MPI_CHK(MPI_Fetch_and_op(&done, &ignored, MPI_INT, 0, 56, MPI_SUM, w.win));
        MPI_CHK(MPI_Win_flush(0, w.win));
    } else {
        int done = 0;
        while (done < np - 1) {
            link_t l;
            int64_t record[RECORD / 8];
            MPI_CHK(MPI_Get_accumulate(NULL, 0, MPI_DATATYPE_NULL, &l, sizeof l, MPI_BYTE, 0, 0,
                                       sizeof l, MPI_BYTE, MPI_NO_OP, w.win));
            MPI_CHK(MPI_Get_accumulate(NULL, 0, MPI_DATATYPE_NULL, record, RECORD, MPI_BYTE, 0,
                                       64, RECORD, MPI_BYTE, MPI_NO_OP, w.win));
            MPI_CHK(MPI_Fetch_and_op(NULL, &done, MPI_INT, 0, 56, MPI_NO_OP, w.win));
            MPI_CHK(MPI_Win_flush(0, w.win));
            validate(&l, np, size);
            int differ = 0;
            for (int k = 1; k < RECORD / 8; k++)
                differ |= record[k] != record[0];
            if (differ && torn++ < 3)
                CHECK(0, "phase 4: a torn record: %llx %llx %llx %llx %llx",
                      (unsigned long long) record[0], (unsigned long long) record[1],
                      (unsigned long long) record[2], (unsigned long long) record[3],
                      (unsigned long long) record[4]);
        }
    }
    MPI_CHK(MPI_Win_unlock_all(w.win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_win_free(&w);
}

int main(int argc, char **argv)
{
    int me, np;
    rt_init_world(&argc, &argv, &me, &np);
    rt_require_procs(2, "accumulate_whole needs 2 ranks or more");
    const char *transport = getenv("NBRMA_TRANSPORT");
    const int remote = (transport && strcmp(transport, "ucx") == 0) ||
                       getenv("NBRMA_VIRTUAL_NODES") != NULL;
    long rounds = remote ? 4 : 200;
    if (argc > 1 && atol(argv[1]) > 0)
        rounds = atol(argv[1]);
    phase_exact(me, np, rounds);
    if (!remote)
        phase_whole(me, np, rounds);
    else if (me == 0)
        printf("phase 2 skipped: over UCX each element of a bulk accumulate is a network "
               "atomic, and a target reading its own block in a loop starves the writers' "
               "atomics over tcp\n");
    phase_links(me, np, 0);
    phase_links(me, np, 1);
    phase_torn(me, np, rounds);
    return rt_finalize();
}
