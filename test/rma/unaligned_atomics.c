/*
 * unaligned_atomics: MPI_Fetch_and_op, MPI_Compare_and_swap and MPI_Accumulate on
 * 8-byte integers that are not 8-byte aligned in memory: in an MPI_Win_create window
 * whose base lies 4 bytes past an aligned address (displacements multiples of 8 from
 * there), or with `allocate` in an MPI_Win_allocate window at displacements 4 bytes
 * past multiples of 8 (MPI allows any base and any displacement).
 * nbrma's transports do 64-bit atomics only on aligned words; such words go under the
 * accumulate lock instead, and must stay atomic: every rank adds to the same counters
 * of rank 0 ITER times, under shared locks (taken at once) and in lock_all epochs, and
 * the totals must be exact. A compare-and-swap ticket then lets each rank win exactly
 * one slot. Run with `aligned` for aligned words (the atomics path, same checks).
 *
 * 4-byte integers too (MPI_INT32_T fetch-and-op, accumulate and a compare-and-swap
 * counter after the 8-byte words): 4 bytes past a multiple of 8 in the default and
 * `allocate` runs (4-byte aligned: 32-bit atomics where the transport has them), 2
 * bytes past one with `aligned` (not 4-byte aligned: the accumulate lock). Their totals
 * must be exact as well.
 */
#include "rmatest.h"
#include <stdint.h>
#include <string.h>

#define ITER 200

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    const int me = rt_rank(), np = rt_nprocs();
    const int aligned = argc > 1 && strcmp(argv[1], "aligned") == 0;
    const int allocate = argc > 1 && strcmp(argv[1], "allocate") == 0;
    const int shift = aligned ? 0 : 4;
    /* words: 0 fetch_and_op counter, 1 accumulate counter, 2 CAS ticket, 3.. slots, all
     * at displacement d0 + 8 * index */
    const int words = 3 + np;
    char *memory = NULL, *base = NULL;
    MPI_Aint d0 = 0;
    MPI_Win win;
    if (allocate) {
        MPI_CHK(MPI_Win_allocate((MPI_Aint)(words * 8 + 32), 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                                 &memory, &win));
        d0 = (8 - (MPI_Aint)((uintptr_t)memory % 8)) % 8 + shift;
        base = memory + d0;
    } else {
        MPI_CHK(MPI_Alloc_mem((MPI_Aint)(words * 8 + 40), MPI_INFO_NULL, &memory));
        base = memory + (8 - ((uintptr_t)memory % 8)) % 8 + shift;
        MPI_CHK(MPI_Win_create(base, (MPI_Aint)words * 8 + 24, 1, MPI_INFO_NULL,
                               MPI_COMM_WORLD, &win));
    }
    /* the 4-byte counters: fetch-and-op, accumulate, compare-and-swap */
    const MPI_Aint di = d0 + words * 8 + (aligned ? 2 : 0);
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win));
    memset(base, 0, (size_t)words * 8 + 24);
    MPI_CHK(MPI_Win_unlock(me, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

    const int64_t one = 1;
    int64_t old = 0, last_seen = -1;
    int increasing = 1;
    for (int i = 0; i < ITER; i++) {
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        MPI_CHK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, d0, MPI_SUM, win));
        MPI_CHK(MPI_Win_unlock(0, win));
        if (old <= last_seen) increasing = 0;
        last_seen = old;
        const int64_t pair[1] = { 2 };
        MPI_CHK(MPI_Win_lock_all(0, win));
        MPI_CHK(MPI_Accumulate(pair, 1, MPI_INT64_T, 0, d0 + 8, 1, MPI_INT64_T, MPI_SUM, win));
        MPI_CHK(MPI_Win_unlock_all(win));
    }
    CHECK(increasing, "fetch_and_op returned a value that did not grow (last %lld)",
          (long long)last_seen);

    const int32_t one32 = 1, three32 = 3;
    int32_t old32 = 0, last32 = -1, increasing32 = 1;
    for (int i = 0; i < ITER; i++) {
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        MPI_CHK(MPI_Fetch_and_op(&one32, &old32, MPI_INT32_T, 0, di, MPI_SUM, win));
        MPI_CHK(MPI_Accumulate(&three32, 1, MPI_INT32_T, 0, di + 4, 1, MPI_INT32_T, MPI_SUM,
                               win));
        MPI_CHK(MPI_Win_unlock(0, win));
        if (old32 <= last32) increasing32 = 0;
        last32 = old32;
    }
    CHECK(increasing32, "4-byte fetch_and_op returned a value that did not grow (last %d)",
          (int)last32);
    /* the compare-and-swap counter: each rank adds 1, ITER / 10 times, by CAS loops */
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int i = 0; i < ITER / 10; i++) {
        int32_t expect = 0, seen32 = -1;
        int tries = 0;
        for (;;) {
            const int32_t next = expect + 1;
            MPI_CHK(MPI_Compare_and_swap(&next, &expect, &seen32, MPI_INT32_T, 0, di + 8, win));
            MPI_CHK(MPI_Win_flush(0, win));
            if (seen32 == expect || ++tries >= 100000) break;
            expect = seen32;
        }
        CHECK(tries < 100000, "4-byte compare-and-swap: no success after %d tries", tries);
    }
    MPI_CHK(MPI_Win_unlock_all(win));

    /* Tickets: each rank takes the next free ticket by compare-and-swap until it wins. */
    int64_t ticket = 0, seen = -1;
    int attempts = 0;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    for (;;) {
        const int64_t next = ticket + 1;
        MPI_CHK(MPI_Compare_and_swap(&next, &ticket, &seen, MPI_INT64_T, 0, d0 + 16, win));
        MPI_CHK(MPI_Win_flush(0, win));
        if (seen == ticket) break;
        ticket = seen;
        CHECK(++attempts < 100000, "no ticket after %d attempts", attempts);
        if (attempts >= 100000) break;
    }
    const int64_t mark = me + 1;
    MPI_CHK(MPI_Accumulate(&mark, 1, MPI_INT64_T, 0, d0 + (MPI_Aint)(24 + 8 * ticket), 1,
                           MPI_INT64_T, MPI_REPLACE, win));
    MPI_CHK(MPI_Win_unlock(0, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    if (me == 0) {
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        int64_t value[3 + 64];
        memcpy(value, base, (size_t)words * 8);
        MPI_CHK(MPI_Win_unlock(0, win));
        CHECK(value[0] == (int64_t)np * ITER, "fetch_and_op total %lld, expected %lld",
              (long long)value[0], (long long)np * ITER);
        CHECK(value[1] == 2 * (int64_t)np * ITER, "accumulate total %lld, expected %lld",
              (long long)value[1], 2 * (long long)np * ITER);
        CHECK(value[2] == np, "ticket %lld, expected %d", (long long)value[2], np);
        int64_t owners = 0;
        for (int r = 0; r < np; r++) owners |= (int64_t)1 << (value[3 + r] - 1);
        CHECK(owners == ((int64_t)1 << np) - 1, "tickets won: mask %llx", (long long)owners);
        int32_t counters[3];
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        memcpy(counters, base + (di - d0), sizeof counters);
        MPI_CHK(MPI_Win_unlock(0, win));
        CHECK(counters[0] == np * ITER, "4-byte fetch_and_op total %d, expected %d",
              (int)counters[0], np * ITER);
        CHECK(counters[1] == 3 * np * ITER, "4-byte accumulate total %d, expected %d",
              (int)counters[1], 3 * np * ITER);
        CHECK(counters[2] == np * (ITER / 10), "4-byte compare-and-swap total %d, expected %d",
              (int)counters[2], np * (ITER / 10));
    }
    MPI_CHK(MPI_Win_free(&win));
    if (!allocate) MPI_CHK(MPI_Free_mem(memory));
    return rt_finalize();
}
