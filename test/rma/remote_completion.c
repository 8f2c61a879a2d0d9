/*
 * remote_completion: the synchronization calls that MPI says complete RMA operations at
 * the target really do, whatever the transport. Rank 0 puts 1 MiB into every other
 * rank's window, closes with one of them, then tells the targets with a two-sided
 * message (MPICH's own path, which may overtake nbrma's); each target reads its window
 * memory directly (after MPI_Win_sync) and must see every byte of the new data:
 *
 *   flush        lock(exclusive) put flush(t)       send | recv win_sync read | unlock
 *   flush_all    lock_all        put flush_all      send | recv win_sync read | unlock_all
 *   iflush       lock_all        put MPIX_Win_iflush + MPI_Wait, as flush
 *   unlock       lock(exclusive) put unlock(t)      send | recv win_sync read
 *   unlock_all   lock_all        put unlock_all     send | recv win_sync read
 *   fence        fence put fence                         | fence read
 *   pscw         start put complete                      | post wait read
 *
 * Over shared memory every completion is immediate; over UCX (runtests-ucx, and peers
 * in another virtual node in runtests-mixed) a put that completed locally may still be
 * on its way, and only a transport flush says it arrived. Large puts, repeated, make a
 * late arrival likely if a flush is missing.
 *
 * Usage: remote_completion [create|allocate|shared|dynamic]...   (default: create allocate)
 */
#include "rmatest.h"

#define BYTES (1 << 20)
#define WORDS (BYTES / 8)
#define ITERATIONS 10

enum { M_FLUSH = 0, M_FLUSH_ALL, M_IFLUSH, M_UNLOCK, M_UNLOCK_ALL, M_FENCE, M_PSCW, NMODES };
static const char *mode_names[NMODES] = { "flush",      "flush_all", "iflush", "unlock",
                                          "unlock_all", "fence",     "pscw" };

static int me, np;

static long long value(int mode, int iteration, int target, int word)
{
    return ((long long) (mode * 1000 + iteration) << 40) + ((long long) target << 32) + word;
}

/* The target's view: every word of its window holds the new value. */
static void check_window(const rt_win_t *w, int mode, int iteration)
{
    const long long *words = (const long long *) w->base;
    int bad = 0, first = -1;
    for (int i = 0; i < WORDS; i++) {
        if (words[i] != value(mode, iteration, me, i)) {
            if (first < 0)
                first = i;
            bad++;
        }
    }
    CHECK(bad == 0,
          "%s %s iteration %d: %d of %d words not yet written at the target (first: word %d "
          "holds %llx, expected %llx)",
          rt_flavor_names[w->flavor], mode_names[mode], iteration, bad, WORDS, first,
          first < 0 ? 0ull : (unsigned long long) words[first],
          first < 0 ? 0ull : (unsigned long long) value(mode, iteration, me, first));
}

static void put_all(const rt_win_t *w, long long *source, int mode, int iteration)
{
    for (int t = 1; t < np; t++) {
        long long *block = source + (size_t) (t - 1) * WORDS;
        for (int i = 0; i < WORDS; i++)
            block[i] = value(mode, iteration, t, i);
        MPI_CHK(MPI_Put(block, WORDS, MPI_LONG_LONG, t, rt_disp(w, t, 0), WORDS, MPI_LONG_LONG,
                        w->win));
    }
}

/* Origin told the targets after the closing call; a target reads once told. */
static void tell_targets(void)
{
    for (int t = 1; t < np; t++)
        MPI_CHK(MPI_Send(NULL, 0, MPI_BYTE, t, 7, MPI_COMM_WORLD));
}

static void told(const rt_win_t *w)
{
    MPI_CHK(MPI_Recv(NULL, 0, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_CHK(MPI_Win_sync(w->win));
}

static void run(const rt_win_t *w, long long *source, int mode, int iteration)
{
    MPI_Group world, origin, targets;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int zero = 0;
    MPI_Group_incl(world, 1, &zero, &origin);
    MPI_Group_excl(world, 1, &zero, &targets);

    if (me == 0) {
        switch (mode) {
        case M_FLUSH:
            /* one lock epoch per target, held open across the check */
            for (int t = 1; t < np; t++)
                MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w->win));
            put_all(w, source, mode, iteration);
            for (int t = 1; t < np; t++)
                MPI_CHK(MPI_Win_flush(t, w->win));
            tell_targets();
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
            for (int t = 1; t < np; t++)
                MPI_CHK(MPI_Win_unlock(t, w->win));
            break;
        case M_FLUSH_ALL:
        case M_IFLUSH:
            MPI_CHK(MPI_Win_lock_all(0, w->win));
            put_all(w, source, mode, iteration);
            if (mode == M_FLUSH_ALL) {
                MPI_CHK(MPI_Win_flush_all(w->win));
            } else {
                for (int t = 1; t < np; t++) {
                    MPI_Request request;
                    MPI_CHK(MPIX_Win_iflush(t, w->win, &request));
                    MPI_CHK(MPI_Wait(&request, MPI_STATUS_IGNORE));
                }
            }
            tell_targets();
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
            MPI_CHK(MPI_Win_unlock_all(w->win));
            break;
        case M_UNLOCK:
            for (int t = 1; t < np; t++)
                MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w->win));
            put_all(w, source, mode, iteration);
            for (int t = 1; t < np; t++)
                MPI_CHK(MPI_Win_unlock(t, w->win));
            tell_targets();
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
            break;
        case M_UNLOCK_ALL:
            MPI_CHK(MPI_Win_lock_all(0, w->win));
            put_all(w, source, mode, iteration);
            MPI_CHK(MPI_Win_unlock_all(w->win));
            tell_targets();
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
            break;
        case M_FENCE:
            MPI_CHK(MPI_Win_fence(0, w->win));
            put_all(w, source, mode, iteration);
            MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
            break;
        case M_PSCW:
            MPI_CHK(MPI_Win_start(targets, 0, w->win));
            put_all(w, source, mode, iteration);
            MPI_CHK(MPI_Win_complete(w->win));
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
            break;
        }
    } else {
        switch (mode) {
        case M_FLUSH:
        case M_FLUSH_ALL:
        case M_IFLUSH:
        case M_UNLOCK:
        case M_UNLOCK_ALL:
            told(w);
            check_window(w, mode, iteration);
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
            break;
        case M_FENCE:
            MPI_CHK(MPI_Win_fence(0, w->win));
            MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
            check_window(w, mode, iteration);
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
            break;
        case M_PSCW:
            MPI_CHK(MPI_Win_post(origin, 0, w->win));
            MPI_CHK(MPI_Win_wait(w->win));
            check_window(w, mode, iteration);
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
            break;
        }
    }
    MPI_Group_free(&targets);
    MPI_Group_free(&origin);
    MPI_Group_free(&world);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    me = rt_rank();
    np = rt_nprocs();
    int sel[RT_NFLAVORS];
    if (argc < 2) {
        for (int f = 0; f < RT_NFLAVORS; f++)
            sel[f] = f == RT_CREATE || f == RT_ALLOCATE;
    } else {
        CHECK(rt_select_flavors(argc, argv, sel) > 0, "unknown argument");
    }
    long long *source = me == 0 ? malloc((size_t) BYTES * (np > 1 ? np - 1 : 1)) : NULL;
    for (int f = 0; f < RT_NFLAVORS; f++) {
        if (!sel[f])
            continue;
        rt_win_t w;
        rt_win_create(f, me == 0 ? 0 : BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        for (int mode = 0; mode < NMODES; mode++)
            for (int iteration = 0; iteration < ITERATIONS; iteration++)
                run(&w, source, mode, iteration);
        rt_win_free(&w);
    }
    free(source);
    return rt_finalize();
}
