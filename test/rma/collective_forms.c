/*
 * collective_forms: every member of a communicator runs an interposed blocking collective
 * in the same form (src/progress/collective_form.hpp).
 *
 * MPI does not match a blocking collective with a nonblocking one. nbrma runs its
 * interposed collectives as MPICH's blocking ones, except on communicators where some
 * member runs at MPI_THREAD_MULTIPLE or on a node with more ranks than cores: there, on
 * every member, as the nonblocking twin plus a sweeping wait. The members agree at their first collective on a communicator.
 * If any rank chose its form alone, the collectives below would hang (mismatched
 * forms) in the mixed runs.
 *
 * Argument "single": every rank calls MPI_Init. "multiple=R": rank R calls
 * MPI_Init_thread(MPI_THREAD_MULTIPLE), the others MPI_Init. Unless "oversubscribed" is
 * given too, each rank sets MPI_LOCALNRANKS (the launcher's count of the node's ranks)
 * to 1 before MPI_Init, so that nbrma chooses by thread levels alone, as on a node with
 * a core per rank (no window tells it otherwise); with it, every form is the twin where
 * the node's ranks outnumber its cores. Then, each with every
 * result checked and the counter "twin_collectives" checked to grow on a communicator
 * exactly when a member of it is the MPI_THREAD_MULTIPLE rank:
 *   world      all 8 interposed collectives on MPI_COMM_WORLD;
 *   dup        the same on a duplicate (no new agreement: it inherits the form);
 *   split      {R} and the others apart: the MPI_THREAD_MULTIPLE rank alone (twin), the
 *              others together (MPICH's blocking collectives);
 *   inter      an intercommunicator between those two groups: barrier, bcast and
 *              allreduce (each group receives the other's sum), twin on both sides;
 *   reuse      20 communicators created and freed in turn, containing R or not by
 *              turn: MPICH reuses freed handles, and a form cached for a freed
 *              handle must not be taken for the next communicator (one agreement each);
 *   errors     MPI_Barrier and MPI_Allreduce on MPI_COMM_NULL return MPI_ERR_COMM
 *              (MPI_ERRORS_RETURN on MPI_COMM_WORLD).
 * Argument "tcp_window" (with "single"): then a window of MPI_COMM_WORLD whose transport
 * serves its peers in software (nbrma_transport=ucx, NBRMA_UCX_TLS=tcp,self): the form
 * on MPI_COMM_WORLD is agreed again at the next collective, and all 8 run as the twin
 * from then on (in MPICH's blocking barrier a target would leave its peers' puts to a
 * starved assist thread); a put around the ring through the window arrives.
 * 3 or more processes.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmatest.h"

#define NCOLL 8

static int me, np, multiple_rank = -1, over = 0, tcp_window = 0;

#define counter rt_counter

/* Runs collective c on the intracommunicator comm and checks its result. */
static void collective(int c, MPI_Comm comm, const char *where)
{
    int rank, size;
    MPI_CHK(MPI_Comm_rank(comm, &rank));
    MPI_CHK(MPI_Comm_size(comm, &size));
    int root = size - 1, one = rank + 1, sum = -1;
    int *all = malloc(sizeof(int) * (size_t) size), *out = malloc(sizeof(int) * (size_t) size);
    for (int i = 0; i < size; i++) {
        all[i] = -1;
        out[i] = 100 * rank + i;
    }
    switch (c) {
    case 0:
        MPI_CHK(MPI_Barrier(comm));
        break;
    case 1:
        sum = rank == root ? 4242 : -1;
        MPI_CHK(MPI_Bcast(&sum, 1, MPI_INT, root, comm));
        CHECK(sum == 4242, "%s: bcast gave %d", where, sum);
        break;
    case 2:
        MPI_CHK(MPI_Reduce(&one, &sum, 1, MPI_INT, MPI_SUM, root, comm));
        if (rank == root)
            CHECK(sum == size * (size + 1) / 2, "%s: reduce gave %d", where, sum);
        break;
    case 3:
        MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm));
        CHECK(sum == size * (size + 1) / 2, "%s: allreduce gave %d", where, sum);
        break;
    case 4:
        MPI_CHK(MPI_Gather(&one, 1, MPI_INT, all, 1, MPI_INT, root, comm));
        if (rank == root)
            for (int i = 0; i < size; i++)
                CHECK(all[i] == i + 1, "%s: gather slot %d = %d", where, i, all[i]);
        break;
    case 5:
        for (int i = 0; i < size; i++)
            all[i] = 7 * i;
        MPI_CHK(MPI_Scatter(all, 1, MPI_INT, &sum, 1, MPI_INT, root, comm));
        CHECK(sum == 7 * rank, "%s: scatter gave %d", where, sum);
        break;
    case 6:
        MPI_CHK(MPI_Allgather(&one, 1, MPI_INT, all, 1, MPI_INT, comm));
        for (int i = 0; i < size; i++)
            CHECK(all[i] == i + 1, "%s: allgather slot %d = %d", where, i, all[i]);
        break;
    case 7:
        MPI_CHK(MPI_Alltoall(out, 1, MPI_INT, all, 1, MPI_INT, comm));
        for (int i = 0; i < size; i++)
            CHECK(all[i] == 100 * i + rank, "%s: alltoall slot %d = %d", where, i, all[i]);
        break;
    }
    free(all);
    free(out);
}

/* All 8 collectives on comm; twin_collectives must grow by 8 exactly when twin. */
static void all_collectives(MPI_Comm comm, int twin, const char *where)
{
    const unsigned long long before = counter("twin_collectives");
    for (int c = 0; c < NCOLL; c++)
        collective(c, comm, where);
    const unsigned long long grew = counter("twin_collectives") - before;
    twin |= over;
    CHECK(grew == (twin ? NCOLL : 0), "%s: %llu of %d collectives ran as the nonblocking twin, "
          "expected %d", where, grew, NCOLL, twin ? NCOLL : 0);
}

int main(int argc, char **argv)
{
    int keep_launcher = 0;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "multiple=", 9) == 0)
            multiple_rank = atoi(argv[i] + 9);
        keep_launcher |= strcmp(argv[i], "oversubscribed") == 0;
        tcp_window |= strcmp(argv[i], "tcp_window") == 0;
    }
    if (tcp_window)
        setenv("NBRMA_UCX_TLS", "tcp,self", 1);
    if (keep_launcher) {
        const char *local = getenv("MPI_LOCALNRANKS");
        over = local && atoi(local) > sysconf(_SC_NPROCESSORS_ONLN);
    } else {
        setenv("MPI_LOCALNRANKS", "1", 1);
    }
    /* which rank am I before MPI_Init? the process manager tells (hydra: PMI_RANK) */
    const char *pmi_rank = getenv("PMI_RANK");
    const int my_rank = pmi_rank ? atoi(pmi_rank) : -2;
    if (multiple_rank >= 0 && my_rank == multiple_rank) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
    } else {
        rt_init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np < 3 || (multiple_rank >= 0 && (pmi_rank == NULL || multiple_rank >= np))) {
        fprintf(stderr, "collective_forms needs 3 or more processes under hydra (PMI_RANK) "
                "and multiple=R with R below their number\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int mixed = multiple_rank >= 0;
    const unsigned long long agreed0 = counter("collective_agreements");

    /* world, then a duplicate (inherits: no agreement) */
    all_collectives(MPI_COMM_WORLD, mixed, "world");
    MPI_Comm dup;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    all_collectives(dup, mixed, "dup");
    CHECK(counter("collective_agreements") - agreed0 == 1,
          "%llu agreements for MPI_COMM_WORLD and its duplicate, expected 1",
          counter("collective_agreements") - agreed0);
    MPI_CHK(MPI_Comm_free(&dup));

    /* split: the MPI_THREAD_MULTIPLE rank (or rank 0) alone, the others together */
    const int lone = mixed ? multiple_rank : 0;
    MPI_Comm part;
    MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, me == lone, me, &part));
    all_collectives(part, mixed && me == lone, "split");

    /* inter: between the two parts; leaders are lone and the lowest other rank */
    const int other_leader = lone == 0 ? 1 : 0;
    MPI_Comm inter;
    MPI_CHK(MPI_Intercomm_create(part, 0, MPI_COMM_WORLD, me == lone ? other_leader : lone, 77,
                                 &inter));
    {
        const unsigned long long before = counter("twin_collectives");
        int remote_size, rank, sum = -1, one = me + 1, value = -1;
        MPI_CHK(MPI_Comm_remote_size(inter, &remote_size));
        MPI_CHK(MPI_Comm_rank(inter, &rank));
        MPI_CHK(MPI_Barrier(inter));
        /* the lone rank's value goes to every other rank */
        if (me == lone)
            value = 31;
        MPI_CHK(MPI_Bcast(&value, 1, MPI_INT, me == lone ? MPI_ROOT : 0, inter));
        if (me != lone)
            CHECK(value == 31, "inter: bcast gave %d", value);
        /* each group receives the sum of the other group's (world rank + 1) */
        MPI_CHK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, inter));
        const int total = np * (np + 1) / 2, lone_part = lone + 1;
        const int expected = me == lone ? total - lone_part : lone_part;
        CHECK(sum == expected, "inter: allreduce gave %d, expected %d", sum, expected);
        const unsigned long long grew = counter("twin_collectives") - before;
        const int twin = mixed || over;
        CHECK(grew == (twin ? 3u : 0u), "inter: %llu of 3 collectives ran as the twin, "
              "expected %d", grew, twin ? 3 : 0);
        (void) remote_size, (void) rank;
    }
    MPI_CHK(MPI_Comm_free(&inter));
    MPI_CHK(MPI_Comm_free(&part));

    /* reuse: freed handles come back for new communicators */
    for (int i = 0; i < 20; i++) {
        const unsigned long long agreed = counter("collective_agreements");
        const int with_lone = i % 2 == 0;
        /* even turns: everybody together; odd turns: lone apart */
        const int color = with_lone ? 0 : me == lone;
        MPI_Comm c;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, color, me, &c));
        char where[32];
        snprintf(where, sizeof where, "reuse %d", i);
        const int has_multiple = (mixed && (with_lone || me == lone)) || over;
        const unsigned long long before = counter("twin_collectives");
        collective(3, c, where);
        collective(0, c, where);
        const unsigned long long grew = counter("twin_collectives") - before;
        CHECK(grew == (has_multiple ? 2u : 0u), "%s: %llu of 2 collectives ran as the twin, "
              "expected %d", where, grew, has_multiple ? 2 : 0);
        CHECK(counter("collective_agreements") - agreed == 1, "%s: %llu agreements, expected 1",
              where, counter("collective_agreements") - agreed);
        MPI_CHK(MPI_Comm_free(&c));
    }

    if (tcp_window) {
        MPI_Info info;
        MPI_CHK(MPI_Info_create(&info));
        MPI_CHK(MPI_Info_set(info, "nbrma_transport", "ucx"));
        int *base = NULL;
        MPI_Win win;
        MPI_CHK(MPI_Win_allocate(sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &base, &win));
        MPI_CHK(MPI_Info_free(&info));
        *base = -1;
        const unsigned long long agreed = counter("collective_agreements");
        all_collectives(MPI_COMM_WORLD, 1, "world with a tcp window");
        CHECK(counter("collective_agreements") - agreed == 1,
              "world with a tcp window: %llu agreements, expected 1",
              counter("collective_agreements") - agreed);
        MPI_CHK(MPI_Win_lock_all(0, win));
        MPI_CHK(MPI_Put(&me, 1, MPI_INT, (me + 1) % np, 0, 1, MPI_INT, win));
        MPI_CHK(MPI_Win_flush((me + 1) % np, win));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Win_sync(win));
        CHECK(*base == (me + np - 1) % np, "tcp window: rank %d holds %d, expected %d", me, *base,
              (me + np - 1) % np);
        MPI_CHK(MPI_Win_unlock_all(win));
        MPI_CHK(MPI_Win_free(&win));
    }

    /* errors: a null communicator is MPICH's MPI_ERR_COMM */
    {
        int sum = 0, one = 1;
        rt_expect_error(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Barrier", "errors");
        rt_expect_error(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL),
                        MPI_ERR_COMM, "MPI_Allreduce", "errors");
    }

    if (me == 0)
        printf("collective_forms (%s): %llu collectives ran as the nonblocking twin on rank 0\n",
               mixed        ? "mixed thread levels"
               : over       ? "oversubscribed"
               : tcp_window ? "single, then a tcp window"
                            : "single",
               counter("twin_collectives"));
    return rt_finalize();
}
