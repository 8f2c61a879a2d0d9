/*
 * compat: MPICH-compatible edge cases users rely on, and invalid calls refused
 *, on the window flavor given as argument (default: all four).
 *   MPI_CHAR with arithmetic ops in accumulate, get_accumulate, fetch_and_op: a
 *     signed 8-bit integer (MPI_SIGNED_CHAR / MPI_UNSIGNED_CHAR alike)
 *   lock / unlock / flush / flush_local toward MPI_PROC_NULL, blocking and MPIX_
 *     nonblocking (an already complete request), inside and outside epochs; every
 *     RMA call toward MPI_PROC_NULL is a no-op; a request form with a null request
 *     pointer -> MPI_ERR_REQUEST even toward MPI_PROC_NULL
 *   MPI_Win_shared_query of a rank with 0 bytes: size 0, NULL; of MPI_PROC_NULL:
 *     the first rank with memory (shared flavor)
 *   MPI_Win_get_info reports every MPI-4.0 window key with the value in effect
 *   window creation on MPI_COMM_NULL -> MPI_ERR_COMM; creation errors go to the
 *     communicator's error handler
 *   RMA calls that move zero bytes are no-ops whatever the other side's type (a
 *     null datatype or op is still refused)
 *   MPI_Accumulate / MPI_Raccumulate with MPI_NO_OP -> MPI_ERR_OP; MPI_Compare_and_swap
 *     on floating point, complex, pair or derived types -> MPI_ERR_TYPE
 *   a freed window: MPI_Win_free again and every call on it (also toward
 *     MPI_PROC_NULL) -> MPI_ERR_WIN through MPI_COMM_WORLD's error handler
 *   accumulates with different basic types on the origin, target or result side
 *     (MPI_INT with MPI_FLOAT) -> MPI_ERR_TYPE naming the cause; derived types of one
 *     basic type, types MPICH treats alike (MPI_INT / MPI_INT32_T) and an ignored
 *     MPI_NO_OP origin still work; MPI_Fetch_and_op on a derived type -> MPI_ERR_TYPE;
 *     Fortran's MPI_CHARACTER with arithmetic ops is a signed 8-bit integer
 *   an origin or result type whose count * extent leaves 64 bits -> MPI_ERR_COUNT
 *     before any data moves; an attach whose base + size wraps -> MPI_ERR_ARG
 * Target memory is checked after each case. 2 processes: rank 0 is the origin, rank 1
 * the target.
 */
#include "rmatest.h"

#include <stdint.h>

#define WIN_BYTES 64

static int me, np;
static rt_win_t w;
static int flavor;

/* rank 1's window memory after the initial fill: byte k = k + 1 */
static void fill_target(void)
{
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 1) {
        rt_lock_self(&w);
        for (int k = 0; k < WIN_BYTES; k++)
            w.base[k] = (char) (k + 1);
        rt_unlock_self(&w);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* rank 1 checks its memory: bytes [0, n) as in `expect`, the rest as filled */
static void check_target(const char *what, const signed char *expect, int n)
{
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 1) {
        rt_lock_self(&w);
        for (int k = 0; k < WIN_BYTES; k++) {
            int want = k < n ? expect[k] : (signed char) (k + 1);
            CHECK((signed char) w.base[k] == want, "%s %s: target byte %d = %d, expected %d",
                  rt_flavor_names[flavor], what, k, (signed char) w.base[k], want);
        }
        rt_unlock_self(&w);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static MPI_Aint disp(MPI_Aint k)
{
    return rt_disp(&w, 1, k);
}

/* ---------------------------------------------------------------- MPI_CHAR ops */
static void char_ops(void)
{
    fill_target();
    if (me == 0) {
        signed char add[4] = { 100, -5, 1, 2 }, got[4] = { 0 }, one = 3, old = 0;
        signed char maxv[2] = { -7, 5 };
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win));
        /* bytes 0..3 hold 1..4: sum wraps as a signed 8-bit value (1 + 100 = 101) */
        MPI_CHK(MPI_Accumulate(add, 4, MPI_CHAR, 1, disp(0), 4, MPI_CHAR, MPI_SUM, w.win));
        MPI_CHK(MPI_Accumulate(add, 1, MPI_CHAR, 1, disp(0), 1, MPI_CHAR, MPI_SUM, w.win));
        MPI_CHK(MPI_Win_flush(1, w.win));
        /* byte 0 is 201 -> -55 as signed char; get_accumulate returns the old values */
        MPI_CHK(MPI_Get_accumulate(add, 2, MPI_CHAR, got, 2, MPI_CHAR, 1, disp(0), 2, MPI_CHAR,
                                   MPI_SUM, w.win));
        MPI_CHK(MPI_Win_flush(1, w.win));
        CHECK(got[0] == -55 && got[1] == -3, "%s MPI_CHAR get_accumulate fetched %d %d, "
              "expected -55 -3", rt_flavor_names[flavor], got[0], got[1]);
        /* signed max: max(-7, 5) = 5 stays 5; max(5, 6) = 6 (byte 4 = 5, byte 5 = 6) */
        MPI_CHK(MPI_Accumulate(maxv, 2, MPI_CHAR, 1, disp(4), 2, MPI_CHAR, MPI_MAX, w.win));
        /* max(-7, 7) for byte 6 if it were unsigned would pick -7 (249) */
        MPI_CHK(MPI_Accumulate(maxv, 1, MPI_CHAR, 1, disp(6), 1, MPI_CHAR, MPI_MAX, w.win));
        MPI_CHK(MPI_Fetch_and_op(&one, &old, MPI_CHAR, 1, disp(7), MPI_SUM, w.win));
        MPI_CHK(MPI_Win_flush(1, w.win));
        CHECK(old == 8, "%s MPI_CHAR fetch_and_op fetched %d, expected 8",
              rt_flavor_names[flavor], old);
        /* the explicitly signed and unsigned char types work as before */
        MPI_CHK(MPI_Accumulate(&one, 1, MPI_SIGNED_CHAR, 1, disp(8), 1, MPI_SIGNED_CHAR,
                               MPI_SUM, w.win));
        MPI_CHK(MPI_Accumulate(&one, 1, MPI_UNSIGNED_CHAR, 1, disp(9), 1, MPI_UNSIGNED_CHAR,
                               MPI_SUM, w.win));
        MPI_CHK(MPI_Accumulate(&one, 1, MPI_CHAR, 1, disp(10), 1, MPI_CHAR, MPI_BXOR, w.win));
        MPI_CHK(MPI_Win_unlock(1, w.win));
    }
    /* 1+100+100 = 201 -> -55, +100 -> 45; 2-5-5 = -8; 3+1; 4+2; max(5,-7); max(6,5);
       max(7,-7); 8+3; 9+3; 10+3; 11^3 = 8 */
    const signed char expect[11] = { 45, -8, 4, 6, 5, 6, 7, 11, 12, 13, 8 };
    check_target("MPI_CHAR arithmetic", expect, 11);
}

/* ---------------------------------------------------------------- MPI_PROC_NULL */
static void expect_complete(MPI_Request *req, const char *what)
{
    int flag = 0;
    MPI_CHK(MPI_Test(req, &flag, MPI_STATUS_IGNORE));
    CHECK(flag, "%s %s: the request toward MPI_PROC_NULL is not complete at once",
          rt_flavor_names[flavor], what);
    if (!flag)
        MPI_CHK(MPI_Wait(req, MPI_STATUS_IGNORE));
}

static void proc_null_calls(const char *when)
{
    int v = 7, r = -1, c = 0;
    MPI_Request req;
    char what[128];
    MPI_CHK(MPI_Put(&v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, w.win));
    MPI_CHK(MPI_Get(&r, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, w.win));
    MPI_CHK(MPI_Accumulate(&v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, MPI_SUM, w.win));
    MPI_CHK(MPI_Get_accumulate(&v, 1, MPI_INT, &r, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT,
                               MPI_SUM, w.win));
    MPI_CHK(MPI_Fetch_and_op(&v, &r, MPI_INT, MPI_PROC_NULL, 0, MPI_SUM, w.win));
    MPI_CHK(MPI_Compare_and_swap(&v, &c, &r, MPI_INT, MPI_PROC_NULL, 0, w.win));
    CHECK(r == -1, "%s %s: a fetch from MPI_PROC_NULL wrote the result buffer (%d)",
          rt_flavor_names[flavor], when, r);
    snprintf(what, sizeof(what), "MPI_Rput %s", when);
    MPI_CHK(MPI_Rput(&v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, w.win, &req));
    expect_complete(&req, what);
}

static void proc_null(void)
{
    MPI_Request req;
    fill_target();
    if (me == 0) {
        /* outside any epoch */
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, MPI_PROC_NULL, 0, w.win));
        proc_null_calls("in a lock epoch toward MPI_PROC_NULL");
        MPI_CHK(MPI_Win_flush(MPI_PROC_NULL, w.win));
        MPI_CHK(MPI_Win_flush_local(MPI_PROC_NULL, w.win));
        MPI_CHK(MPI_Win_unlock(MPI_PROC_NULL, w.win));
        MPI_CHK(MPI_Win_unlock(MPI_PROC_NULL, w.win));   /* never "locked": still a no-op */
        MPI_CHK(MPI_Win_flush(MPI_PROC_NULL, w.win));    /* not flush_all: no epoch needed */
        proc_null_calls("outside any epoch");
        MPI_CHK(MPIX_Win_ilock(MPI_LOCK_SHARED, MPI_PROC_NULL, 0, w.win, &req));
        expect_complete(&req, "MPIX_Win_ilock");
        MPI_CHK(MPIX_Win_iflush(MPI_PROC_NULL, w.win, &req));
        expect_complete(&req, "MPIX_Win_iflush");
        MPI_CHK(MPIX_Win_iflush_local(MPI_PROC_NULL, w.win, &req));
        expect_complete(&req, "MPIX_Win_iflush_local");
        MPI_CHK(MPIX_Win_iunlock(MPI_PROC_NULL, w.win, &req));
        expect_complete(&req, "MPIX_Win_iunlock");
        {   /* a request form still needs its request pointer */
            int v = 7;
            rt_expect_win_error(&w, MPI_Rput(&v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, w.win,
                                             NULL),
                                MPI_ERR_REQUEST, "MPI_Rput", "MPI_PROC_NULL, null request");
            rt_expect_win_error(&w, MPIX_Win_ilock(MPI_LOCK_SHARED, MPI_PROC_NULL, 0, w.win, NULL),
                                MPI_ERR_REQUEST, "MPIX_Win_ilock", "MPI_PROC_NULL, null request");
        }
        /* inside a real epoch toward rank 1 */
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w.win));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, MPI_PROC_NULL, 0, w.win));
        proc_null_calls("inside a lock epoch toward rank 1");
        MPI_CHK(MPI_Win_flush(MPI_PROC_NULL, w.win));
        MPI_CHK(MPI_Win_unlock(MPI_PROC_NULL, w.win));
        MPI_CHK(MPI_Win_unlock(1, w.win));
        MPI_CHK(MPI_Win_lock_all(0, w.win));
        proc_null_calls("inside lock_all");
        MPI_CHK(MPI_Win_flush(MPI_PROC_NULL, w.win));
        MPI_CHK(MPI_Win_flush_local(MPI_PROC_NULL, w.win));
        MPI_CHK(MPI_Win_unlock_all(w.win));
    }
    check_target("MPI_PROC_NULL calls", NULL, 0);
}

/* ---------------------------------------------------------------- zero bytes */
static void zero_bytes(void)
{
    fill_target();
    if (me == 0) {
        int in[2] = { 5, 6 };
        double out[2] = { -1, -1 };
        char res[2] = { 9, 9 };
        MPI_Datatype empty;
        MPI_Request req;
        MPI_CHK(MPI_Type_contiguous(0, MPI_INT, &empty));
        MPI_CHK(MPI_Type_commit(&empty));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w.win));
        MPI_CHK(MPI_Accumulate(in, 0, MPI_INT, 1, disp(0), 0, MPI_DOUBLE, MPI_SUM, w.win));
        MPI_CHK(MPI_Accumulate(in, 0, MPI_INT, 1, disp(0), 0, MPI_CHAR, MPI_REPLACE, w.win));
        MPI_CHK(MPI_Accumulate(in, 1, MPI_INT, 1, disp(0), 0, MPI_DOUBLE, MPI_SUM, w.win));
        MPI_CHK(MPI_Accumulate(in, 2, MPI_INT, 1, disp(0), 1, empty, MPI_SUM, w.win));
        MPI_CHK(MPI_Accumulate(in, 1, empty, 1, disp(0), 2, MPI_INT, MPI_SUM, w.win));
        MPI_CHK(MPI_Get_accumulate(in, 0, MPI_INT, res, 0, MPI_CHAR, 1, disp(0), 0, MPI_DOUBLE,
                                   MPI_SUM, w.win));
        MPI_CHK(MPI_Get_accumulate(in, 0, MPI_INT, res, 0, MPI_CHAR, 1, disp(0), 0, MPI_DOUBLE,
                                   MPI_NO_OP, w.win));
        MPI_CHK(MPI_Put(in, 0, MPI_INT, 1, disp(0), 0, MPI_DOUBLE, w.win));
        MPI_CHK(MPI_Get(out, 0, MPI_DOUBLE, 1, disp(0), 0, MPI_INT, w.win));
        MPI_CHK(MPI_Raccumulate(in, 0, MPI_INT, 1, disp(0), 0, MPI_FLOAT, MPI_MAX, w.win, &req));
        MPI_CHK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        /* the handles are still checked */
        rt_expect_win_error(&w, MPI_Accumulate(in, 0, MPI_DATATYPE_NULL, 1, disp(0), 0, MPI_INT,
                                               MPI_SUM, w.win),
                            MPI_ERR_TYPE, "MPI_Accumulate", "zero count, null origin type");
        rt_expect_win_error(&w, MPI_Put(in, 0, MPI_INT, 1, disp(0), 0, MPI_DATATYPE_NULL, w.win),
                            MPI_ERR_TYPE, "MPI_Put", "zero count, null target type");
        rt_expect_win_error(&w, MPI_Accumulate(in, 0, MPI_INT, 1, disp(0), 0, MPI_INT,
                                               MPI_OP_NULL, w.win),
                            MPI_ERR_OP, "MPI_Accumulate", "zero count, MPI_OP_NULL");
        MPI_CHK(MPI_Win_unlock(1, w.win));
        MPI_CHK(MPI_Type_free(&empty));
        CHECK(out[0] == -1 && out[1] == -1 && res[0] == 9 && res[1] == 9,
              "%s zero-byte calls wrote their result buffers", rt_flavor_names[flavor]);
    }
    check_target("zero-byte calls", NULL, 0);
}

/* ---------------------------------------------------------------- invalid calls */
static void invalid_ops(void)
{
    fill_target();
    if (me == 0) {
        int v = 1, r = 0;
        double d = 1.0, dc = 0.0, dr = 0.0;
        float f = 1.0f, fc = 0.0f, fr = 0.0f;
        float cx[2] = { 1, 2 }, cxc[2] = { 0, 0 }, cxr[2];
        int pair[2] = { 1, 2 }, pairc[2] = { 0, 0 }, pairr[2];
        MPI_Datatype derived;
        MPI_Request req = MPI_REQUEST_NULL;
        MPI_CHK(MPI_Type_contiguous(1, MPI_INT, &derived));
        MPI_CHK(MPI_Type_commit(&derived));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win));
        rt_expect_win_error(&w, MPI_Accumulate(&v, 1, MPI_INT, 1, disp(0), 1, MPI_INT,
                                               MPI_NO_OP, w.win),
                            MPI_ERR_OP, "MPI_Accumulate", "MPI_NO_OP");
        rt_expect_win_error(&w, MPI_Raccumulate(&v, 1, MPI_INT, 1, disp(0), 1, MPI_INT,
                                                MPI_NO_OP, w.win, &req),
                            MPI_ERR_OP, "MPI_Raccumulate", "MPI_NO_OP");
        rt_expect_win_error(&w, MPI_Compare_and_swap(&d, &dc, &dr, MPI_DOUBLE, 1, disp(8), w.win),
                            MPI_ERR_TYPE, "MPI_Compare_and_swap", "MPI_DOUBLE");
        rt_expect_win_error(&w, MPI_Compare_and_swap(&f, &fc, &fr, MPI_FLOAT, 1, disp(8), w.win),
                            MPI_ERR_TYPE, "MPI_Compare_and_swap", "MPI_FLOAT");
        rt_expect_win_error(&w, MPI_Compare_and_swap(cx, cxc, cxr, MPI_C_FLOAT_COMPLEX, 1,
                                                     disp(8), w.win),
                            MPI_ERR_TYPE, "MPI_Compare_and_swap", "MPI_C_FLOAT_COMPLEX");
        rt_expect_win_error(&w, MPI_Compare_and_swap(pair, pairc, pairr, MPI_2INT, 1, disp(8),
                                                     w.win),
                            MPI_ERR_TYPE, "MPI_Compare_and_swap", "MPI_2INT");
        rt_expect_win_error(&w, MPI_Compare_and_swap(&v, &r, &r, derived, 1, disp(8), w.win),
                            MPI_ERR_TYPE, "MPI_Compare_and_swap", "a derived type");
        /* the window still works, and the fetching calls may use MPI_NO_OP; compare and
           swap on the integer, logical and byte types MPI allows */
        {
            signed char cv = 42, cc = 1, cr = 0;     /* byte 0 holds 1 */
            unsigned char bv = 0x55, bc = 2, br = 0; /* byte 1 holds 2 */
            int64_t lv = 77, lc = 0, lr = -1;
            MPI_Aint av = 5, ac = 0, ar = -1;
            char fetched[2] = { 0, 0 };
            MPI_CHK(MPI_Compare_and_swap(&cv, &cc, &cr, MPI_CHAR, 1, disp(0), w.win));
            MPI_CHK(MPI_Compare_and_swap(&bv, &bc, &br, MPI_BYTE, 1, disp(1), w.win));
            MPI_CHK(MPI_Get_accumulate(NULL, 0, MPI_CHAR, fetched, 2, MPI_CHAR, 1, disp(2), 2,
                                       MPI_CHAR, MPI_NO_OP, w.win));
            MPI_CHK(MPI_Win_flush(1, w.win));
            CHECK(cr == 1 && br == 2 && fetched[0] == 3 && fetched[1] == 4,
                  "%s compare_and_swap / no_op fetched %d %d %d %d, expected 1 2 3 4",
                  rt_flavor_names[flavor], cr, br, fetched[0], fetched[1]);
            /* 8-byte integer types at bytes 16.. and 24.. (filled 17..24, 25..32): no match */
            MPI_CHK(MPI_Compare_and_swap(&lv, &lc, &lr, MPI_INT64_T, 1, disp(16), w.win));
            MPI_CHK(MPI_Compare_and_swap(&av, &ac, &ar, MPI_AINT, 1, disp(24), w.win));
            MPI_CHK(MPI_Win_flush(1, w.win));
            CHECK(lr != 0 && ar != 0, "%s compare_and_swap on 8-byte integers matched zero",
                  rt_flavor_names[flavor]);
        }
        MPI_CHK(MPI_Win_unlock(1, w.win));
        MPI_CHK(MPI_Type_free(&derived));
    }
    const signed char expect[2] = { 42, 0x55 };
    check_target("invalid accumulates and compare_and_swap", expect, 2);
}

/* ---------------------------------------------------------------- window info */
static void expect_info(MPI_Win win, const char *key, const char *value, const char *what)
{
    char context[64];
    snprintf(context, sizeof context, "%s %s", rt_flavor_names[flavor], what);
    rt_expect_info(win, key, value, context);
}

static void window_info(void)
{
    /* defaults, on the window made without info */
    expect_info(w.win, "no_locks", "false", "defaults");
    expect_info(w.win, "accumulate_ordering", "rar,raw,war,waw", "defaults");
    expect_info(w.win, "accumulate_ops", "same_op_no_op", "defaults");
    expect_info(w.win, "same_size", "false", "defaults");
    expect_info(w.win, "same_disp_unit", "false", "defaults");
    expect_info(w.win, "alloc_shared_noncontig", "false", "defaults");
    expect_info(w.win, "mpi_accumulate_granularity", "0", "defaults");

    /* given values are reported back */
    MPI_Info info;
    rt_win_t v;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "same_size", "true"));
    MPI_CHK(MPI_Info_set(info, "same_disp_unit", "true"));
    MPI_CHK(MPI_Info_set(info, "accumulate_ops", "same_op"));
    MPI_CHK(MPI_Info_set(info, "accumulate_ordering", "none"));
    MPI_CHK(MPI_Info_set(info, "mpi_accumulate_granularity", "8"));
    rt_win_create(flavor, WIN_BYTES, 1, info, MPI_COMM_WORLD, &v);
    MPI_CHK(MPI_Info_free(&info));
    expect_info(v.win, "same_size", "true", "given");
    expect_info(v.win, "same_disp_unit", "true", "given");
    expect_info(v.win, "accumulate_ops", "same_op", "given");
    expect_info(v.win, "accumulate_ordering", "none", "given");
    expect_info(v.win, "mpi_accumulate_granularity", "8", "given");
    expect_info(v.win, "no_locks", "false", "given");
    expect_info(v.win, "alloc_shared_noncontig", "false", "given");
    rt_win_free(&v);
}

/* ---------------------------------------------------------------- shared_query */
static void shared_query(void)
{
    MPI_Win win;
    char *base = NULL, *q = (char *) 1, *q1 = NULL;
    MPI_Aint size = -1, size1 = -1;
    int unit = 0;
    /* rank 0 allocates nothing, rank 1 16 bytes */
    MPI_CHK(MPI_Win_allocate_shared(me == 0 ? 0 : 16, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                                    &win));
    MPI_CHK(MPI_Win_shared_query(win, 0, &size, &unit, &q));
    CHECK(size == 0 && q == NULL, "shared_query of a 0-byte rank: size %ld base %p, expected 0 "
          "and NULL", (long) size, (void *) q);
    MPI_CHK(MPI_Win_shared_query(win, 1, &size1, &unit, &q1));
    CHECK(size1 == 16 && q1 != NULL && unit == 4, "shared_query of rank 1: size %ld base %p "
          "unit %d", (long) size1, (void *) q1, unit);
    if (me == 1)
        CHECK(q1 == base, "shared_query of myself: %p, my base %p", (void *) q1, (void *) base);
    MPI_CHK(MPI_Win_shared_query(win, MPI_PROC_NULL, &size, &unit, &q));
    CHECK(size == 16 && q == q1, "shared_query of MPI_PROC_NULL: size %ld base %p, expected "
          "rank 1's (16, %p)", (long) size, (void *) q, (void *) q1);
    MPI_CHK(MPI_Win_free(&win));

    MPI_CHK(MPI_Win_allocate_shared(0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    q = (char *) 1;
    MPI_CHK(MPI_Win_shared_query(win, MPI_PROC_NULL, &size, &unit, &q));
    CHECK(size == 0 && q == NULL, "shared_query of MPI_PROC_NULL, all ranks empty: size %ld "
          "base %p", (long) size, (void *) q);
    q = (char *) 1;
    MPI_CHK(MPI_Win_shared_query(win, 1, &size, &unit, &q));
    CHECK(size == 0 && q == NULL, "shared_query of an empty rank 1: size %ld base %p",
          (long) size, (void *) q);
    MPI_CHK(MPI_Win_free(&win));
}

/* ---------------------------------------------------------------- creation errors */
static int handler_calls = 0, handler_class = -1;
static MPI_Comm handler_comm = MPI_COMM_NULL;

static void counting_handler(MPI_Comm *comm, int *code, ...)
{
    handler_calls++;
    handler_comm = *comm;
    MPI_Error_class(*code, &handler_class);
}

static int create_on(MPI_Comm comm, MPI_Aint size, MPI_Win *win)
{
    static char memory[WIN_BYTES];
    void *base;
    switch (flavor) {
    case RT_CREATE:
        return MPI_Win_create(memory, size, 1, MPI_INFO_NULL, comm, win);
    case RT_ALLOCATE:
        return MPI_Win_allocate(size, 1, MPI_INFO_NULL, comm, &base, win);
    case RT_SHARED:
        return MPI_Win_allocate_shared(size, 1, MPI_INFO_NULL, comm, &base, win);
    default:
        return MPI_Win_create_dynamic(MPI_INFO_NULL, comm, win);
    }
}

static const char *const create_calls[RT_NFLAVORS] = { "MPI_Win_create", "MPI_Win_allocate",
                                                        "MPI_Win_allocate_shared",
                                                        "MPI_Win_create_dynamic" };

static void creation_errors(void)
{
    MPI_Win win = MPI_WIN_NULL;
    rt_expect_win_error(&w, create_on(MPI_COMM_NULL, WIN_BYTES, &win), MPI_ERR_COMM,
                        create_calls[flavor], "on MPI_COMM_NULL");
    CHECK(win == MPI_WIN_NULL, "%s: a window was made on MPI_COMM_NULL", rt_flavor_names[flavor]);

    if (flavor == RT_DYNAMIC)
        return; /* no size argument to get wrong */
    /* a bad size on a communicator with its own handler: that handler is called */
    MPI_Comm comm;
    MPI_Errhandler handler;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    MPI_CHK(MPI_Comm_create_errhandler(counting_handler, &handler));
    MPI_CHK(MPI_Comm_set_errhandler(comm, handler));
    handler_calls = 0;
    int rc = create_on(comm, -1, &win);
    CHECK(rc != MPI_SUCCESS, "%s: a negative size was accepted", rt_flavor_names[flavor]);
    CHECK(handler_calls == 1 && handler_comm == comm && handler_class == MPI_ERR_ARG,
          "%s: negative size: the communicator's handler ran %d times (class %d), expected "
          "once with MPI_ERR_ARG", rt_flavor_names[flavor], handler_calls, handler_class);
    MPI_CHK(MPI_Errhandler_free(&handler));
    MPI_CHK(MPI_Comm_free(&comm));
}

/* ---------------------------------------------------------------- freed window */
static void freed_window(void)
{
    rt_win_t v;
    MPI_Win freed, null_win = MPI_WIN_NULL;
    MPI_Info info;
    MPI_Request req;
    void *attr;
    int flag, value = 1;
    rt_win_create(flavor, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &v);
    freed = v.win;
    rt_win_free(&v);
    rt_expect_win_error(&v, MPI_Win_free(&freed), MPI_ERR_WIN, "MPI_Win_free", "freed twice");
    rt_expect_win_error(&v, MPI_Win_free(&null_win), MPI_ERR_WIN, "MPI_Win_free",
                        "MPI_WIN_NULL");
    rt_expect_win_error(&v, MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, freed), MPI_ERR_WIN,
                        "MPI_Win_lock", "freed window");
    rt_expect_win_error(&v, MPI_Win_lock(MPI_LOCK_SHARED, MPI_PROC_NULL, 0, freed), MPI_ERR_WIN,
                        "MPI_Win_lock", "freed window, MPI_PROC_NULL");
    rt_expect_win_error(&v, MPI_Put(&value, 1, MPI_INT, 0, 0, 1, MPI_INT, freed), MPI_ERR_WIN,
                        "MPI_Put", "freed window");
    rt_expect_win_error(&v, MPI_Put(&value, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, freed),
                        MPI_ERR_WIN, "MPI_Put", "freed window, MPI_PROC_NULL");
    rt_expect_win_error(&v, MPIX_Win_iflush(MPI_PROC_NULL, freed, &req), MPI_ERR_WIN,
                        "MPIX_Win_iflush", "freed window, MPI_PROC_NULL");
    rt_expect_win_error(&v, MPI_Win_fence(0, freed), MPI_ERR_WIN, "MPI_Win_fence",
                        "freed window");
    rt_expect_win_error(&v, MPIX_Win_iflush(0, freed, NULL), MPI_ERR_WIN, "MPIX_Win_iflush",
                        "freed window, null request");
    rt_expect_win_error(&v, MPIX_Win_iunlock(0, freed, &req), MPI_ERR_WIN, "MPIX_Win_iunlock",
                        "freed window");
    rt_expect_win_error(&v, MPI_Win_get_info(freed, &info), MPI_ERR_WIN, "MPI_Win_get_info",
                        "freed window");
    rt_expect_win_error(&v, MPI_Win_get_attr(freed, MPI_WIN_SIZE, &attr, &flag), MPI_ERR_WIN,
                        "MPI_Win_get_attr", "freed window");
    rt_expect_win_error(&v, MPI_Win_set_info(freed, MPI_INFO_NULL), MPI_ERR_WIN,
                        "MPI_Win_set_info", "freed window");
    {
        MPI_Aint size;
        int unit;
        void *base;
        rt_expect_win_error(&v, MPI_Win_shared_query(freed, 0, &size, &unit, &base), MPI_ERR_WIN,
                            "MPI_Win_shared_query", "freed window");
    }

    /* the error goes through MPI_COMM_WORLD's handler */
    MPI_Errhandler handler;
    MPI_CHK(MPI_Comm_create_errhandler(counting_handler, &handler));
    MPI_CHK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler));
    handler_calls = 0;
    int rc = MPI_Win_free(&freed);
    MPI_CHK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Errhandler_free(&handler));
    CHECK(rc != MPI_SUCCESS && handler_calls == 1 && handler_comm == MPI_COMM_WORLD &&
          handler_class == MPI_ERR_WIN, "%s freed twice: MPI_COMM_WORLD's handler ran %d times "
          "(class %d)", rt_flavor_names[flavor], handler_calls, handler_class);
}

/* ---------------------------------------------------------------- basic types */
static void expect_cause(int rc, const char *cause, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (rc == MPI_SUCCESS)
        return; /* reported by rt_expect_win_error */
    MPI_CHK(MPI_Error_string(rc, msg, &len));
    CHECK(strstr(msg, cause) != NULL, "%s %s: error string \"%s\" does not say \"%s\"",
          rt_flavor_names[flavor], what, msg, cause);
}

static void basic_types(void)
{
    signed char expect[WIN_BYTES];
    for (int k = 0; k < WIN_BYTES; k++)
        expect[k] = (signed char) (k + 1);
    fill_target();
    if (me == 0) {
        int ones[4] = { 1, 1, 1, 1 }, got[4] = { 0 }, rc;
        float f[4] = { 1, 1, 1, 1 }, fgot[4] = { 0 };
        signed char c = 100, lo = -3, cold = 0, cmax = 0, cgot = 0;
        MPI_Datatype ints4, every_other, one_int;
        MPI_Request req = MPI_REQUEST_NULL;
        MPI_CHK(MPI_Type_contiguous(4, MPI_INT, &ints4));
        MPI_CHK(MPI_Type_commit(&ints4));
        MPI_CHK(MPI_Type_vector(2, 1, 2, MPI_INT, &every_other));
        MPI_CHK(MPI_Type_commit(&every_other));
        MPI_CHK(MPI_Type_contiguous(1, MPI_INT, &one_int));
        MPI_CHK(MPI_Type_commit(&one_int));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win));
        /* same size, different basic types: refused, target bytes 0..15 unchanged */
        rc = MPI_Accumulate(ones, 4, MPI_INT, 1, disp(0), 4, MPI_FLOAT, MPI_SUM, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_TYPE, "MPI_Accumulate", "MPI_INT onto MPI_FLOAT");
        expect_cause(rc, "origin and target basic datatypes differ", "MPI_INT onto MPI_FLOAT");
        rc = MPI_Accumulate(f, 1, MPI_FLOAT, 1, disp(0), 1, MPI_INT, MPI_REPLACE, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_TYPE, "MPI_Accumulate", "MPI_FLOAT onto MPI_INT");
        rc = MPI_Raccumulate(ones, 1, ints4, 1, disp(0), 4, MPI_UNSIGNED, MPI_MAX, w.win, &req);
        rt_expect_win_error(&w, rc, MPI_ERR_TYPE, "MPI_Raccumulate",
                            "4 x MPI_INT onto MPI_UNSIGNED");
        rc = MPI_Get_accumulate(f, 2, MPI_FLOAT, got, 2, MPI_INT, 1, disp(0), 2, MPI_INT,
                                MPI_SUM, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_TYPE, "MPI_Get_accumulate", "MPI_FLOAT origin");
        rc = MPI_Get_accumulate(ones, 2, MPI_INT, fgot, 2, MPI_FLOAT, 1, disp(0), 2, MPI_INT,
                                MPI_NO_OP, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_TYPE, "MPI_Get_accumulate", "MPI_FLOAT result");
        expect_cause(rc, "result and target basic datatypes differ", "MPI_FLOAT result");
        rc = MPI_Fetch_and_op(ones, got, one_int, 1, disp(0), MPI_SUM, w.win);
        rt_expect_win_error(&w, rc, MPI_ERR_TYPE, "MPI_Fetch_and_op", "a derived type");
        expect_cause(rc, "predefined", "MPI_Fetch_and_op on a derived type");

        /* what must keep working: one basic type under derived types, MPI_INT with
           MPI_INT32_T, and a MPI_NO_OP whose (ignored) origin has another type */
        MPI_CHK(MPI_Accumulate(ones, 1, ints4, 1, disp(16), 4, MPI_INT32_T, MPI_SUM, w.win));
        MPI_CHK(MPI_Accumulate(ones, 2, MPI_INT32_T, 1, disp(32), 1, every_other, MPI_SUM,
                               w.win));
        MPI_CHK(MPI_Get_accumulate(f, 1, MPI_FLOAT, got, 1, MPI_INT, 1, disp(16), 1, MPI_INT,
                                   MPI_NO_OP, w.win));
        /* MPI_CHARACTER: byte 48 (49) + 100 = 149 -> -107; byte 49: max(50, -3) = 50;
           byte 50: min(51, -3) = -3; byte 51 fetched with MPI_NO_OP */
        MPI_CHK(MPI_Accumulate(&c, 1, MPI_CHARACTER, 1, disp(48), 1, MPI_CHARACTER, MPI_SUM,
                               w.win));
        MPI_CHK(MPI_Fetch_and_op(&lo, &cmax, MPI_CHARACTER, 1, disp(49), MPI_MAX, w.win));
        MPI_CHK(MPI_Fetch_and_op(&lo, &cold, MPI_CHARACTER, 1, disp(50), MPI_MIN, w.win));
        MPI_CHK(MPI_Get_accumulate(NULL, 0, MPI_CHARACTER, &cgot, 1, MPI_CHARACTER, 1,
                                   disp(51), 1, MPI_CHARACTER, MPI_NO_OP, w.win));
        MPI_CHK(MPI_Win_unlock(1, w.win));
        CHECK(got[0] == (18 | 18 << 8 | 19 << 16 | 20 << 24),
              "%s MPI_NO_OP with a MPI_FLOAT origin fetched %#x", rt_flavor_names[flavor],
              (unsigned) got[0]);
        CHECK(cmax == 50 && cold == 51 && cgot == 52,
              "%s MPI_CHARACTER fetched %d %d %d, expected 50 51 52", rt_flavor_names[flavor],
              cmax, cold, cgot);
        MPI_CHK(MPI_Type_free(&ints4));
        MPI_CHK(MPI_Type_free(&every_other));
        MPI_CHK(MPI_Type_free(&one_int));
    }
    for (int k = 16; k < 32; k += 4)
        expect[k] = (signed char) (k + 2);
    expect[32] = 34;
    expect[40] = 42;
    expect[48] = -107;
    expect[50] = -3;
    check_target("basic type matching", expect, WIN_BYTES);
}

/* ---------------------------------------------------------------- 64-bit limits */
static void beyond_64_bits(void)
{
    fill_target();
    if (me == 0) {
        int buf[4] = { 9, 9, 9, 9 };
        MPI_Datatype far, back;
        MPI_CHK(MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint) 1 << 62, &far));
        MPI_CHK(MPI_Type_commit(&far));
        MPI_CHK(MPI_Type_create_resized(MPI_INT, 0, -((MPI_Aint) 1 << 62), &back));
        MPI_CHK(MPI_Type_commit(&back));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win));
        /* element 3 of the origin lies 3 * 2^62 bytes away: refused, nothing moves */
        rt_expect_win_error(&w, MPI_Put(buf, 4, far, 1, disp(0), 4, MPI_INT, w.win),
                            MPI_ERR_COUNT, "MPI_Put", "origin extent 2^62, count 4");
        rt_expect_win_error(&w, MPI_Put(buf, 4, back, 1, disp(0), 4, MPI_INT, w.win),
                            MPI_ERR_COUNT, "MPI_Put", "origin extent -2^62, count 4");
        rt_expect_win_error(&w, MPI_Accumulate(buf, 4, far, 1, disp(0), 4, MPI_INT, MPI_SUM,
                                               w.win),
                            MPI_ERR_COUNT, "MPI_Accumulate", "origin extent 2^62, count 4");
        rt_expect_win_error(&w, MPI_Get(buf, 4, far, 1, disp(0), 4, MPI_INT, w.win),
                            MPI_ERR_COUNT, "MPI_Get", "result extent 2^62, count 4");
        rt_expect_win_error(&w, MPI_Get_accumulate(buf, 4, MPI_INT, buf, 4, back, 1, disp(0), 4,
                                                   MPI_INT, MPI_SUM, w.win),
                            MPI_ERR_COUNT, "MPI_Get_accumulate", "result extent -2^62, count 4");
        MPI_CHK(MPI_Win_unlock(1, w.win));
        CHECK(buf[0] == 9 && buf[1] == 9 && buf[2] == 9 && buf[3] == 9,
              "%s refused gets wrote the origin buffer", rt_flavor_names[flavor]);
        MPI_CHK(MPI_Type_free(&far));
        MPI_CHK(MPI_Type_free(&back));
    }
    if (flavor == RT_DYNAMIC) {
        /* base + size wraps around the address space: refused by every rank */
        void *top = (void *) (~(uintptr_t) 0 - 15);
        rt_expect_win_error(&w, MPI_Win_attach(w.win, top, 64), MPI_ERR_ARG, "MPI_Win_attach",
                            "base + size wraps");
    }
    check_target("calls beyond 64 bits", NULL, 0);
}

int main(int argc, char **argv)
{
    int sel[RT_NFLAVORS];
    rt_init(&argc, &argv);
    me = rt_rank();
    np = rt_nprocs();
    if (np != 2) {
        if (me == 0)
            fprintf(stderr, "compat needs 2 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rt_select_flavors(argc, argv, sel) == 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (flavor = 0; flavor < RT_NFLAVORS; flavor++) {
        if (!sel[flavor])
            continue;
        rt_win_create(flavor, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        char_ops();
        proc_null();
        zero_bytes();
        invalid_ops();
        window_info();
        creation_errors();
        basic_types();
        beyond_64_bits();
        rt_win_free(&w);
        freed_window();
        if (flavor == RT_SHARED)
            shared_query();
    }
    return rt_finalize();
}
