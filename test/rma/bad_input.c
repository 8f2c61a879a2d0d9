/*
 * bad_input: hostile target ranges never touch memory outside a window. Every case is refused at the call with the right error class
 * through the window's MPI_ERRORS_RETURN handler:
 *   target type with a negative extent running below the window start
 *     (resized(MPI_INT, 0, -8), struct {0, +32} resized to -64)  put, get, accumulate
 *                                                                     -> MPI_ERR_RMA_RANGE
 *   struct {0, +32} resized to -64 whose first element runs past the end -> MPI_ERR_RMA_RANGE
 *   displacement 2^61 (x disp_unit 8 wraps to 0), INT64_MAX          -> MPI_ERR_RMA_RANGE
 *   extent +-2^62 x 5 elements ((count-1) * extent wraps)           -> MPI_ERR_RMA_RANGE
 *   MPI_Put_c of 2^60+1 ints (fits in 64 bits, not in the window)     -> MPI_ERR_RMA_RANGE
 *   MPI_Put_c / MPI_Get_c of 2^60+1 elements of 8 bytes (2^63+8 bytes) -> MPI_ERR_COUNT
 *   put/get past the end and before the start (refused before: kept)  -> MPI_ERR_RMA_RANGE
 * Each case runs toward the peer and toward ourselves. After each: the epoch closes,
 * NO byte outside the window changed (MPI_Win_create and dynamic windows sit in one
 * page between canary pages, themselves between PROT_NONE guard pages; allocated
 * windows are checked by their owners, so a write into a neighbour's window shows),
 * a refused get wrote nothing into or around its origin buffer, and a put/get round
 * trip still works. Negative-extent types that stay inside the window are accepted
 * and move the right bytes.
 *
 * Usage: bad_input [create|allocate|shared|dynamic]...   (default: all); 2 processes.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rmatest.h"

#define UNIT 8            /* disp_unit of the non-dynamic windows */
#define WIN_BYTES 4096    /* one page */
#define CANARY 0xA5
#define RBUF 64           /* bytes of a get's origin buffer */

static int me, np, peer;
static rt_win_t w;
static unsigned char *guarded;  /* create/dynamic: [none][canary][window][canary][none] */
static size_t page;

static MPI_Datatype t_int = MPI_INT, t_down, t_struct, t_far_up, t_far_down, t_sparse;

static unsigned char pattern(int rank, size_t i)
{
    return (unsigned char) (rank * 37 + i * 11 + 1);
}

/* The window's memory, between canaries and guard pages (create, dynamic flavors). */
static unsigned char *guarded_window(void)
{
    page = (size_t) sysconf(_SC_PAGESIZE);
    if (page < WIN_BYTES) {
        fprintf(stderr, "bad_input: page size %zu < %d\n", page, WIN_BYTES);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    guarded = mmap(NULL, 5 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (guarded == MAP_FAILED) {
        perror("mmap");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (mprotect(guarded, page, PROT_NONE) || mprotect(guarded + 4 * page, page, PROT_NONE)) {
        perror("mprotect");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(guarded + page, CANARY, 3 * page);
    return guarded + 2 * page;
}

static void window_create(int flavor)
{
    if (flavor == RT_ALLOCATE || flavor == RT_SHARED) {
        rt_win_create(flavor, WIN_BYTES, UNIT, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        guarded = NULL;
        return;
    }
    memset(&w, 0, sizeof(w));
    w.flavor = flavor;
    w.comm = MPI_COMM_WORLD;
    w.size = WIN_BYTES;
    w.nprocs = np;
    w.base = (char *) guarded_window();
    memset(w.base, 0, WIN_BYTES);
    if (flavor == RT_CREATE) {
        w.disp_unit = w.elem = UNIT;
        MPI_CHK(MPI_Win_create(w.base, WIN_BYTES, UNIT, MPI_INFO_NULL, MPI_COMM_WORLD, &w.win));
    } else {
        MPI_Aint addr;
        w.disp_unit = w.elem = 1;
        MPI_CHK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w.win));
        MPI_CHK(MPI_Win_attach(w.win, w.base, WIN_BYTES));
        MPI_CHK(MPI_Get_address(w.base, &addr));
        w.addrs = malloc(sizeof(MPI_Aint) * (size_t) np);
        MPI_CHK(MPI_Allgather(&addr, 1, MPI_AINT, w.addrs, 1, MPI_AINT, MPI_COMM_WORLD));
    }
    MPI_CHK(MPI_Win_set_errhandler(w.win, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void window_free(void)
{
    if (w.flavor == RT_ALLOCATE || w.flavor == RT_SHARED) {
        rt_win_free(&w);
        return;
    }
    if (w.flavor == RT_DYNAMIC)
        MPI_CHK(MPI_Win_detach(w.win, w.base));
    MPI_CHK(MPI_Win_free(&w.win));
    free(w.addrs);
    munmap(guarded, 5 * page);
    guarded = NULL;
}

/* target_disp of byte `offset` (a multiple of UNIT) of rank's window */
static MPI_Aint disp_of(int rank, MPI_Aint offset)
{
    if (w.flavor == RT_DYNAMIC)
        return w.addrs[rank] + offset;
    return offset / UNIT;
}

static void fill_window(void)
{
    rt_lock_self(&w);
    for (size_t i = 0; i < WIN_BYTES; i++)
        w.base[i] = (char) pattern(me, i);
    rt_unlock_self(&w);
}

/* Every rank checks its own window holds its pattern and, where there are some, that
 * its canaries are intact; then repairs, so each case is judged on its own. */
static void check_intact(const char *what, int target)
{
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_lock_self(&w);
    int bad = 0;
    for (size_t i = 0; i < WIN_BYTES && !bad; i++)
        if ((unsigned char) w.base[i] != pattern(me, i)) {
            CHECK(0, "%s %s (target %d): window byte %zu = 0x%02x, expected 0x%02x",
                  rt_flavor_names[w.flavor], what, target, i, (unsigned char) w.base[i],
                  pattern(me, i));
            bad = 1;
        }
    if (guarded) {
        const unsigned char *window = (const unsigned char *) w.base;
        for (const unsigned char *p = guarded + page; p < guarded + 4 * page; p++) {
            if (p >= window && p < window + WIN_BYTES)
                continue;
            if (*p != CANARY) {
                CHECK(0, "%s %s (target %d): canary at window%+ld changed to 0x%02x",
                      rt_flavor_names[w.flavor], what, target, (long) (p - window), *p);
                bad = 1;
                break;
            }
        }
        if (bad)
            memset(guarded + page, CANARY, 3 * page);
    }
    rt_unlock_self(&w);
    if (bad)
        fill_window();
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* A correct put/get round trip toward target, then its pattern is put back. */
static void round_trip(const char *after, int target)
{
    int out[4] = { 0x1111, 0x2222, 0x3333, 0x4444 }, in[4] = { 0 };
    unsigned char restore[sizeof(out)];
    const MPI_Aint at = 96;
    for (size_t i = 0; i < sizeof(restore); i++)
        restore[i] = pattern(target, (size_t) at + i);
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, w.win));
    MPI_CHK(MPI_Put(out, 4, MPI_INT, target, disp_of(target, at), 4, MPI_INT, w.win));
    MPI_CHK(MPI_Win_flush(target, w.win));
    MPI_CHK(MPI_Get(in, 4, MPI_INT, target, disp_of(target, at), 4, MPI_INT, w.win));
    MPI_CHK(MPI_Win_flush(target, w.win));
    MPI_CHK(MPI_Put(restore, sizeof(restore), MPI_BYTE, target, disp_of(target, at),
                    sizeof(restore), MPI_BYTE, w.win));
    MPI_CHK(MPI_Win_unlock(target, w.win));
    CHECK(memcmp(in, out, sizeof(out)) == 0, "%s round trip after %s (target %d): got %x %x %x %x",
          rt_flavor_names[w.flavor], after, target, in[0], in[1], in[2], in[3]);
}

enum { PUT, GET, ACC };

typedef struct {
    const char *what;
    int kind;
    int large;              /* the _c call */
    MPI_Datatype *type;     /* target type */
    MPI_Count count;        /* target count */
    MPI_Count ints;         /* origin count, in MPI_INT */
    int raw;                /* disp is the target_disp itself, else a byte offset */
    MPI_Aint disp;
    int cls;
} bad_case;

#define P60 ((MPI_Count) 1 << 60)
static const bad_case cases[] = {
    /* negative extents (item 1) */
    { "resized(int,0,-8) x3 below the start", PUT, 0, &t_down, 3, 3, 0, 0, MPI_ERR_RMA_RANGE },
    { "resized(int,0,-8) x3 below the start", GET, 0, &t_down, 3, 3, 0, 0, MPI_ERR_RMA_RANGE },
    { "resized(int,0,-8) x3 below the start", ACC, 0, &t_down, 3, 3, 0, 0, MPI_ERR_RMA_RANGE },
    { "struct{0,+32} resized -64 x2 below the start", PUT, 0, &t_struct, 2, 4, 0, 0,
      MPI_ERR_RMA_RANGE },
    { "struct{0,+32} resized -64 x2 below the start", GET, 0, &t_struct, 2, 4, 0, 0,
      MPI_ERR_RMA_RANGE },
    { "struct{0,+32} resized -64 x2 from byte 40", PUT, 0, &t_struct, 2, 4, 0, 40,
      MPI_ERR_RMA_RANGE },
    { "struct{0,+32} resized -64 x2 from byte 40", GET, 0, &t_struct, 2, 4, 0, 40,
      MPI_ERR_RMA_RANGE },
    { "struct{0,+32} resized -64 x2 from byte 40", ACC, 0, &t_struct, 2, 4, 0, 40,
      MPI_ERR_RMA_RANGE },
    { "struct{0,+32} resized -64 x2 past the end", PUT, 0, &t_struct, 2, 4, 0, WIN_BYTES - 8,
      MPI_ERR_RMA_RANGE },
    { "struct{0,+32} resized -64 x2 past the end", GET, 0, &t_struct, 2, 4, 0, WIN_BYTES - 8,
      MPI_ERR_RMA_RANGE },
    /* overflowing displacements, extents and counts (item 2) */
    { "displacement 2^61", PUT, 0, &t_int, 1, 1, 1, (MPI_Aint) 1 << 61, MPI_ERR_RMA_RANGE },
    { "displacement 2^61", GET, 0, &t_int, 1, 1, 1, (MPI_Aint) 1 << 61, MPI_ERR_RMA_RANGE },
    { "displacement INT64_MAX", PUT, 0, &t_int, 2, 2, 1, INT64_MAX, MPI_ERR_RMA_RANGE },
    { "resized(int,0,2^62) x5", PUT, 0, &t_far_up, 5, 5, 0, 0, MPI_ERR_RMA_RANGE },
    { "resized(int,0,2^62) x5", GET, 0, &t_far_up, 5, 5, 0, 0, MPI_ERR_RMA_RANGE },
    { "resized(int,0,-2^62) x5", PUT, 0, &t_far_down, 5, 5, 0, WIN_BYTES - 8, MPI_ERR_RMA_RANGE },
    { "2^60+1 ints", PUT, 1, &t_int, P60 + 1, P60 + 1, 0, 0, MPI_ERR_RMA_RANGE },
    { "2^60+1 x 8 bytes (extent 16)", PUT, 1, &t_sparse, P60 + 1, 2 * (P60 + 1), 0, 0,
      MPI_ERR_COUNT },
    { "2^60+1 x 8 bytes (extent 16)", GET, 1, &t_sparse, P60 + 1, 2 * (P60 + 1), 0, 0,
      MPI_ERR_COUNT },
    /* plain out of range: refused before, kept so */
    { "4 ints past the end", PUT, 0, &t_int, 4, 4, 0, WIN_BYTES - 8, MPI_ERR_RMA_RANGE },
    { "4 ints past the end", GET, 0, &t_int, 4, 4, 0, WIN_BYTES - 8, MPI_ERR_RMA_RANGE },
    { "1 int before the start", PUT, 0, &t_int, 1, 1, 0, -UNIT, MPI_ERR_RMA_RANGE },
    { "1 int before the start", GET, 0, &t_int, 1, 1, 0, -UNIT, MPI_ERR_RMA_RANGE },
};

static void run_case(const bad_case *c, int target)
{
    static const char *const calls[3][2] = { { "MPI_Put", "MPI_Put_c" },
                                              { "MPI_Get", "MPI_Get_c" },
                                              { "MPI_Accumulate", "MPI_Accumulate_c" } };
    int src[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    unsigned char result[3 * RBUF];   /* the get's buffer is the middle third */
    char what[160];
    int rc;
    const MPI_Aint disp = c->raw ? c->disp : disp_of(target, c->disp);
    snprintf(what, sizeof(what), "%s %s toward %s", calls[c->kind][c->large], c->what,
             target == me ? "self" : "peer");
    memset(result, CANARY, sizeof(result));

    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, w.win));
    switch (c->kind) {
    case PUT:
        rc = c->large ? MPI_Put_c(src, c->ints, MPI_INT, target, disp, c->count, *c->type, w.win)
                      : MPI_Put(src, (int) c->ints, MPI_INT, target, disp, (int) c->count,
                                *c->type, w.win);
        break;
    case GET:
        rc = c->large ? MPI_Get_c(result + RBUF, c->ints, MPI_INT, target, disp, c->count,
                                  *c->type, w.win)
                      : MPI_Get(result + RBUF, (int) c->ints, MPI_INT, target, disp,
                                (int) c->count, *c->type, w.win);
        break;
    default:
        rc = MPI_Accumulate(src, (int) c->ints, MPI_INT, target, disp, (int) c->count, *c->type,
                            MPI_SUM, w.win);
        break;
    }
    rt_expect_win_error(&w, rc, c->cls, calls[c->kind][c->large], what);
    rc = MPI_Win_unlock(target, w.win);
    CHECK(rc == MPI_SUCCESS, "%s %s: unlock failed (%d)", rt_flavor_names[w.flavor], what, rc);
    for (size_t i = 0; i < sizeof(result); i++)
        if (result[i] != CANARY) {
            CHECK(0, "%s %s: origin buffer byte %ld changed", rt_flavor_names[w.flavor], what,
                  (long) i - RBUF);
            break;
        }
    check_intact(what, target);
    round_trip(what, target);
    check_intact(what, target);
}

/* Negative extents that stay inside the window are fine, and move the right bytes. */
static void run_valid(int target)
{
    int out[4] = { 101, 102, 103, 104 }, in[4] = { 0 };
    int at[4];
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, w.win));
    /* resized(int,0,-8) x3 from byte 16: ints at 16, 8, 0 */
    MPI_CHK(MPI_Put(out, 3, MPI_INT, target, disp_of(target, 16), 3, t_down, w.win));
    MPI_CHK(MPI_Win_flush(target, w.win));
    MPI_CHK(MPI_Get(in, 3, MPI_INT, target, disp_of(target, 16), 3, t_down, w.win));
    MPI_CHK(MPI_Win_flush(target, w.win));
    for (int k = 0; k < 3; k++)
        CHECK(in[k] == out[k], "%s resized(int,0,-8) round trip: %d, expected %d",
              rt_flavor_names[w.flavor], in[k], out[k]);
    MPI_CHK(MPI_Get(at, 1, MPI_INT, target, disp_of(target, 0), 1, MPI_INT, w.win));
    MPI_CHK(MPI_Win_flush(target, w.win));
    CHECK(at[0] == 103, "%s resized(int,0,-8): byte 0 holds %d, expected 103",
          rt_flavor_names[w.flavor], at[0]);
    /* struct{0,+32} resized -64 x2 from byte 128: ints at 128, 160, 64, 96 */
    MPI_CHK(MPI_Put(out, 4, MPI_INT, target, disp_of(target, 128), 2, t_struct, w.win));
    MPI_CHK(MPI_Win_flush(target, w.win));
    const MPI_Aint where[4] = { 128, 160, 64, 96 };
    for (int k = 0; k < 4; k++)
        MPI_CHK(MPI_Get(&at[k], 1, MPI_INT, target, disp_of(target, where[k]), 1, MPI_INT,
                        w.win));
    MPI_CHK(MPI_Win_flush(target, w.win));
    for (int k = 0; k < 4; k++)
        CHECK(at[k] == out[k], "%s struct resized -64: byte %ld holds %d, expected %d",
              rt_flavor_names[w.flavor], (long) where[k], at[k], out[k]);
    MPI_CHK(MPI_Win_unlock(target, w.win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    /* the target puts its pattern back */
    rt_lock_self(&w);
    for (size_t i = 0; i < 200; i++)
        w.base[i] = (char) pattern(me, i);
    rt_unlock_self(&w);
    check_intact("valid negative extents", target);
}

static void make_types(void)
{
    MPI_Datatype tmp;
    MPI_CHK(MPI_Type_create_resized(MPI_INT, 0, -8, &t_down));
    {
        int blocks[2] = { 1, 1 };
        MPI_Aint displs[2] = { 0, 32 };
        MPI_Datatype types[2] = { MPI_INT, MPI_INT };
        MPI_CHK(MPI_Type_create_struct(2, blocks, displs, types, &tmp));
        MPI_CHK(MPI_Type_create_resized(tmp, 0, -64, &t_struct));
        MPI_CHK(MPI_Type_free(&tmp));
    }
    MPI_CHK(MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint) 1 << 62, &t_far_up));
    MPI_CHK(MPI_Type_create_resized(MPI_INT, 0, -((MPI_Aint) 1 << 62), &t_far_down));
    MPI_CHK(MPI_Type_vector(2, 1, 2, MPI_INT, &tmp));
    MPI_CHK(MPI_Type_create_resized(tmp, 0, 16, &t_sparse));
    MPI_CHK(MPI_Type_free(&tmp));
    MPI_Datatype *all[] = { &t_down, &t_struct, &t_far_up, &t_far_down, &t_sparse };
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        MPI_CHK(MPI_Type_commit(all[i]));
}

int main(int argc, char **argv)
{
    int sel[RT_NFLAVORS];
    rt_init_world(&argc, &argv, &me, &np);
    rt_max_print = 100;
    peer = (me + 1) % np;
    CHECK(rt_select_flavors(argc, argv, sel) > 0, "no flavor selected");
    make_types();

    for (int f = 0; f < RT_NFLAVORS; f++) {
        if (!sel[f])
            continue;
        window_create(f);
        fill_window();
        check_intact("window creation", me);
        for (int pass = 0; pass < 2; pass++) {
            const int target = pass == 0 ? peer : me;
            run_valid(target);
            for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                run_case(&cases[i], target);
        }
        window_free();
    }
    MPI_Type_free(&t_down);
    MPI_Type_free(&t_struct);
    MPI_Type_free(&t_far_up);
    MPI_Type_free(&t_far_down);
    MPI_Type_free(&t_sparse);
    return rt_finalize();
}
