/*
 * datatypes: derived origin and target datatypes for MPI_Put, MPI_Get and
 * MPI_Accumulate (SUM): contiguous, vector, hvector, indexed, struct, resized, counts
 * above one, and mixed pairs (origin contiguous / target vector and vice versa); types
 * whose data is one block away from the buffer address (a subarray of one row, a
 * struct of one block at 16 bytes, a contiguous type resized to a negative lower bound),
 * which a lock epoch moves as one copy.
 * Accumulate only uses types built from MPI_INT. Every byte of the target window and
 * of the origin buffer is checked, so writes into gaps are caught. The expected image
 * is computed locally with MPI_Pack/MPI_Unpack.
 *
 * Usage: datatypes [create|allocate|shared|dynamic]...   (default: all)
 */
#include "rmatest.h"

#define WSZ 512         /* bytes of window per rank (disp_unit 1) */
#define TOFF 24         /* target displacement used, bytes */
#define OOFF 8          /* offset in the origin buffer, bytes */

typedef struct {
    const char *name;
    MPI_Datatype type;
    int count;
    int int_only;       /* built from MPI_INT alone: usable with accumulate */
} dtype_t;

enum { OP_PUT = 0, OP_GET, OP_ACC, NOPS };
static const char *op_names[NOPS] = { "MPI_Put", "MPI_Get", "MPI_Accumulate(SUM)" };

static int me, np;

static void origin_image(int o, char *buf)
{
    int *ib = (int *) buf;
    for (int i = 0; i < WSZ / (int) sizeof(int); i++)
        ib[i] = 1000 * (o + 1) + i;
}

static void target_image(int t, char *buf)
{
    int *ib = (int *) buf;
    for (int i = 0; i < WSZ / (int) sizeof(int); i++)
        ib[i] = -(1000 * (t + 1) + i) * 3;
}

static int packed_size(const dtype_t *d)
{
    int sz;
    MPI_CHK(MPI_Pack_size(d->count, d->type, MPI_COMM_WORLD, &sz));
    return sz;
}

static void pack(const char *src, const dtype_t *d, char *packed, int cap)
{
    int pos = 0;
    MPI_CHK(MPI_Pack(src, d->count, d->type, packed, cap, &pos, MPI_COMM_WORLD));
}

static void unpack(const char *packed, int cap, char *dst, const dtype_t *d)
{
    int pos = 0;
    MPI_CHK(MPI_Unpack(packed, cap, &pos, dst, d->count, d->type, MPI_COMM_WORLD));
}

/* Compute what `win_img` (target) and `org_img` (origin) look like after op. */
static void reference(int op, const dtype_t *od, const dtype_t *td, char *org_img,
                      char *win_img)
{
    int cap = packed_size(od) > packed_size(td) ? packed_size(od) : packed_size(td);
    char *p1 = malloc((size_t) cap + 16), *p2 = malloc((size_t) cap + 16);
    switch (op) {
    case OP_PUT:
        pack(org_img + OOFF, od, p1, cap);
        unpack(p1, cap, win_img + TOFF, td);
        break;
    case OP_GET:
        pack(win_img + TOFF, td, p1, cap);
        unpack(p1, cap, org_img + OOFF, od);
        break;
    case OP_ACC: {
        int *a = (int *) p1, *b = (int *) p2;
        pack(org_img + OOFF, od, p1, cap);
        pack(win_img + TOFF, td, p2, cap);
        for (int i = 0; i < cap / (int) sizeof(int); i++)
            b[i] = (int) ((unsigned) a[i] + (unsigned) b[i]);
        unpack(p2, cap, win_img + TOFF, td);
        break;
    }
    }
    free(p1);
    free(p2);
}

static void compare(const char *what, const char *got, const char *exp, int f, int op,
                    const dtype_t *od, const dtype_t *td)
{
    int bad = 0, first = -1;
    for (int i = 0; i < WSZ; i++)
        if (got[i] != exp[i]) {
            if (first < 0)
                first = i;
            bad++;
        }
    CHECK(bad == 0, "%s %s origin=%s target=%s: %s has %d wrong bytes, first at offset %d",
          rt_flavor_names[f], op_names[op], od->name, td->name, what, bad, first);
}

static void run_case(rt_win_t *w, int f, int op, const dtype_t *od, const dtype_t *td)
{
    const int t = (me + 1) % np, o = (me + np - 1) % np;
    char *obuf = malloc(WSZ), *exp_o = malloc(WSZ), *exp_w = malloc(WSZ);
    char *tmp_w = malloc(WSZ);

    /* fresh target window and origin buffer */
    rt_lock_self(w);
    target_image(me, w->base);
    rt_unlock_self(w);
    origin_image(me, obuf);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w->win));
    switch (op) {
    case OP_PUT:
        MPI_CHK(MPI_Put(obuf + OOFF, od->count, od->type, t, rt_disp(w, t, TOFF), td->count,
                        td->type, w->win));
        break;
    case OP_GET:
        MPI_CHK(MPI_Get(obuf + OOFF, od->count, od->type, t, rt_disp(w, t, TOFF), td->count,
                        td->type, w->win));
        break;
    case OP_ACC:
        MPI_CHK(MPI_Accumulate(obuf + OOFF, od->count, od->type, t, rt_disp(w, t, TOFF),
                               td->count, td->type, MPI_SUM, w->win));
        break;
    }
    MPI_CHK(MPI_Win_unlock(t, w->win));

    /* my origin buffer (only changed by Get, from target t's image) */
    origin_image(me, exp_o);
    target_image(t, tmp_w);
    reference(op, od, td, exp_o, tmp_w);
    compare("the origin buffer", obuf, exp_o, f, op, od, td);

    /* my window, written by origin o */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    origin_image(o, tmp_w);
    target_image(me, exp_w);
    reference(op, od, td, tmp_w, exp_w);
    rt_lock_self(w);
    compare("the target window", w->base, exp_w, f, op, od, td);
    rt_unlock_self(w);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    free(obuf);
    free(exp_o);
    free(exp_w);
    free(tmp_w);
}

int main(int argc, char **argv)
{
    int sel[RT_NFLAVORS];
    enum { D_INT6, D_CONTIG, D_VECTOR, D_HVECTOR, D_INDEXED, D_STRUCT, D_RESIZED, D_VECTOR3,
           D_MIXED, D_ROW, D_BLOCK16, D_NEGLB, ND };
    dtype_t d[ND];

    rt_init_world(&argc, &argv, &me, &np);
    rt_select_flavors(argc, argv, sel);

    /* every type pair below has the signature of 6 MPI_INTs, except "mixed" */
    d[D_INT6] = (dtype_t) { "6 x MPI_INT", MPI_INT, 6, 1 };
    d[D_CONTIG] = (dtype_t) { "contiguous(6)", MPI_DATATYPE_NULL, 1, 1 };
    MPI_CHK(MPI_Type_contiguous(6, MPI_INT, &d[D_CONTIG].type));
    d[D_VECTOR] = (dtype_t) { "vector(3,2,4)", MPI_DATATYPE_NULL, 1, 1 };
    MPI_CHK(MPI_Type_vector(3, 2, 4, MPI_INT, &d[D_VECTOR].type));
    d[D_HVECTOR] = (dtype_t) { "hvector(2,3,28B)", MPI_DATATYPE_NULL, 1, 1 };
    MPI_CHK(MPI_Type_create_hvector(2, 3, 7 * sizeof(int), MPI_INT, &d[D_HVECTOR].type));
    {
        int bl[3] = { 1, 2, 3 }, dp[3] = { 0, 3, 8 };
        d[D_INDEXED] = (dtype_t) { "indexed({1,2,3},{0,3,8})", MPI_DATATYPE_NULL, 1, 1 };
        MPI_CHK(MPI_Type_indexed(3, bl, dp, MPI_INT, &d[D_INDEXED].type));
    }
    {
        int bl[2] = { 2, 4 };
        MPI_Aint dp[2] = { 0, 5 * sizeof(int) };
        MPI_Datatype ty[2] = { MPI_INT, MPI_INT };
        d[D_STRUCT] = (dtype_t) { "struct(int[2]@0,int[4]@20)", MPI_DATATYPE_NULL, 1, 1 };
        MPI_CHK(MPI_Type_create_struct(2, bl, dp, ty, &d[D_STRUCT].type));
    }
    d[D_RESIZED] = (dtype_t) { "6 x resized(int,extent 12)", MPI_DATATYPE_NULL, 6, 1 };
    MPI_CHK(MPI_Type_create_resized(MPI_INT, 0, 3 * sizeof(int), &d[D_RESIZED].type));
    d[D_VECTOR3] = (dtype_t) { "3 x vector(2,1,3)", MPI_DATATYPE_NULL, 3, 1 };
    MPI_CHK(MPI_Type_vector(2, 1, 3, MPI_INT, &d[D_VECTOR3].type));
    {
        /* int, (gap), double, char[3], (gap) -- resized to 40 bytes, used with count 2 */
        int bl[3] = { 1, 1, 3 };
        MPI_Aint dp[3] = { 0, 8, 20 };
        MPI_Datatype ty[3] = { MPI_INT, MPI_DOUBLE, MPI_CHAR }, tmp;
        d[D_MIXED] = (dtype_t) { "2 x struct(int,double,char[3]) extent 40",
                                 MPI_DATATYPE_NULL, 2, 0 };
        MPI_CHK(MPI_Type_create_struct(3, bl, dp, ty, &tmp));
        MPI_CHK(MPI_Type_create_resized(tmp, 0, 40, &d[D_MIXED].type));
        MPI_CHK(MPI_Type_free(&tmp));
    }
    {
        /* row 1, columns 3..8 of a 2 x 12 int array: one block at byte 60, extent 96 */
        int sizes[2] = { 2, 12 }, subsizes[2] = { 1, 6 }, starts[2] = { 1, 3 };
        d[D_ROW] = (dtype_t) { "subarray(2x12,1x6 at 1,3)", MPI_DATATYPE_NULL, 1, 1 };
        MPI_CHK(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT,
                                         &d[D_ROW].type));
    }
    {
        int bl[1] = { 6 };
        MPI_Aint dp[1] = { 16 };
        MPI_Datatype ty[1] = { MPI_INT };
        d[D_BLOCK16] = (dtype_t) { "struct(int[6]@16)", MPI_DATATYPE_NULL, 1, 1 };
        MPI_CHK(MPI_Type_create_struct(1, bl, dp, ty, &d[D_BLOCK16].type));
    }
    {
        MPI_Datatype six;
        MPI_CHK(MPI_Type_contiguous(6, MPI_INT, &six));
        d[D_NEGLB] = (dtype_t) { "resized(contiguous(6),lb -8,extent 40)", MPI_DATATYPE_NULL, 1,
                                 1 };
        MPI_CHK(MPI_Type_create_resized(six, -8, 40, &d[D_NEGLB].type));
        MPI_CHK(MPI_Type_free(&six));
    }
    for (int i = 1; i < ND; i++)
        MPI_CHK(MPI_Type_commit(&d[i].type));

    static const int pairs[][2] = {
        { D_INT6, D_CONTIG }, { D_CONTIG, D_VECTOR }, { D_VECTOR, D_CONTIG },
        { D_INT6, D_VECTOR }, { D_VECTOR, D_INT6 }, { D_VECTOR, D_VECTOR },
        { D_VECTOR, D_HVECTOR }, { D_HVECTOR, D_INDEXED }, { D_INDEXED, D_STRUCT },
        { D_STRUCT, D_RESIZED }, { D_RESIZED, D_INT6 }, { D_RESIZED, D_RESIZED },
        { D_VECTOR3, D_INDEXED }, { D_INDEXED, D_VECTOR3 }, { D_HVECTOR, D_HVECTOR },
        { D_MIXED, D_MIXED }, { D_INT6, D_ROW }, { D_ROW, D_INT6 }, { D_BLOCK16, D_ROW },
        { D_ROW, D_BLOCK16 }, { D_NEGLB, D_BLOCK16 }, { D_BLOCK16, D_NEGLB }, { D_ROW, D_ROW },
    };
    const int npairs = (int) (sizeof(pairs) / sizeof(pairs[0]));

    for (int f = 0; f < RT_NFLAVORS; f++) {
        rt_win_t w;
        if (!sel[f])
            continue;
        rt_win_create(f, WSZ, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        for (int p = 0; p < npairs; p++)
            for (int op = 0; op < NOPS; op++) {
                const dtype_t *od = &d[pairs[p][0]], *td = &d[pairs[p][1]];
                if (op == OP_ACC && !(od->int_only && td->int_only))
                    continue;
                run_case(&w, f, op, od, td);
            }
        rt_win_free(&w);
    }

    for (int i = 1; i < ND; i++)
        MPI_CHK(MPI_Type_free(&d[i].type));
    return rt_finalize();
}
