/*
 * win_attrs: window attributes and queries, per flavor:
 * MPI_WIN_BASE / MPI_WIN_SIZE / MPI_WIN_DISP_UNIT / MPI_WIN_CREATE_FLAVOR /
 * MPI_WIN_MODEL; MPI_Win_get_group (also of a window over a communicator in reverse
 * rank order, asked after that communicator was freed); MPI_Win_set_name / MPI_Win_get_name;
 * MPI_Win_c2f / MPI_Win_f2c; MPI_Win_set_info / MPI_Win_get_info round trip of
 * accumulate_ordering (also given at creation); and, on allocate_shared windows,
 * MPI_Win_shared_query (sizes, disp units, contiguity, MPI_PROC_NULL, and direct
 * load/store through the returned pointers across ranks).
 *
 * Note: plain MPICH 4.0.2 reports a wrong MPI_WIN_BASE for create-flavor windows.
 */
#include "rmatest.h"

#define DU 4

static int me, np;

static MPI_Aint seg_size(int r)
{
    return (MPI_Aint) (r + 1) * 64;
}

static void check_info_value(MPI_Win win, const char *fl, const char *when, const char *exp)
{
    MPI_Info info;
    char val[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    MPI_CHK(MPI_Win_get_info(win, &info));
    MPI_CHK(MPI_Info_get(info, "accumulate_ordering", MPI_MAX_INFO_VAL, val, &flag));
    CHECK(flag, "%s: %s: accumulate_ordering missing from MPI_Win_get_info", fl, when);
    if (flag)
        CHECK(strcmp(val, exp) == 0, "%s: %s: accumulate_ordering = \"%s\", expected \"%s\"",
              fl, when, val, exp);
    MPI_CHK(MPI_Info_free(&info));
}

static void shared_checks(rt_win_t *w)
{
    char *prev_end = NULL;
    unsigned char **bases = malloc(sizeof(unsigned char *) * (size_t) np);

    for (int r = 0; r < np; r++) {
        MPI_Aint sz = -1;
        int du = -1;
        void *b = NULL;
        MPI_CHK(MPI_Win_shared_query(w->win, r, &sz, &du, &b));
        bases[r] = b;
        CHECK(sz == seg_size(r), "shared_query(%d): size %ld, expected %ld", r, (long) sz,
              (long) seg_size(r));
        CHECK(du == DU, "shared_query(%d): disp_unit %d", r, du);
        CHECK(b != NULL, "shared_query(%d): NULL base", r);
        if (r == me)
            CHECK(b == w->base, "shared_query(self) %p != allocated base %p", b,
                  (void *) w->base);
        if (r > 0)   /* contiguous by default (no alloc_shared_noncontig) */
            CHECK((char *) b == prev_end, "shared_query(%d): segment not contiguous", r);
        prev_end = (char *) b + sz;
    }
    {
        MPI_Aint sz = -1;
        int du = -1;
        void *b = NULL;
        MPI_CHK(MPI_Win_shared_query(w->win, MPI_PROC_NULL, &sz, &du, &b));
        CHECK(b == bases[0] && sz == seg_size(0), "shared_query(MPI_PROC_NULL) is not rank 0's "
              "segment");
    }

    /* direct stores into my segment, loads from everybody's */
    MPI_CHK(MPI_Win_lock_all(0, w->win));
    for (MPI_Aint i = 0; i < seg_size(me); i++)
        bases[me][i] = (unsigned char) (me * 31 + i);
    MPI_CHK(MPI_Win_sync(w->win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_sync(w->win));
    for (int r = 0; r < np; r++) {
        int bad = 0;
        for (MPI_Aint i = 0; i < seg_size(r); i++)
            bad += bases[r][i] != (unsigned char) (r * 31 + i);
        CHECK(bad == 0, "direct loads from rank %d's segment: %d wrong bytes", r, bad);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    /* direct stores into the right neighbour's segment */
    {
        const int right = (me + 1) % np, left = (me + np - 1) % np;
        for (MPI_Aint i = 0; i < seg_size(right); i++)
            bases[right][i] = (unsigned char) (200 + me + i);
        MPI_CHK(MPI_Win_sync(w->win));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Win_sync(w->win));
        int bad = 0;
        for (MPI_Aint i = 0; i < seg_size(me); i++)
            bad += ((unsigned char *) w->base)[i] != (unsigned char) (200 + left + i);
        CHECK(bad == 0, "stores by rank %d through shared_query's pointer: %d wrong bytes",
              left, bad);
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));   /* before anybody writes again */
    }
    MPI_CHK(MPI_Win_unlock_all(w->win));
    free(bases);
}

int main(int argc, char **argv)
{
    static const int flavor_const[RT_NFLAVORS] = {
        MPI_WIN_FLAVOR_CREATE, MPI_WIN_FLAVOR_ALLOCATE, MPI_WIN_FLAVOR_SHARED,
        MPI_WIN_FLAVOR_DYNAMIC
    };
    int sel[RT_NFLAVORS];

    rt_init_world(&argc, &argv, &me, &np);
    rt_select_flavors(argc, argv, sel);

    for (int f = 0; f < RT_NFLAVORS; f++) {
        rt_win_t w;
        const char *fl = rt_flavor_names[f];
        MPI_Info info;
        int flag;

        if (!sel[f])
            continue;
        MPI_CHK(MPI_Info_create(&info));
        MPI_CHK(MPI_Info_set(info, "accumulate_ordering", "none"));
        rt_win_create(f, seg_size(me), DU, info, MPI_COMM_WORLD, &w);
        MPI_CHK(MPI_Info_free(&info));

        /* ---- predefined attributes ---- */
        void *base = (void *) 1;
        MPI_Aint *size = NULL;
        int *du = NULL, *flavor = NULL, *model = NULL;
        MPI_CHK(MPI_Win_get_attr(w.win, MPI_WIN_BASE, &base, &flag));
        CHECK(flag, "%s: MPI_WIN_BASE not set", fl);
        if (flag)
            CHECK(base == (f == RT_DYNAMIC ? MPI_BOTTOM : (void *) w.base),
                  "%s: MPI_WIN_BASE %p, expected %p", fl, base,
                  f == RT_DYNAMIC ? MPI_BOTTOM : (void *) w.base);
        MPI_CHK(MPI_Win_get_attr(w.win, MPI_WIN_SIZE, &size, &flag));
        CHECK(flag, "%s: MPI_WIN_SIZE not set", fl);
        if (flag)
            CHECK(*size == (f == RT_DYNAMIC ? 0 : seg_size(me)), "%s: MPI_WIN_SIZE %ld", fl,
                  (long) *size);
        MPI_CHK(MPI_Win_get_attr(w.win, MPI_WIN_DISP_UNIT, &du, &flag));
        CHECK(flag, "%s: MPI_WIN_DISP_UNIT not set", fl);
        if (flag)
            CHECK(*du == (f == RT_DYNAMIC ? 1 : DU), "%s: MPI_WIN_DISP_UNIT %d", fl, *du);
        MPI_CHK(MPI_Win_get_attr(w.win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
        CHECK(flag, "%s: MPI_WIN_CREATE_FLAVOR not set", fl);
        if (flag)
            CHECK(*flavor == flavor_const[f], "%s: MPI_WIN_CREATE_FLAVOR %d, expected %d", fl,
                  *flavor, flavor_const[f]);
        MPI_CHK(MPI_Win_get_attr(w.win, MPI_WIN_MODEL, &model, &flag));
        CHECK(flag, "%s: MPI_WIN_MODEL not set", fl);
        if (flag)
            CHECK(*model == MPI_WIN_UNIFIED, "%s: MPI_WIN_MODEL %d, expected MPI_WIN_UNIFIED",
                  fl, *model);

        /* ---- group ---- */
        {
            MPI_Group wg, cg;
            int res = -1;
            MPI_CHK(MPI_Win_get_group(w.win, &wg));
            MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &cg));
            MPI_CHK(MPI_Group_compare(wg, cg, &res));
            CHECK(res == MPI_IDENT, "%s: window group vs MPI_COMM_WORLD group: %d", fl, res);
            MPI_CHK(MPI_Group_free(&wg));
            MPI_CHK(MPI_Group_free(&cg));
        }

        /* ---- name ---- */
        {
            char name[MPI_MAX_OBJECT_NAME], got[MPI_MAX_OBJECT_NAME];
            int len = -1;
            snprintf(name, sizeof(name), "nbrma test window (%s)", fl);
            MPI_CHK(MPI_Win_set_name(w.win, name));
            got[0] = '\0';
            MPI_CHK(MPI_Win_get_name(w.win, got, &len));
            CHECK(strcmp(got, name) == 0 && len == (int) strlen(name),
                  "%s: MPI_Win_get_name gave \"%s\" (len %d)", fl, got, len);
        }

        /* ---- Fortran handle round trip ---- */
        {
            MPI_Fint fh = MPI_Win_c2f(w.win);
            MPI_Win back = MPI_Win_f2c(fh);
            CHECK(back == w.win, "%s: MPI_Win_f2c(MPI_Win_c2f(win)) != win", fl);
        }

        /* ---- info ---- */
        check_info_value(w.win, fl, "given at creation", "none");
        MPI_CHK(MPI_Info_create(&info));
        MPI_CHK(MPI_Info_set(info, "accumulate_ordering", "rar,war"));
        MPI_CHK(MPI_Win_set_info(w.win, info));
        MPI_CHK(MPI_Info_free(&info));
        check_info_value(w.win, fl, "after MPI_Win_set_info", "rar,war");

        if (f == RT_SHARED)
            shared_checks(&w);

        /* the window still moves data */
        {
            const int t = (me + 1) % np, from = (me + np - 1) % np;
            int v = 4242 + me;
            MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w.win));
            MPI_CHK(MPI_Put(&v, 1, MPI_INT, t, rt_disp(&w, t, 1), 1, MPI_INT, w.win));
            MPI_CHK(MPI_Win_unlock(t, w.win));
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
            rt_lock_self(&w);
            CHECK(((int *) w.base)[1] == 4242 + from, "%s: put after the queries: %d", fl,
                  ((int *) w.base)[1]);
            rt_unlock_self(&w);
            MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        }

        rt_win_free(&w);
    }

    /* the group of a window over the ranks in reverse order outlives its communicator */
    {
        MPI_Comm reversed;
        MPI_Group wg, cg, world;
        MPI_Win win;
        void *base;
        int res = -1, rank = -1;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, 0, np - 1 - me, &reversed));
        MPI_CHK(MPI_Comm_group(reversed, &cg));
        MPI_CHK(MPI_Win_allocate(8, 1, MPI_INFO_NULL, reversed, &base, &win));
        MPI_CHK(MPI_Comm_free(&reversed));
        MPI_CHK(MPI_Win_get_group(win, &wg));
        MPI_CHK(MPI_Group_compare(wg, cg, &res));
        CHECK(res == MPI_IDENT, "reversed: window group vs its communicator's group: %d", res);
        MPI_CHK(MPI_Group_rank(wg, &rank));
        CHECK(rank == np - 1 - me, "reversed: rank %d in the window's group, expected %d", rank,
              np - 1 - me);
        MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
        MPI_CHK(MPI_Group_compare(wg, world, &res));
        CHECK(res == (np > 1 ? MPI_SIMILAR : MPI_IDENT),
              "reversed: window group vs MPI_COMM_WORLD group: %d", res);
        MPI_CHK(MPI_Group_free(&wg));
        MPI_CHK(MPI_Group_free(&cg));
        MPI_CHK(MPI_Group_free(&world));
        MPI_CHK(MPI_Win_free(&win));
    }
    return rt_finalize();
}
