/*
 * dynamic_many.c — dynamic windows with many attached regions, and accesses that span
 * regions attached back to back.
 *
 * (a) The textbook distributed linked list (MPICH's test/mpi/rma/linked_list.c, "Using
 *     Advanced MPI"): every rank appends NAPPEND (default 1000, argv[1]) elements, each
 *     a small malloc'd struct attached with its own MPI_Win_attach, to one list whose
 *     tail it finds with MPI_Compare_and_swap / MPI_Put / MPI_Get through the links. Then
 *     every rank walks the whole list with MPI_Get and checks every element once.
 * (b) One malloc'd buffer carved into three regions attached back to back: a put, a get,
 *     a strided get and an accumulate spanning all three (from the next rank) move the
 *     right bytes.
 * (c) The middle region detached: spanning put/get fail with MPI_ERR_RMA_RANGE and write
 *     nothing; an access inside the first region still works.
 * (d) Everything detached: accesses to former regions fail; the buffer re-attached as
 *     two regions: spanning put and get work again.
 */
#include "rmatest.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int value;
    int next_rank; /* -1: end of list */
    MPI_Aint next_disp;
} elem_t;

#define NIL_RANK (-1)
#define REGION 64 /* bytes per region in (b)-(d) */

static MPI_Win win;
static int me, nprocs;

static MPI_Aint addr_of(const void *p)
{
    MPI_Aint a;
    MPI_CHK(MPI_Get_address(p, &a));
    return a;
}

static elem_t *new_elem(int value)
{
    elem_t *e = malloc(sizeof *e);
    e->value = value;
    e->next_rank = NIL_RANK;
    e->next_disp = 0;
    MPI_CHK(MPI_Win_attach(win, e, sizeof *e));
    return e;
}

/* (a) */
static void linked_list(int nappend)
{
    elem_t **mine = malloc(sizeof(elem_t *) * (size_t) nappend);
    elem_t *head = NULL;
    int head_rank = 0;
    MPI_Aint head_disp = 0;
    if (me == 0) {
        head = new_elem(-1);
        head_disp = addr_of(head);
    }
    MPI_CHK(MPI_Bcast(&head_disp, 1, MPI_AINT, 0, MPI_COMM_WORLD));

    int tail_rank = head_rank;
    MPI_Aint tail_disp = head_disp;
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int i = 0; i < nappend; i++) {
        mine[i] = new_elem(me * nappend + i);
        const MPI_Aint disp = addr_of(mine[i]);
        for (;;) {
            int nil = NIL_RANK, previous = NIL_RANK;
            MPI_CHK(MPI_Compare_and_swap(&me, &nil, &previous, MPI_INT, tail_rank,
                                         tail_disp + (MPI_Aint) offsetof(elem_t, next_rank), win));
            MPI_CHK(MPI_Win_flush(tail_rank, win));
            if (previous == NIL_RANK) { /* linked: publish the displacement (atomically:
                                          * another rank may be reading it) */
                MPI_CHK(MPI_Accumulate(&disp, 1, MPI_AINT, tail_rank,
                                       tail_disp + (MPI_Aint) offsetof(elem_t, next_disp), 1,
                                       MPI_AINT, MPI_REPLACE, win));
                MPI_CHK(MPI_Win_flush(tail_rank, win));
                tail_rank = me;
                tail_disp = disp;
                break;
            }
            /* stale tail: follow the link once its displacement is there */
            MPI_Aint next = 0;
            do { /* an atomic read: a plain get may see half of the publishing write */
                MPI_CHK(MPI_Fetch_and_op(NULL, &next, MPI_AINT, tail_rank,
                                         tail_disp + (MPI_Aint) offsetof(elem_t, next_disp),
                                         MPI_NO_OP, win));
                MPI_CHK(MPI_Win_flush(tail_rank, win));
            } while (next == 0);
            tail_rank = previous;
            tail_disp = next;
        }
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* Walk the whole list: every element once, each rank's in its order. */
    int *seen = calloc((size_t) nprocs, sizeof(int));
    int count = 0, rank = head_rank;
    MPI_Aint disp = head_disp;
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (;;) {
        elem_t e;
        MPI_CHK(MPI_Get(&e, (int) sizeof e, MPI_BYTE, rank, disp, (int) sizeof e, MPI_BYTE, win));
        MPI_CHK(MPI_Win_flush(rank, win));
        if (count > 0) {
            const int owner = e.value / nappend, index = e.value % nappend;
            CHECK(e.value >= 0 && owner == rank && owner < nprocs && index == seen[owner],
                  "element %d of the list: value %d at rank %d (expected element %d of rank %d)",
                  count, e.value, rank, owner < nprocs && owner >= 0 ? seen[owner] : -1, rank);
            if (owner >= 0 && owner < nprocs)
                seen[owner] = index + 1;
        }
        if (e.next_rank == NIL_RANK || rt_errs > 0)
            break;
        rank = e.next_rank;
        disp = e.next_disp;
        count++;
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    CHECK(count == nprocs * nappend, "walked %d elements, expected %d", count, nprocs * nappend);
    for (int r = 0; r < nprocs; r++)
        CHECK(seen[r] == nappend, "rank %d: %d of its %d elements in the list", r, seen[r], nappend);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* Detach everything; a former element is then out of range. */
    for (int i = 0; i < nappend; i++)
        MPI_CHK(MPI_Win_detach(win, mine[i]));
    MPI_Aint first_disp = addr_of(mine[0]), peer_first;
    const int next = (me + 1) % nprocs, prev = (me + nprocs - 1) % nprocs;
    MPI_CHK(MPI_Sendrecv(&first_disp, 1, MPI_AINT, prev, 0, &peer_first, 1, MPI_AINT, next, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win));
    elem_t e;
    rt_expect_error(MPI_Get(&e, (int) sizeof e, MPI_BYTE, next, peer_first, (int) sizeof e,
                            MPI_BYTE, win),
                    MPI_ERR_RMA_RANGE, "MPI_Get", "detached list element");
    MPI_CHK(MPI_Win_unlock(next, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < nappend; i++)
        free(mine[i]);
    if (head) {
        MPI_CHK(MPI_Win_detach(win, head));
        free(head);
    }
    free(mine);
    free(seen);
}

static unsigned char pattern(int rank, int i)
{
    return (unsigned char) (rank * 61 + i * 7 + 1);
}

/* (b)-(d) */
static void back_to_back(void)
{
    unsigned char *buf = malloc(3 * REGION);
    memset(buf, 0, 3 * REGION);
    for (int k = 0; k < 3; k++)
        MPI_CHK(MPI_Win_attach(win, buf + k * REGION, REGION));
    const int next = (me + 1) % nprocs, prev = (me + nprocs - 1) % nprocs;
    MPI_Aint mine = addr_of(buf), base;
    /* base: the buffer of `next`, the rank this one accesses */
    MPI_CHK(MPI_Sendrecv(&mine, 1, MPI_AINT, prev, 0, &base, 1, MPI_AINT, next, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE));

    /* (b) put all three regions in one call, get them back, strided and summed. */
    unsigned char out[3 * REGION], in[3 * REGION];
    for (int i = 0; i < 3 * REGION; i++)
        out[i] = pattern(me, i);
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win));
    MPI_CHK(MPI_Put(out, 3 * REGION, MPI_BYTE, next, base, 3 * REGION, MPI_BYTE, win));
    MPI_CHK(MPI_Win_flush(next, win));
    memset(in, 0, sizeof in);
    MPI_CHK(MPI_Get(in, 3 * REGION, MPI_BYTE, next, base, 3 * REGION, MPI_BYTE, win));
    MPI_CHK(MPI_Win_flush(next, win));
    CHECK(memcmp(in, out, sizeof in) == 0, "get spanning three regions: bytes differ");
    /* 8 bytes at the end of each region and 8 at the start of the next, as one vector */
    MPI_Datatype straddle;
    MPI_CHK(MPI_Type_vector(2, 16, REGION, MPI_BYTE, &straddle));
    MPI_CHK(MPI_Type_commit(&straddle));
    unsigned char pieces[32];
    MPI_CHK(MPI_Get(pieces, 32, MPI_BYTE, next, base + REGION - 8, 1, straddle, win));
    MPI_CHK(MPI_Win_flush(next, win));
    for (int i = 0; i < 32; i++) {
        const int at = REGION - 8 + (i / 16) * REGION + i % 16;
        CHECK(pieces[i] == out[at], "strided get: byte %d is %d, expected %d", i, pieces[i],
              out[at]);
    }
    MPI_CHK(MPI_Type_free(&straddle));
    /* an accumulate over the middle 2 * REGION bytes (ints) */
    int ones[2 * REGION / sizeof(int)];
    for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++)
        ones[i] = 1;
    const int nints = (int) (sizeof ones / sizeof ones[0]);
    MPI_CHK(MPI_Accumulate(ones, nints, MPI_INT, next, base + REGION / 2, nints, MPI_INT, MPI_SUM,
                           win));
    MPI_CHK(MPI_Win_unlock(next, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    /* What arrived here, from prev. */
    {
        unsigned char expect[3 * REGION];
        for (int i = 0; i < 3 * REGION; i++)
            expect[i] = pattern(prev, i);
        for (int i = 0; i < nints; i++) {
            int v;
            memcpy(&v, expect + REGION / 2 + i * sizeof(int), sizeof v);
            v += 1;
            memcpy(expect + REGION / 2 + i * sizeof(int), &v, sizeof v);
        }
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win));
        CHECK(memcmp(buf, expect, 3 * REGION) == 0, "put + accumulate spanning three regions: "
                                                    "the target's bytes differ");
        MPI_CHK(MPI_Win_unlock(me, win));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* (c) the middle region detached: spanning accesses are refused, nothing written. */
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win));
    memset(buf, 0xab, 3 * REGION);
    MPI_CHK(MPI_Win_unlock(me, win));
    MPI_CHK(MPI_Win_detach(win, buf + REGION));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win));
    rt_expect_error(MPI_Put(out, 3 * REGION, MPI_BYTE, next, base, 3 * REGION, MPI_BYTE, win),
                    MPI_ERR_RMA_RANGE, "MPI_Put", "dynamic, middle region detached");
    rt_expect_error(MPI_Put(out, REGION, MPI_BYTE, next, base + REGION / 2, REGION, MPI_BYTE, win),
                    MPI_ERR_RMA_RANGE, "MPI_Put", "dynamic, into the detached region");
    memset(in, 0, sizeof in);
    rt_expect_error(MPI_Get(in, 3 * REGION, MPI_BYTE, next, base, 3 * REGION, MPI_BYTE, win),
                    MPI_ERR_RMA_RANGE, "MPI_Get", "dynamic, middle region detached");
    /* still attached: the first region alone */
    MPI_CHK(MPI_Put(out, REGION, MPI_BYTE, next, base, REGION, MPI_BYTE, win));
    MPI_CHK(MPI_Win_unlock(next, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win));
    for (int i = 0; i < 3 * REGION; i++) {
        const unsigned char want = i < REGION ? pattern(prev, i) : 0xab;
        CHECK(buf[i] == want, "after the refused accesses: byte %d is %d, expected %d", i, buf[i],
              want);
    }
    MPI_CHK(MPI_Win_unlock(me, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* (d) detach all: refused; re-attach as two regions: spanning works again. */
    MPI_CHK(MPI_Win_detach(win, buf));
    MPI_CHK(MPI_Win_detach(win, buf + 2 * REGION));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win));
    rt_expect_error(MPI_Get(in, 1, MPI_BYTE, next, base, 1, MPI_BYTE, win), MPI_ERR_RMA_RANGE,
                    "MPI_Get", "dynamic, all detached");
    MPI_CHK(MPI_Win_unlock(next, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_attach(win, buf + 3 * REGION / 2, 3 * REGION / 2));
    MPI_CHK(MPI_Win_attach(win, buf, 3 * REGION / 2));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 3 * REGION; i++)
        out[i] = pattern(me + 7, i);
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win));
    MPI_CHK(MPI_Put(out, 3 * REGION, MPI_BYTE, next, base, 3 * REGION, MPI_BYTE, win));
    MPI_CHK(MPI_Win_flush(next, win));
    memset(in, 0, sizeof in);
    MPI_CHK(MPI_Get(in, 3 * REGION, MPI_BYTE, next, base, 3 * REGION, MPI_BYTE, win));
    MPI_CHK(MPI_Win_unlock(next, win));
    CHECK(memcmp(in, out, sizeof in) == 0, "re-attached: get spanning two regions: bytes differ");
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_detach(win, buf));
    MPI_CHK(MPI_Win_detach(win, buf + 3 * REGION / 2));
    free(buf);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    me = rt_rank();
    nprocs = rt_nprocs();
    int nappend = argc > 1 ? atoi(argv[1]) : 1000;
    if (nappend < 1)
        nappend = 1000;
    MPI_CHK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    linked_list(nappend);
    back_to_back();
    MPI_CHK(MPI_Win_free(&win));
    return rt_finalize();
}
