/*
 * cross_memory_batches: MPI_Win_create windows over heap memory, reached by cross-memory
 * attach, where a lock epoch's small puts and gets are gathered into one
 * process_vm_writev/readv a target at the epoch's next flush or close. Every rank's
 * target is its right neighbour; checked on every rank:
 *   - 200 puts of 1 KiB in one exclusive lock epoch (batches fill and go out mid-epoch),
 *     then MPI_Win_unlock: every byte arrived, and nothing around them changed;
 *   - 100 gets of 512 B, MPI_Win_flush_local, the results checked; 100 more, unlock;
 *   - MPI_Win_lock_all: puts, then an MPI_Accumulate (the general path: the puts held
 *     before it are made first), flush, a get of the put bytes and of the sum;
 *   - MPI_Rput, MPI_Wait, the origin buffer overwritten at once: the target has the
 *     bytes of before (a call whose request completes is not held);
 *   - over the shm transport only (a put from an unmapped page would be a crash
 *     elsewhere): a put whose origin buffer is unmapped inside a lock epoch fails the
 *     epoch: MPI_Win_unlock returns an error naming MPI_Win_unlock, and the next epoch
 *     works.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "rmatest.h"

#define WINDOW (64 * 1024)
#define PUTS 200
#define PUT_BYTES 1024
#define GETS 100
#define GET_BYTES 512

static int me, np, right, left;

static unsigned char byte_of(int writer, int round, long position)
{
    return (unsigned char) (writer * 37 + round * 11 + position * 7 + 1);
}

/* Fills the window with the owner's pattern (round 0), under an exclusive self lock. */
static void reset(MPI_Win win, unsigned char *window)
{
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win));
    for (long i = 0; i < WINDOW; i++)
        window[i] = byte_of(me, 0, i);
    MPI_CHK(MPI_Win_unlock(me, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* 200 puts of 1 KiB into 60 slots of 1 KiB with 64-byte gaps (put k into slot k % 60):
 * later puts rewrite earlier slots, so a slot holds its last put's bytes and the gaps
 * the owner's pattern. */
static void puts_in_one_epoch(MPI_Win win, unsigned char *window)
{
    reset(win, window);
    unsigned char *source = malloc((size_t) PUTS * PUT_BYTES);
    for (long i = 0; i < (long) PUTS * PUT_BYTES; i++)
        source[i] = byte_of(me, 1, i);
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    for (int k = 0; k < PUTS; k++)
        MPI_CHK(MPI_Put(source + (size_t) k * PUT_BYTES, PUT_BYTES, MPI_BYTE, right,
                        (MPI_Aint) (k % 60) * (PUT_BYTES + 64), PUT_BYTES, MPI_BYTE, win));
    MPI_CHK(MPI_Win_unlock(right, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
    long wrong = 0;
    for (long i = 0; i < WINDOW; i++) {
        const long slot = i / (PUT_BYTES + 64), in = i % (PUT_BYTES + 64);
        unsigned char want = byte_of(me, 0, i);
        if (slot < 60 && in < PUT_BYTES) {
            const int last = (int) slot + 60 * ((PUTS - 1 - (int) slot) / 60);
            want = byte_of(left, 1, (long) last * PUT_BYTES + in);
        }
        wrong += window[i] != want;
    }
    MPI_CHK(MPI_Win_unlock(me, win));
    CHECK(wrong == 0, "%ld wrong bytes in the window after %d puts in one epoch", wrong, PUTS);
    free(source);
}

static void gets_in_one_epoch(MPI_Win win, unsigned char *window)
{
    reset(win, window);
    unsigned char *result = malloc((size_t) GETS * GET_BYTES);
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    for (int half = 0; half < 2; half++) {
        memset(result, 0, (size_t) GETS * GET_BYTES);
        for (int k = 0; k < GETS; k++)
            MPI_CHK(MPI_Get(result + (size_t) k * GET_BYTES, GET_BYTES, MPI_BYTE, right,
                            (MPI_Aint) (k * 601 + half * 17) % (WINDOW - GET_BYTES), GET_BYTES,
                            MPI_BYTE, win));
        if (half == 0)
            MPI_CHK(MPI_Win_flush_local(right, win));
        else
            MPI_CHK(MPI_Win_unlock(right, win));
        long wrong = 0;
        for (int k = 0; k < GETS; k++) {
            const long at = (long) (k * 601 + half * 17) % (WINDOW - GET_BYTES);
            for (long i = 0; i < GET_BYTES; i++)
                wrong += result[(size_t) k * GET_BYTES + i] != byte_of(right, 0, at + i);
        }
        CHECK(wrong == 0, "%ld wrong bytes fetched by %d gets (%s)", wrong, GETS,
              half == 0 ? "after MPI_Win_flush_local" : "after MPI_Win_unlock");
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    free(result);
}

/* Puts, an accumulate (general path), flush, then gets of both. */
static void puts_then_accumulate(MPI_Win win, unsigned char *window)
{
    reset(win, window);
    unsigned char source[4096], back[4096];
    for (int i = 0; i < 4096; i++)
        source[i] = byte_of(me, 2, i);
    const int one = 5;
    int sum = 0;
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int k = 0; k < 4; k++)
        MPI_CHK(MPI_Put(source + k * 1024, 1024, MPI_BYTE, right, 8192 + k * 1024, 1024,
                        MPI_BYTE, win));
    MPI_CHK(MPI_Accumulate(&one, 1, MPI_INT, right, 40000, 1, MPI_INT, MPI_SUM, win));
    MPI_CHK(MPI_Win_flush(right, win));
    MPI_CHK(MPI_Get(back, 4096, MPI_BYTE, right, 8192, 4096, MPI_BYTE, win));
    MPI_CHK(MPI_Get(&sum, 1, MPI_INT, right, 40000, 1, MPI_INT, win));
    MPI_CHK(MPI_Win_unlock_all(win));
    CHECK(memcmp(back, source, sizeof back) == 0, "puts before an accumulate: bytes read back "
          "differ");
    int before;
    memcpy(&before, (unsigned char[4]) { byte_of(right, 0, 40000), byte_of(right, 0, 40001),
                                         byte_of(right, 0, 40002), byte_of(right, 0, 40003) },
           sizeof before);
    CHECK(sum == before + one, "accumulate after held puts: %d, expected %d", sum, before + one);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* A request-based put completes its request only when its bytes are out. */
static void rput_then_overwrite(MPI_Win win, unsigned char *window)
{
    reset(win, window);
    unsigned char source[4096];
    for (int i = 0; i < 4096; i++)
        source[i] = byte_of(me, 3, i);
    MPI_Request request;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_CHK(MPI_Rput(source, 4096, MPI_BYTE, right, 20000, 4096, MPI_BYTE, win, &request));
    MPI_CHK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    memset(source, 0xee, sizeof source);
    MPI_CHK(MPI_Win_unlock(right, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
    long wrong = 0;
    for (int i = 0; i < 4096; i++)
        wrong += window[20000 + i] != byte_of(left, 3, i);
    MPI_CHK(MPI_Win_unlock(me, win));
    CHECK(wrong == 0, "MPI_Rput + MPI_Wait, then the origin buffer overwritten: %ld bytes of "
          "the overwrite arrived", wrong);
}

static void unmapped_origin(MPI_Win win, unsigned char *window)
{
    reset(win, window);
    const long page = sysconf(_SC_PAGESIZE);
    void *gone = mmap(NULL, (size_t) page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    CHECK(gone != MAP_FAILED, "mmap of a page failed");
    if (gone == MAP_FAILED)
        return;
    munmap(gone, (size_t) page);
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    int rc = MPI_Put(gone, 256, MPI_BYTE, right, 0, 256, MPI_BYTE, win);
    if (rc == MPI_SUCCESS)
        rc = MPI_Win_unlock(right, win);
    else
        MPI_CHK(MPI_Win_unlock(right, win));
    CHECK(rc != MPI_SUCCESS, "a put from an unmapped page: MPI_Put and MPI_Win_unlock succeeded");
    if (rc != MPI_SUCCESS) {
        char message[MPI_MAX_ERROR_STRING];
        int length = 0;
        MPI_CHK(MPI_Error_string(rc, message, &length));
        CHECK(strstr(message, "MPI_Put") || strstr(message, "MPI_Win_unlock"),
              "the error names neither MPI_Put nor MPI_Win_unlock: %s", message);
    }
    /* the lock was given back: the next epoch works */
    const int seven = 7;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_CHK(MPI_Put(&seven, 1, MPI_INT, right, 512, 1, MPI_INT, win));
    MPI_CHK(MPI_Win_unlock(right, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
    int got;
    memcpy(&got, window + 512, sizeof got);
    MPI_CHK(MPI_Win_unlock(me, win));
    CHECK(got == 7, "the epoch after the failed one: %d arrived, expected 7", got);
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);
    right = (me + 1) % np;
    left = (me + np - 1) % np;
    unsigned char *window = malloc(WINDOW);
    MPI_Win win;
    MPI_CHK(MPI_Win_create(window, WINDOW, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    puts_in_one_epoch(win, window);
    gets_in_one_epoch(win, window);
    puts_then_accumulate(win, window);
    rput_then_overwrite(win, window);
    const char *mode = getenv("NBRMA_SUITE_MODE");
    if (!mode || strcmp(mode, "shm") == 0 || strcmp(mode, "thread") == 0)
        unmapped_origin(win, window);
    MPI_CHK(MPI_Win_free(&win));
    free(window);
    return rt_finalize();
}
