/*
 * accumulate_ops: every predefined reduction operation through MPI_Get_accumulate
 * (which must return the old target contents), MPI_Accumulate, and MPI_Fetch_and_op on
 * one element: SUM, PROD, MAX, MIN, LAND, LOR, LXOR, BAND, BOR, BXOR, REPLACE, NO_OP on
 * suitable types, and MINLOC / MAXLOC on MPI_DOUBLE_INT and MPI_2INT (with ties, where
 * the smaller index wins). Bytes next to the accessed elements must stay untouched.
 */
#include "rmatest.h"
#include <stdbool.h>
#include <stdint.h>

#define N 8             /* elements per operation */
#define REG 160         /* window bytes per call region */
#define WSZ (3 * REG)   /* window bytes per rank */
#define FILL 0x5a       /* window bytes outside the elements */
#define RFILL 0x77      /* result-buffer bytes outside the elements */

static int me, np, t;
static rt_win_t w;

enum { C_GACC = 0, C_ACC, C_FOP, NCALLS };
static const char *call_names[NCALLS] = { "MPI_Get_accumulate", "MPI_Accumulate",
                                          "MPI_Fetch_and_op" };

enum { K_ARITH = 1, K_LOGIC = 2, K_BIT = 4, K_ANY = 8 };
typedef struct {
    MPI_Op op;
    const char *name;
    int kind;
} op_t;

static const op_t ops[] = {
    { MPI_SUM, "MPI_SUM", K_ARITH }, { MPI_PROD, "MPI_PROD", K_ARITH },
    { MPI_MAX, "MPI_MAX", K_ARITH }, { MPI_MIN, "MPI_MIN", K_ARITH },
    { MPI_LAND, "MPI_LAND", K_LOGIC }, { MPI_LOR, "MPI_LOR", K_LOGIC },
    { MPI_LXOR, "MPI_LXOR", K_LOGIC }, { MPI_BAND, "MPI_BAND", K_BIT },
    { MPI_BOR, "MPI_BOR", K_BIT }, { MPI_BXOR, "MPI_BXOR", K_BIT },
    { MPI_REPLACE, "MPI_REPLACE", K_ANY }, { MPI_NO_OP, "MPI_NO_OP", K_ANY },
};
#define NOPS ((int) (sizeof(ops) / sizeof(ops[0])))

/*
 * One case: the target starts with N elements `a` (extent esz, of which the first vsz
 * bytes are significant), the origin contributes `b`, and `exp` is the expected result.
 * Every rank targets the next one; all ranks use the same data. The three calls use
 * three regions of the window in one epoch: [0] Get_accumulate, [1] Accumulate,
 * [2] Fetch_and_op on the first element.
 */
static void run_case(const char *tname, MPI_Datatype type, const op_t *op, int esz, int vsz,
                     const void *a, const void *b, const void *exp, int fop_ok)
{
    unsigned char res[NCALLS][REG], img[REG];
    const unsigned char *mem = (const unsigned char *) w.base;
    int use[NCALLS] = { 1, op->op != MPI_NO_OP /* NO_OP only for fetching calls */, fop_ok };

    rt_lock_self(&w);
    memset(w.base, FILL, WSZ);
    for (int c = 0; c < NCALLS; c++)
        memcpy(w.base + c * REG, a, (size_t) (esz * N));
    rt_unlock_self(&w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    memset(res, RFILL, sizeof(res));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w.win));
    if (use[C_GACC])
        MPI_CHK(MPI_Get_accumulate(b, N, type, res[C_GACC], N, type, t,
                                   rt_disp(&w, t, C_GACC * REG), N, type, op->op, w.win));
    if (use[C_ACC])
        MPI_CHK(MPI_Accumulate(b, N, type, t, rt_disp(&w, t, C_ACC * REG), N, type, op->op,
                               w.win));
    if (use[C_FOP])
        MPI_CHK(MPI_Fetch_and_op(b, res[C_FOP], type, t, rt_disp(&w, t, C_FOP * REG), op->op,
                                 w.win));
    MPI_CHK(MPI_Win_unlock(t, w.win));

    for (int c = 0; c < NCALLS; c++) {
        const int count = (c == C_FOP) ? 1 : N;
        int bad = 0;
        if (c == C_ACC || !use[c])
            continue;
        for (int i = 0; i < count; i++)
            bad += memcmp(res[c] + i * esz, (const char *) a + i * esz, (size_t) vsz) != 0;
        for (int i = count * esz; i < REG; i++)
            bad += res[c][i] != RFILL;
        CHECK(bad == 0, "%s(%s, %s): fetched old value wrong (%d bad elements/bytes)",
              call_names[c], tname, op->name, bad);
    }

    /* the target checks its memory */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    rt_lock_self(&w);
    for (int c = 0; c < NCALLS; c++) {
        const int count = (c == C_FOP) ? 1 : N;
        const unsigned char *m = mem + c * REG;
        int bad = 0, first = -1;
        memset(img, FILL, REG);
        memcpy(img, a, (size_t) (esz * N));
        if (use[c])
            memcpy(img, exp, (size_t) (esz * count));
        for (int i = 0; i < N; i++)
            if (memcmp(m + i * esz, img + i * esz, (size_t) vsz) != 0) {
                bad++;
                if (first < 0)
                    first = i;
            }
        for (int i = N * esz; i < REG; i++)
            bad += m[i] != img[i];
        CHECK(bad == 0, "%s(%s, %s): target memory wrong (%d bad elements/bytes, first "
              "element %d)", call_names[c], tname, op->name, bad, first);
    }
    rt_unlock_self(&w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* test data: element i of the target (which=0) or origin (which=1) contents */
static long long gen(int kind, int which, int i)
{
    if (kind == K_LOGIC)
        return which == 0 ? ((i & 1) ? 0 : i + 1) : ((i & 2) ? 0 : 2);
    if (kind == K_BIT)
        return which == 0 ? (0x5a5aLL + 37 * i) * 0x10001LL : (0x3c3cLL ^ (0x1111LL * i));
    return which == 0 ? (i % 2 ? -1 : 1) * (i + 2) : (i % 3 ? -1 : 1) * (5 - i);
}

/* reference reductions: r = b (op) a, a = target, b = origin */
#define ARITHOPS(x, y, r)                                                  \
    if (op == MPI_SUM) r = x + y;                                          \
    else if (op == MPI_PROD) r = x * y;                                    \
    else if (op == MPI_MAX) r = x > y ? x : y;                             \
    else if (op == MPI_MIN) r = x < y ? x : y;
#define NOARITHOPS(x, y, r)
#define REF_BODY(x, y, r)                                                  \
    if (op == MPI_LAND) r = (x && y);                                 \
    else if (op == MPI_LOR) r = (x || y);                                  \
    else if (op == MPI_LXOR) r = (!x != !y);                               \
    else if (op == MPI_REPLACE) r = y;                                     \
    else if (op == MPI_NO_OP) r = x;

#define DEF_TYPE_TEST(T, NAME, MPITYPE, KINDS, ARITH, BIT)                                   \
    static void test_##NAME(void)                                                        \
    {                                                                                    \
        T a[N], b[N], r[N];                                                              \
        for (int k = 0; k < NOPS; k++) {                                                 \
            const op_t *o = &ops[k];                                                     \
            MPI_Op op = o->op;                                                           \
            if (!(o->kind & (KINDS)))                                                    \
                continue;                                                                \
            for (int i = 0; i < N; i++) {                                                \
                a[i] = (T) gen(o->kind, 0, i);                                           \
                b[i] = (T) gen(o->kind, 1, i);                                           \
                T x = a[i], y = b[i];                                                    \
                r[i] = x;                                                                \
                REF_BODY(x, y, r[i])                                                     \
                ARITH(x, y, r[i])                                                        \
                BIT(x, y, r[i])                                                          \
            }                                                                            \
            run_case(#MPITYPE, MPITYPE, o, (int) sizeof(T), (int) sizeof(T), a, b, r,    \
                     1);                                                                                                                          \
        }                                                                                \
    }

#define BITOPS(x, y, r)                                                    \
    if (op == MPI_BAND) r = x & y;                                         \
    else if (op == MPI_BOR) r = x | y;                                     \
    else if (op == MPI_BXOR) r = x ^ y;
#define NOBITOPS(x, y, r)

typedef unsigned char uchar;
typedef long long llong;
DEF_TYPE_TEST(int, int, MPI_INT, K_ARITH | K_LOGIC | K_BIT | K_ANY, ARITHOPS, BITOPS)
DEF_TYPE_TEST(llong, llong, MPI_LONG_LONG, K_ARITH | K_LOGIC | K_BIT | K_ANY, ARITHOPS, BITOPS)
DEF_TYPE_TEST(short, short, MPI_SHORT, K_ARITH | K_ANY, ARITHOPS, BITOPS)
DEF_TYPE_TEST(uchar, uchar, MPI_UNSIGNED_CHAR, K_ARITH | K_LOGIC | K_BIT | K_ANY, ARITHOPS, BITOPS)
DEF_TYPE_TEST(uint64_t, uint64, MPI_UINT64_T, K_ARITH | K_BIT | K_ANY, ARITHOPS, BITOPS)
DEF_TYPE_TEST(uchar, byte, MPI_BYTE, K_BIT | K_ANY, ARITHOPS, BITOPS)
DEF_TYPE_TEST(float, float, MPI_FLOAT, K_ARITH | K_ANY, ARITHOPS, NOBITOPS)
DEF_TYPE_TEST(double, double, MPI_DOUBLE, K_ARITH | K_ANY, ARITHOPS, NOBITOPS)
DEF_TYPE_TEST(bool, bool, MPI_C_BOOL, K_LOGIC | K_ANY, NOARITHOPS, NOBITOPS)

/* MINLOC / MAXLOC on value-index pairs */
#define DEF_LOC_TEST(VT, NAME, MPITYPE, VSZ)                                             \
    static void test_loc_##NAME(void)                                                    \
    {                                                                                    \
        struct pair { VT v; int k; } a[N], b[N], r[N];                                   \
        static const op_t locops[2] = { { MPI_MINLOC, "MPI_MINLOC", 0 },                 \
                                        { MPI_MAXLOC, "MPI_MAXLOC", 0 } };               \
        memset(a, 0, sizeof(a));                                                         \
        memset(b, 0, sizeof(b));                                                         \
        memset(r, 0, sizeof(r));                                                         \
        for (int m = 0; m < 2; m++) {                                                    \
            for (int i = 0; i < N; i++) {                                                \
                a[i].v = (VT) (i % 3);                                                   \
                a[i].k = 10 + i;                                                         \
                b[i].v = (VT) ((i / 2) % 3);            /* some ties */                  \
                b[i].k = (i & 1) ? 5 + i : 20 + i;      /* smaller or larger index */    \
                int take_b = m == 0 ? b[i].v < a[i].v : b[i].v > a[i].v;                 \
                if (b[i].v == a[i].v) {                                                  \
                    r[i].v = a[i].v;                                                     \
                    r[i].k = a[i].k < b[i].k ? a[i].k : b[i].k;                          \
                } else                                                                   \
                    r[i] = take_b ? b[i] : a[i];                                         \
            }                                                                            \
            run_case(#MPITYPE, MPITYPE, &locops[m], (int) sizeof(struct pair), VSZ, a,  \
                     b, r, 0);                                                                                                              \
        }                                                                                \
    }

DEF_LOC_TEST(double, double_int, MPI_DOUBLE_INT, (int) (sizeof(double) + sizeof(int)))
DEF_LOC_TEST(int, 2int, MPI_2INT, (int) (2 * sizeof(int)))

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);
    t = (me + 1) % np;

    /* optional flavor argument; default: allocate */
    int flavor = RT_ALLOCATE;
    if (argc > 1 && rt_flavor_from_name(argv[1]) >= 0)
        flavor = rt_flavor_from_name(argv[1]);
    rt_win_create(flavor, WSZ, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);

    test_int();
    test_llong();
    test_short();
    test_uchar();
    test_uint64();
    test_byte();
    test_float();
    test_double();
    test_bool();
    test_loc_double_int();
    test_loc_2int();

    rt_win_free(&w);
    return rt_finalize();
}
