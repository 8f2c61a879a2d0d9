/*
 * shared_progress: MPICH's blocking calls progress nbrma (one progress for both engines).
 *
 * Rank 0 sends a token to rank 1 and then waits for rank 1's reply in one of MPICH's
 * blocking calls (the "method"): MPI_Recv, MPI_Wait, MPI_Waitall, MPI_Waitany,
 * MPI_Waitsome, MPI_Probe + MPI_Recv, a loop of MPI_Iprobe + MPI_Recv, MPI_Sendrecv
 * (which also carries the token), MPI_Barrier, MPI_Bcast, MPI_Allreduce. Rank 1 receives the token, then needs rank 0's
 * nbrma progress to finish its own RMA, and only then replies. Two scenarios:
 *
 *   deferred  before sending the token, rank 0 opens MPIX_Win_istart toward rank 1,
 *             puts a value and closes with MPIX_Win_icomplete. Rank 1 posts only after
 *             the token, so rank 0's epoch is still deferred when rank 0 starts waiting:
 *             the grant, the replay of the put and the done notice all happen in rank
 *             0's progress, inside the blocking call. Rank 1 waits (MPI_Win_wait), checks
 *             the value and replies. Without shared progress this deadlocks on every
 *             transport: rank 1 sits in MPI_Win_wait, rank 0 in the blocking call.
 *   passive   rank 1 does MPI_Win_lock / MPI_Put / MPI_Win_unlock on rank 0's window,
 *             then replies; rank 0 checks its memory. On shared memory nbrma's passive
 *             target needs nothing from rank 0; where the transport serves peers in
 *             software (NBRMA_TRANSPORT=ucx, UCX_TLS=tcp) rank 0's progress is needed,
 *             and without shared progress this deadlocks.
 *
 * Checked: every reply arrives (the run ends at all), the value arrived where it was
 * put, and rank 0's icomplete request completes. Each case runs ROUNDS times.
 * 2 processes (more are allowed and stay idle).
 */
#include "rmatest.h"

#define ROUNDS 5
#define TOKEN_TAG 71
#define REPLY_TAG 72

enum method { M_RECV, M_WAIT, M_WAITALL, M_WAITANY, M_WAITSOME, M_PROBE, M_IPROBE,
              M_SENDRECV, M_BARRIER, M_BCAST, M_ALLREDUCE, NMETHODS };
static const char *method_names[NMETHODS] = { "MPI_Recv", "MPI_Wait", "MPI_Waitall",
                                              "MPI_Waitany", "MPI_Waitsome", "MPI_Probe",
                                              "MPI_Iprobe", "MPI_Sendrecv", "MPI_Barrier",
                                              "MPI_Bcast", "MPI_Allreduce" };
enum scenario { S_DEFERRED, S_PASSIVE, NSCENARIOS };
static const char *scenario_names[NSCENARIOS] = { "deferred", "passive" };

static MPI_Comm pair;
static MPI_Group peer_group; /* {the other rank of the pair} */
static int *memory;
static MPI_Win win;

/* Rank 0: sends the token (unless the method carries it) and blocks in `method` until
 * rank 1's reply; returns the reply. */
static int waiter(enum method m, int token)
{
    int reply = -1, other = -1, index = -1, outcount = 0;
    MPI_Request requests[2];
    MPI_Status status;
    if (m != M_SENDRECV)
        MPI_CHK(MPI_Send(&token, 1, MPI_INT, 1, TOKEN_TAG, pair));
    switch (m) {
    case M_RECV:
        MPI_CHK(MPI_Recv(&reply, 1, MPI_INT, 1, REPLY_TAG, pair, MPI_STATUS_IGNORE));
        break;
    case M_WAIT:
        MPI_CHK(MPI_Irecv(&reply, 1, MPI_INT, 1, REPLY_TAG, pair, &requests[0]));
        MPI_CHK(MPI_Wait(&requests[0], &status));
        CHECK(status.MPI_SOURCE == 1, "MPI_Wait: source %d", status.MPI_SOURCE);
        break;
    case M_WAITALL: /* the reply and a second message rank 1 sends right after it */
        MPI_CHK(MPI_Irecv(&reply, 1, MPI_INT, 1, REPLY_TAG, pair, &requests[0]));
        MPI_CHK(MPI_Irecv(&other, 1, MPI_INT, 1, REPLY_TAG + 1, pair, &requests[1]));
        MPI_CHK(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
        CHECK(other == token + 1, "MPI_Waitall: second message %d, expected %d", other,
              token + 1);
        break;
    case M_WAITANY:
        requests[0] = MPI_REQUEST_NULL;
        MPI_CHK(MPI_Irecv(&reply, 1, MPI_INT, 1, REPLY_TAG, pair, &requests[1]));
        MPI_CHK(MPI_Waitany(2, requests, &index, MPI_STATUS_IGNORE));
        CHECK(index == 1, "MPI_Waitany: index %d, expected 1", index);
        break;
    case M_WAITSOME:
        MPI_CHK(MPI_Irecv(&reply, 1, MPI_INT, 1, REPLY_TAG, pair, &requests[0]));
        MPI_CHK(MPI_Waitsome(1, requests, &outcount, &index, MPI_STATUSES_IGNORE));
        CHECK(outcount == 1 && index == 0, "MPI_Waitsome: outcount %d index %d", outcount,
              index);
        break;
    case M_PROBE:
        MPI_CHK(MPI_Probe(1, REPLY_TAG, pair, &status));
        CHECK(status.MPI_TAG == REPLY_TAG, "MPI_Probe: tag %d", status.MPI_TAG);
        MPI_CHK(MPI_Recv(&reply, 1, MPI_INT, 1, REPLY_TAG, pair, MPI_STATUS_IGNORE));
        break;
    case M_IPROBE: /* a poll loop: nbrma progresses in each MPI_Iprobe */
        for (int found = 0; !found;)
            MPI_CHK(MPI_Iprobe(1, REPLY_TAG, pair, &found, &status));
        CHECK(status.MPI_TAG == REPLY_TAG, "MPI_Iprobe: tag %d", status.MPI_TAG);
        MPI_CHK(MPI_Recv(&reply, 1, MPI_INT, 1, REPLY_TAG, pair, MPI_STATUS_IGNORE));
        break;
    case M_SENDRECV:
        MPI_CHK(MPI_Sendrecv(&token, 1, MPI_INT, 1, TOKEN_TAG, &reply, 1, MPI_INT, 1, REPLY_TAG,
                             pair, MPI_STATUS_IGNORE));
        break;
    case M_BARRIER: /* the reply comes after the barrier */
        MPI_CHK(MPI_Barrier(pair));
        MPI_CHK(MPI_Recv(&reply, 1, MPI_INT, 1, REPLY_TAG, pair, MPI_STATUS_IGNORE));
        break;
    case M_BCAST:
        MPI_CHK(MPI_Bcast(&reply, 1, MPI_INT, 1, pair));
        break;
    case M_ALLREDUCE:
        other = 0;
        MPI_CHK(MPI_Allreduce(&other, &reply, 1, MPI_INT, MPI_SUM, pair));
        break;
    default:
        break;
    }
    return reply;
}

/* Rank 1: the counterpart of waiter(): sends `reply` the way rank 0 waits for it. */
static void replier(enum method m, int reply)
{
    int ignored;
    switch (m) {
    case M_BARRIER:
        MPI_CHK(MPI_Barrier(pair));
        MPI_CHK(MPI_Send(&reply, 1, MPI_INT, 0, REPLY_TAG, pair));
        break;
    case M_BCAST:
        MPI_CHK(MPI_Bcast(&reply, 1, MPI_INT, 1, pair));
        break;
    case M_ALLREDUCE:
        MPI_CHK(MPI_Allreduce(&reply, &ignored, 1, MPI_INT, MPI_SUM, pair));
        break;
    case M_WAITALL:
        MPI_CHK(MPI_Send(&reply, 1, MPI_INT, 0, REPLY_TAG, pair));
        ignored = reply + 1;
        MPI_CHK(MPI_Send(&ignored, 1, MPI_INT, 0, REPLY_TAG + 1, pair));
        break;
    default:
        MPI_CHK(MPI_Send(&reply, 1, MPI_INT, 0, REPLY_TAG, pair));
        break;
    }
}

static void run_case(enum scenario s, enum method m, int round, int me)
{
    /* static: a deferred put reads its origin buffer after MPIX_Win_icomplete returned */
    static int value;
    char context[96];
    value = 1000 * (int) s + 100 * (int) m + round + 1;
    snprintf(context, sizeof(context), "%s, rank 0 in %s, round %d", scenario_names[s],
             method_names[m], round);
    if (me == 0) {
        MPI_Request opening = MPI_REQUEST_NULL, closing = MPI_REQUEST_NULL;
        if (s == S_DEFERRED) {
            MPI_CHK(MPIX_Win_istart(peer_group, 0, win, &opening));
            MPI_CHK(MPI_Put(&value, 1, MPI_INT, 1, 0, 1, MPI_INT, win));
            MPI_CHK(MPIX_Win_icomplete(win, &closing));
        }
        const int reply = waiter(m, value);
        CHECK(reply == value, "%s: rank 1 replied %d, expected %d", context, reply, value);
        if (s == S_DEFERRED) {
            MPI_CHK(MPI_Wait(&opening, MPI_STATUS_IGNORE));
            MPI_CHK(MPI_Wait(&closing, MPI_STATUS_IGNORE));
        } else {
            MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            const int seen = *memory;
            MPI_CHK(MPI_Win_unlock(0, win));
            CHECK(seen == value, "%s: rank 0's window holds %d, expected %d", context, seen,
                  value);
        }
    } else if (me == 1) {
        int token = -1, reply;
        MPI_CHK(MPI_Recv(&token, 1, MPI_INT, 0, TOKEN_TAG, pair, MPI_STATUS_IGNORE));
        CHECK(token == value, "%s: token %d, expected %d", context, token, value);
        if (s == S_DEFERRED) {
            MPI_CHK(MPI_Win_post(peer_group, 0, win));
            MPI_CHK(MPI_Win_wait(win));
            reply = *memory; /* what rank 0's put left here */
        } else {
            MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            MPI_CHK(MPI_Put(&value, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
            MPI_CHK(MPI_Win_unlock(0, win));
            reply = value;
        }
        replier(m, reply);
    }
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    int me = rt_rank();
    MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, me < 2 ? 0 : MPI_UNDEFINED, me, &pair));
    if (rt_nprocs() < 2) {
        if (me == 0)
            fprintf(stderr, "shared_progress needs 2 processes\n");
        rt_errs++;
    }
    if (pair != MPI_COMM_NULL) {
        MPI_Group pair_group;
        int other = 1 - me;
        MPI_CHK(MPI_Comm_group(pair, &pair_group));
        MPI_CHK(MPI_Group_incl(pair_group, 1, &other, &peer_group));
        MPI_CHK(MPI_Group_free(&pair_group));
        MPI_CHK(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, pair, &memory, &win));
        MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
        for (int s = 0; s < NSCENARIOS; s++)
            for (int m = 0; m < NMETHODS; m++)
                for (int round = 0; round < ROUNDS; round++)
                    run_case((enum scenario) s, (enum method) m, round, me);
        MPI_CHK(MPI_Win_free(&win));
        MPI_CHK(MPI_Group_free(&peer_group));
        MPI_CHK(MPI_Comm_free(&pair));
    }
    return rt_finalize();
}
