// One progress for both engines (SC14 §VII): MPICH's blocking calls progress nbrma.
//
// nbrma defines the wait/test family, the blocking point-to-point calls that wait and
// the common blocking collectives over MPICH's. While nbrma wants progress (an epoch,
// flush or deferred call is pending, or a window's transport serves its peers in
// software, as UCX over tcp does: engine::progress_wanted()), a wait becomes a loop of
// the MPICH test twin and an nbrma sweep, yielding the CPU when the node is
// oversubscribed; as soon as nbrma wants nothing more, the loop hands the rest of the
// wait to MPICH's own blocking call. With nothing pending the calls go straight to
// MPICH: the only cost is progress_wanted(), a counter and a look at the windows that
// have work (progress/sweep.cpp keeps them on a list: idle windows cost nothing).
// Except on a node whose ranks outnumber its cores: MPICH's blocking calls spin without
// yielding, so a rank waiting there holds the core the rank it waits for needs, and
// every step waits for the scheduler's tick (4 ms); there every wait stays the test
// loop that yields, and the members of a communicator agree on the nonblocking twin
// for its collectives.
//
// The other direction (MPICH progresses while nbrma blocks) is the poke in
// engine::wait_request and the generalized requests' poll_fn (src/mpi/state.cpp).
//
// Collectives run in one form on every member of a communicator, whatever each rank's
// state: MPI forbids matching a blocking collective with a nonblocking one (and MPICH
// really does not match them). The members agree on the form at their first interposed
// collective on it (progress/collective_form.hpp): MPICH's own blocking collective, with an
// engine::Assist keeping nbrma progressing beside it while this rank has work pending
// (progress/assist.hpp; with nothing pending the call costs progress_wanted() and a
// cache lookup), or, where a member runs at MPI_THREAD_MULTIPLE, the nonblocking twin
// plus a sweeping wait.
//
// The nonblocking forms of those collectives are defined too, for the race checker only
// (exchanges below); with it off they are MPICH's behind one branch.
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "check/races.hpp"
#include "common/threads.hpp"
#include "common/yield.hpp"
#include "mpich/complete_request.hpp"
#include "mpich/entry_points.hpp"
#include "mpich/pmpi.hpp"
#include "progress/assist.hpp"
#include "progress/collective_form.hpp"
#include "progress/progress.hpp"

using nbrma::Backoff;
using nbrma::engine::progress_sweep;
using nbrma::engine::progress_wanted;
using nbrma::mpi::CollectiveForm;
namespace mpich = nbrma::mpich;

namespace {

// Whether a wait may be left to MPICH's own blocking call (see above).
bool mpich_may_block() { return !progress_wanted() && !nbrma::oversubscribed(); }

// MPICH's test (`test()`), then one sweep of nbrma, unless the test swept: MPICH's tests
// run the poll_fn of nbrma's own requests (src/mpi/state.cpp), which sweeps (and, finding nothing
// to do on an oversubscribed node, yields). Either way one sweep per call. *idle: this
// call's sweep moved nothing (false where poll_fn swept: it paced the loop itself).
template <class Test>
int test_then_sweep(Test test, bool *idle = nullptr) {
    const unsigned sweeps = nbrma::engine::progress_sweeps_by_this_thread();
    const int error = test();
    const bool swept = nbrma::engine::progress_sweeps_by_this_thread() != sweeps;
    const bool moved = !swept && progress_sweep();
    if (idle) *idle = !swept && !moved;
    return error;
}

// Calls test(&done) and sweeps nbrma until done or an error (a SelfProgress scope); once
// MPICH may block, finishes with block() (MPICH's blocking call) instead, out of it.
template <class Test, class Block>
int progress_until(Test test, Block block) {
    if (!mpich_may_block()) {
        nbrma::engine::SelfProgress self;
        Backoff backoff;
        while (!mpich_may_block()) {
            int done = 0;
            bool idle = false;
            const int error = test_then_sweep([&] { return test(&done); }, &idle);
            if (error != MPI_SUCCESS || done) return error;
            if (idle) backoff.pause();
        }
    }
    return block();
}

int wait_one(MPI_Request *request, MPI_Status *status) {
    return progress_until([&](int *done) { return mpich::Test(request, done, status); },
                          [&] { return mpich::Wait(request, status); });
}

// The nonblocking twin of a blocking call has been started into `request` (or failed
// to start: `error`); waits for it.
int finish(int error, MPI_Request *request, MPI_Status *status = MPI_STATUS_IGNORE) {
    return error != MPI_SUCCESS ? error : wait_one(request, status);
}

// MPICH 4.0.2's MPI_Testall aborts ("Assertion failed ... request_ptr->kind ==
// MPIR_REQUEST_KIND__SEND || ... RECV") when all its requests are complete and the last
// of the batches it takes them in (MPIR_CVAR_REQUEST_BATCH_SIZE, 64) holds no
// generalized request while an earlier one does: an array of nbrma's requests mixes
// generalized ones with complete receives from MPI_PROC_NULL (src/mpi/state.cpp). Its
// MPI_Waitall does not: over more than a few requests, nbrma's MPI_Testall asks each
// request (MPICH's MPI_Request_get_status, which frees nothing; nbrma's sweeps complete
// its generalized requests) and, when all are complete, lets MPICH's MPI_Waitall free
// them and fill the statuses.
int testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
    if (count <= 8) return mpich::Testall(count, requests, flag, statuses);
    nbrma::threads::drain();  // completions the progress thread left to us (poll_fn's job)
    for (int i = 0; i < count; ++i) {
        if (requests[i] == MPI_REQUEST_NULL) continue;
        int done = 0;
        const int error = mpich::Request_get_status(requests[i], &done, MPI_STATUS_IGNORE);
        if (error != MPI_SUCCESS) return error;
        if (!done) {
            *flag = 0;
            return MPI_SUCCESS;
        }
    }
    *flag = 1;
    return mpich::Waitall(count, requests, statuses);
}

int wait_ignoring_status(MPI_Request *request) { return wait_one(request, MPI_STATUS_IGNORE); }

// MPICH's own blocking call `blocking()`, with an engine::Assist serving nbrma meanwhile
// while nbrma wants progress.
template <class Blocking>
int assisted(Blocking blocking) {
    if (!progress_wanted()) return blocking();
    nbrma::engine::Assist assist;
    return blocking();
}

// A blocking collective on `comm`, in the form its members agreed (progress/collective_form.hpp):
// MPICH's own `blocking(args...)`, assisted while nbrma wants progress; or the
// nonblocking `twin(args..., &request)` plus a sweeping wait.
template <class Twin, class Blocking, class... Args>
int run_collective(MPI_Comm comm, Twin twin, Blocking blocking, Args... args) {
    CollectiveForm form = nbrma::mpi::collective_form(comm);
    if (form == CollectiveForm::unknown) {
        const int error = nbrma::mpi::agree_collective_form(comm, &form, wait_ignoring_status);
        if (error != MPI_SUCCESS) return error;
    }
    if (form == CollectiveForm::not_comm) return blocking(args...);  // MPICH reports it
    if (form == CollectiveForm::twin) {
        nbrma::mpi::count_twin_collective();
        MPI_Request request;
        return finish(twin(args..., &request), &request);
    }
    return assisted([&] { return blocking(args...); });
}

// NBRMA_CHECK=races: a collective orders what each member completed before it before what
// every member does after it: the members' clocks at entry, combined by one more
// collective (check/races.hpp). Intercommunicators carry no clocks.
template <class Twin, class Blocking, class... Args>
int collective(MPI_Comm comm, Twin twin, Blocking blocking, Args... args) {
    int inter = 0;
    if (!nbrma::check::enabled() || (PMPI_Comm_test_inter(comm, &inter), inter))
        return run_collective(comm, twin, blocking, args...);
    std::vector<std::uint64_t> clock = nbrma::check::enter_collective();
    int error = run_collective(comm, twin, blocking, args...);
    if (error != MPI_SUCCESS) return error;
    std::vector<std::uint64_t> joined(clock.size());
    error = run_collective(comm, mpich::Iallreduce, mpich::Allreduce, clock.data(), joined.data(),
                           static_cast<int>(clock.size()), MPI_UINT64_T, MPI_MAX, comm);
    if (error == MPI_SUCCESS) nbrma::check::leave_collective(joined);
    return error;
}

// NBRMA_CHECK=races: a nonblocking collective carries clocks as a blocking one does: the
// members' clocks when they start it, combined by an MPI_Iallreduce each member starts
// right after it (so the members start both in the same order), joined when the wait or
// test that completes the application's request (checked::run) has the combination too.
namespace exchanges {

struct Exchange {
    MPI_Request collective;  // the application's request (its handle while pending)
    MPI_Request clocks;      // the MPI_Iallreduce of the clocks
    std::vector<std::uint64_t> mine, joined;
};
std::mutex lock;  // threads start and complete collectives at once
std::vector<std::unique_ptr<Exchange>> pending;
std::atomic<int> count{0};

template <class Start, class... Args>
int start(MPI_Comm comm, Start collective, MPI_Request *request, Args... args) {
    int inter = 0;
    if (!nbrma::check::enabled() || (PMPI_Comm_test_inter(comm, &inter), inter))
        return collective(args..., request);
    auto exchange = std::make_unique<Exchange>();
    exchange->mine = nbrma::check::enter_collective();
    exchange->joined.assign(exchange->mine.size(), 0);
    int error = collective(args..., request);
    if (error != MPI_SUCCESS) return error;
    error = mpich::Iallreduce(exchange->mine.data(), exchange->joined.data(),
                              static_cast<int>(exchange->mine.size()), MPI_UINT64_T, MPI_MAX, comm,
                              &exchange->clocks);
    if (error != MPI_SUCCESS) return error;
    exchange->collective = *request;
    std::lock_guard<std::mutex> guard(lock);
    pending.push_back(std::move(exchange));
    count.fetch_add(1, std::memory_order_release);
    return MPI_SUCCESS;
}

// The requests among `requests` that have an exchange: (index, handle) into *out.
void find(int n, const MPI_Request *requests, std::vector<std::pair<int, MPI_Request>> *out) {
    out->clear();
    if (count.load(std::memory_order_acquire) == 0 || !requests) return;
    std::lock_guard<std::mutex> guard(lock);
    for (int i = 0; i < n; ++i)
        for (const auto &exchange : pending)
            if (exchange->collective == requests[i] && requests[i] != MPI_REQUEST_NULL)
                out->emplace_back(i, requests[i]);
}

// The application's request `handle` completed: waits for its exchange (every member
// started it with the collective) and joins the members' clocks.
void complete(MPI_Request handle) {
    std::unique_ptr<Exchange> exchange;
    {
        std::lock_guard<std::mutex> guard(lock);
        for (auto &candidate : pending)
            if (candidate->collective == handle) {
                exchange = std::move(candidate);
                candidate = std::move(pending.back());
                pending.pop_back();
                count.fetch_sub(1, std::memory_order_release);
                break;
            }
    }
    if (exchange && wait_ignoring_status(&exchange->clocks) == MPI_SUCCESS)
        nbrma::check::leave_collective(exchange->joined);
}

}  // namespace exchanges

}  // namespace

namespace {

// ---- the wait/test family

__attribute__((always_inline)) inline int wait_unchecked(MPI_Request *request, MPI_Status *status) {
    // What nbrma's opening calls and closing calls that completed inside them return:
    // complete, nothing to free (src/mpich/complete_request.cpp).
    if (status == MPI_STATUS_IGNORE && request && nbrma::mpich::is_complete_request(*request)) {
        *request = MPI_REQUEST_NULL;
        return MPI_SUCCESS;
    }
    return wait_one(request, status);
}

int waitall_unchecked(int count, MPI_Request requests[], MPI_Status statuses[]) {
    // nbrma's complete requests (what MPIX_Win_ilock and an iunlock that completed inside
    // its call return, a batch of them in a nonblocking-epoch loop): set to
    // MPI_REQUEST_NULL as MPICH would, without asking it (about 9 ns a transaction in
    // the transactions benchmark). Not with statuses: MPICH writes its own for them.
    const MPI_Request complete = nbrma::mpich::complete_request_handle();
    if (statuses == MPI_STATUSES_IGNORE && complete != MPI_REQUEST_NULL && count > 0 && requests) {
        bool open = false;
        for (int i = 0; i < count; ++i) {
            if (requests[i] == complete)
                requests[i] = MPI_REQUEST_NULL;
            else
                open |= requests[i] != MPI_REQUEST_NULL;
        }
        if (!open) return MPI_SUCCESS;
    }
    return progress_until([&](int *done) { return testall(count, requests, done, statuses); },
                          [&] { return mpich::Waitall(count, requests, statuses); });
}

int waitany_unchecked(int count, MPI_Request requests[], int *index, MPI_Status *status) {
    return progress_until(
        [&](int *done) { return mpich::Testany(count, requests, index, done, status); },
        [&] { return mpich::Waitany(count, requests, index, status); });
}

int waitsome_unchecked(int incount, MPI_Request requests[], int *outcount, int indices[],
                       MPI_Status statuses[]) {
    return progress_until(
        [&](int *done) {
            const int error = mpich::Testsome(incount, requests, outcount, indices, statuses);
            *done = *outcount != 0;  // MPI_UNDEFINED (nothing active) also ends the wait
            return error;
        },
        [&] { return mpich::Waitsome(incount, requests, outcount, indices, statuses); });
}

// The tests sweep nbrma once (test_then_sweep) while it wants progress, so a poll loop
// over two-sided requests moves nbrma's epochs too; with nothing pending they cost
// progress_wanted().
int test_unchecked(MPI_Request *request, int *flag, MPI_Status *status) {
    if (!progress_wanted()) return mpich::Test(request, flag, status);
    return test_then_sweep([&] { return mpich::Test(request, flag, status); });
}

int testall_unchecked(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
    const int error =
        progress_wanted()
            ? test_then_sweep([&] { return testall(count, requests, flag, statuses); })
            : testall(count, requests, flag, statuses);
    // An application polling in a loop shares the CPU on an oversubscribed node, as it
    // does where MPICH's MPI_Testall runs the generalized requests' poll_fn (src/mpi/state.cpp).
    if (error == MPI_SUCCESS && !*flag && count > 8 && nbrma::oversubscribed()) sched_yield();
    return error;
}

int testany_unchecked(int count, MPI_Request requests[], int *index, int *flag,
                      MPI_Status *status) {
    if (!progress_wanted()) return mpich::Testany(count, requests, index, flag, status);
    return test_then_sweep([&] { return mpich::Testany(count, requests, index, flag, status); });
}

int testsome_unchecked(int incount, MPI_Request requests[], int *outcount, int indices[],
                       MPI_Status statuses[]) {
    if (!progress_wanted()) return mpich::Testsome(incount, requests, outcount, indices, statuses);
    return test_then_sweep(
        [&] { return mpich::Testsome(incount, requests, outcount, indices, statuses); });
}

// NBRMA_CHECK=races: a completed receive orders what its sender completed before it
// before what the receiver does after it. A request does not tell its communicator, so
// the receiver joins every node-local rank's published clock (check::acquire_node): it
// may miss a race, never invent one. Statuses the application ignores are asked for,
// unless no request can be a receive (nbrma's complete requests, which MPIX_Win_ilock
// and a closing call that completed inside it return, carry a status of source 0).
namespace checked {

// `collectives`: the indices (ascending) of nonblocking collectives, whose clocks their
// exchange carries exactly.
bool may_receive(int count, const MPI_Request *requests,
                 const std::vector<std::pair<int, MPI_Request>> &collectives) {
    if (!requests) return true;  // erroneous: MPICH's wait reports it
    auto collective = collectives.begin();
    for (int i = 0; i < count; ++i) {
        if (collective != collectives.end() && collective->first == i) {
            ++collective;
            continue;
        }
        if (requests[i] != MPI_REQUEST_NULL && !nbrma::mpich::is_complete_request(requests[i]))
            return true;
    }
    return false;
}

// Runs call(statuses, &completed) (the wait or test, unchecked; `completed`: how many
// statuses it filled) over `count` requests, the application's statuses `given`.
template <class Call>
__attribute__((noinline, cold)) int run(int count, const MPI_Request *requests, MPI_Status *given,
                                        Call call) {
    int completed = 0;
    // Nonblocking collectives among them: their clocks join once they completed (freed)
    std::vector<std::pair<int, MPI_Request>> collectives;
    exchanges::find(count, requests, &collectives);
    struct Joined {
        const MPI_Request *requests;
        const std::vector<std::pair<int, MPI_Request>> &collectives;
        ~Joined() {
            for (const auto &[index, handle] : collectives)
                if (requests[index] == MPI_REQUEST_NULL) exchanges::complete(handle);
        }
    } joined{requests, collectives};
    if (!may_receive(count, requests, collectives)) {
        const int error = call(given, &completed);
        nbrma::check::synchronized();  // an nbrma request's epoch may have acquired
        return error;
    }
    MPI_Status few[4];
    std::vector<MPI_Status> more;
    MPI_Status *use = given;
    if (given == MPI_STATUSES_IGNORE) {
        MPI_Status blank{};
        blank.MPI_SOURCE = blank.MPI_TAG = -1;
        const std::size_t n = static_cast<std::size_t>(count > 0 ? count : 1);
        if (n <= 4) {
            std::fill(few, few + n, blank);
            use = few;
        } else {
            more.assign(n, blank);
            use = more.data();
        }
    }
    const int error = call(use, &completed);
    nbrma::check::synchronized();
    for (int i = 0; i < completed; ++i)
        if (use[i].MPI_SOURCE >= 0 && use[i].MPI_TAG >= 0) {
            nbrma::check::acquire_node();
            break;
        }
    return error;
}

}  // namespace checked

int wait_impl(MPI_Request *request, MPI_Status *status) {
    if (!nbrma::check::enabled()) return wait_unchecked(request, status);
    return checked::run(1, request, status, [=](MPI_Status *use, int *completed) {
        *completed = 1;
        return wait_unchecked(request, use);
    });
}

int waitall_impl(int count, MPI_Request requests[], MPI_Status statuses[]) {
    if (!nbrma::check::enabled()) return waitall_unchecked(count, requests, statuses);
    return checked::run(count, requests, statuses, [=](MPI_Status *use, int *completed) {
        *completed = count;
        return waitall_unchecked(count, requests, use);
    });
}

int waitany_impl(int count, MPI_Request requests[], int *index, MPI_Status *status) {
    if (!nbrma::check::enabled()) return waitany_unchecked(count, requests, index, status);
    return checked::run(count, requests, status, [=](MPI_Status *use, int *completed) {
        const int error = waitany_unchecked(count, requests, index, use);
        *completed = *index != MPI_UNDEFINED;
        return error;
    });
}

int waitsome_impl(int incount, MPI_Request requests[], int *outcount, int indices[],
                  MPI_Status statuses[]) {
    if (!nbrma::check::enabled())
        return waitsome_unchecked(incount, requests, outcount, indices, statuses);
    return checked::run(incount, requests, statuses, [=](MPI_Status *use, int *completed) {
        const int error = waitsome_unchecked(incount, requests, outcount, indices, use);
        *completed = *outcount != MPI_UNDEFINED ? *outcount : 0;
        return error;
    });
}

int test_impl(MPI_Request *request, int *flag, MPI_Status *status) {
    if (!nbrma::check::enabled()) return test_unchecked(request, flag, status);
    return checked::run(1, request, status, [=](MPI_Status *use, int *completed) {
        const int error = test_unchecked(request, flag, use);
        *completed = *flag;
        return error;
    });
}

int testall_impl(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
    if (!nbrma::check::enabled()) return testall_unchecked(count, requests, flag, statuses);
    return checked::run(count, requests, statuses, [=](MPI_Status *use, int *completed) {
        const int error = testall_unchecked(count, requests, flag, use);
        *completed = *flag ? count : 0;
        return error;
    });
}

int testany_impl(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status) {
    if (!nbrma::check::enabled()) return testany_unchecked(count, requests, index, flag, status);
    return checked::run(count, requests, status, [=](MPI_Status *use, int *completed) {
        const int error = testany_unchecked(count, requests, index, flag, use);
        *completed = *flag && *index != MPI_UNDEFINED;
        return error;
    });
}

int testsome_impl(int incount, MPI_Request requests[], int *outcount, int indices[],
                  MPI_Status statuses[]) {
    if (!nbrma::check::enabled())
        return testsome_unchecked(incount, requests, outcount, indices, statuses);
    return checked::run(incount, requests, statuses, [=](MPI_Status *use, int *completed) {
        const int error = testsome_unchecked(incount, requests, outcount, indices, use);
        *completed = *outcount != MPI_UNDEFINED ? *outcount : 0;
        return error;
    });
}

// A poll loop on MPI_Iprobe is a wait too: sweep before asking MPICH, as the tests do.
int iprobe_impl(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
    if (progress_wanted()) progress_sweep();
    return mpich::Iprobe(source, tag, comm, flag, status);
}

// MPICH's MPI_Request_get_status does not run a generalized request's poll_fn: sweep,
// and hand the completions the progress thread queued to MPICH, before asking it.
int request_get_status_impl(MPI_Request request, int *flag, MPI_Status *status) {
    if (progress_wanted()) progress_sweep();
    nbrma::threads::drain();
    return mpich::Request_get_status(request, flag, status);
}

// ---- blocking point-to-point

int recv_unchecked(void *buffer, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                   MPI_Status *status) {
    if (mpich_may_block()) return mpich::Recv(buffer, count, type, source, tag, comm, status);
    MPI_Request request;
    return finish(PMPI_Irecv(buffer, count, type, source, tag, comm, &request), &request, status);
}

// NBRMA_CHECK=races: a message orders what its sender completed before it before what its
// receiver does after it.
int recv_impl(void *buffer, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Status *status) {
    if (!nbrma::check::enabled())
        return recv_unchecked(buffer, count, type, source, tag, comm, status);
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    const int error = recv_unchecked(buffer, count, type, source, tag, comm, status);
    if (error == MPI_SUCCESS) nbrma::check::acquire_from(comm, status->MPI_SOURCE);
    return error;
}

int send_impl(const void *buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    if (nbrma::check::enabled()) nbrma::check::release();
    if (mpich_may_block()) return mpich::Send(buffer, count, type, dest, tag, comm);
    MPI_Request request;
    return finish(PMPI_Isend(buffer, count, type, dest, tag, comm, &request), &request);
}

int ssend_impl(const void *buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    if (nbrma::check::enabled()) nbrma::check::release();
    if (mpich_may_block()) return mpich::Ssend(buffer, count, type, dest, tag, comm);
    MPI_Request request;
    return finish(PMPI_Issend(buffer, count, type, dest, tag, comm, &request), &request);
}

int sendrecv_unchecked(const void *send_buffer, int send_count, MPI_Datatype send_type, int dest,
                       int send_tag, void *recv_buffer, int recv_count, MPI_Datatype recv_type,
                       int source, int recv_tag, MPI_Comm comm, MPI_Status *status) {
    if (mpich_may_block())
        return mpich::Sendrecv(send_buffer, send_count, send_type, dest, send_tag, recv_buffer,
                               recv_count, recv_type, source, recv_tag, comm, status);
    MPI_Request requests[2];
    int error =
        PMPI_Irecv(recv_buffer, recv_count, recv_type, source, recv_tag, comm, &requests[0]);
    if (error != MPI_SUCCESS) return error;
    error = PMPI_Isend(send_buffer, send_count, send_type, dest, send_tag, comm, &requests[1]);
    if (error != MPI_SUCCESS) {
        PMPI_Cancel(&requests[0]);
        PMPI_Request_free(&requests[0]);
        return error;
    }
    MPI_Status statuses[2];
    error = waitall_impl(2, requests, statuses);
    if (status != MPI_STATUS_IGNORE) *status = statuses[0];
    if (error == MPI_ERR_IN_STATUS)  // Sendrecv reports the failing half's own error
        error =
            statuses[0].MPI_ERROR != MPI_SUCCESS ? statuses[0].MPI_ERROR : statuses[1].MPI_ERROR;
    return error;
}

int sendrecv_impl(const void *send_buffer, int send_count, MPI_Datatype send_type, int dest,
                  int send_tag, void *recv_buffer, int recv_count, MPI_Datatype recv_type,
                  int source, int recv_tag, MPI_Comm comm, MPI_Status *status) {
    if (!nbrma::check::enabled())
        return sendrecv_unchecked(send_buffer, send_count, send_type, dest, send_tag, recv_buffer,
                                  recv_count, recv_type, source, recv_tag, comm, status);
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    nbrma::check::release();
    const int error =
        sendrecv_unchecked(send_buffer, send_count, send_type, dest, send_tag, recv_buffer,
                           recv_count, recv_type, source, recv_tag, comm, status);
    if (error == MPI_SUCCESS) nbrma::check::acquire_from(comm, status->MPI_SOURCE);
    return error;
}

// MPICH's blocking call, assisted while nbrma wants progress: MPICH 4.0.2's
// MPI_Isendrecv_replace completes with MPI_SOURCE 0 whatever the sender.
int sendrecv_replace_impl(void *buffer, int count, MPI_Datatype type, int dest, int send_tag,
                          int source, int recv_tag, MPI_Comm comm, MPI_Status *status) {
    auto run = [&](MPI_Status *into) {
        return assisted([&] {
            return mpich::Sendrecv_replace(buffer, count, type, dest, send_tag, source, recv_tag,
                                           comm, into);
        });
    };
    if (!nbrma::check::enabled()) return run(status);
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    nbrma::check::release();
    const int error = run(status);
    if (error == MPI_SUCCESS) nbrma::check::acquire_from(comm, status->MPI_SOURCE);
    return error;
}

int probe_impl(int source, int tag, MPI_Comm comm, MPI_Status *status) {
    return progress_until(
        [&](int *found) { return mpich::Iprobe(source, tag, comm, found, status); },
        [&] { return mpich::Probe(source, tag, comm, status); });
}

// ---- blocking collectives (in the form the communicator's members agreed; see the file
// comment)

int barrier_impl(MPI_Comm comm) { return collective(comm, mpich::Ibarrier, mpich::Barrier, comm); }

int bcast_impl(void *buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
    return collective(comm, mpich::Ibcast, mpich::Bcast, buffer, count, type, root, comm);
}

int reduce_impl(const void *send_buffer, void *recv_buffer, int count, MPI_Datatype type, MPI_Op op,
                int root, MPI_Comm comm) {
    return collective(comm, mpich::Ireduce, mpich::Reduce, send_buffer, recv_buffer, count, type,
                      op, root, comm);
}

int allreduce_impl(const void *send_buffer, void *recv_buffer, int count, MPI_Datatype type,
                   MPI_Op op, MPI_Comm comm) {
    return collective(comm, mpich::Iallreduce, mpich::Allreduce, send_buffer, recv_buffer, count,
                      type, op, comm);
}

int gather_impl(const void *send_buffer, int send_count, MPI_Datatype send_type, void *recv_buffer,
                int recv_count, MPI_Datatype recv_type, int root, MPI_Comm comm) {
    return collective(comm, mpich::Igather, mpich::Gather, send_buffer, send_count, send_type,
                      recv_buffer, recv_count, recv_type, root, comm);
}

int scatter_impl(const void *send_buffer, int send_count, MPI_Datatype send_type, void *recv_buffer,
                 int recv_count, MPI_Datatype recv_type, int root, MPI_Comm comm) {
    return collective(comm, mpich::Iscatter, mpich::Scatter, send_buffer, send_count, send_type,
                      recv_buffer, recv_count, recv_type, root, comm);
}

int allgather_impl(const void *send_buffer, int send_count, MPI_Datatype send_type,
                   void *recv_buffer, int recv_count, MPI_Datatype recv_type, MPI_Comm comm) {
    return collective(comm, mpich::Iallgather, mpich::Allgather, send_buffer, send_count, send_type,
                      recv_buffer, recv_count, recv_type, comm);
}

int alltoall_impl(const void *send_buffer, int send_count, MPI_Datatype send_type,
                  void *recv_buffer, int recv_count, MPI_Datatype recv_type, MPI_Comm comm) {
    return collective(comm, mpich::Ialltoall, mpich::Alltoall, send_buffer, send_count, send_type,
                      recv_buffer, recv_count, recv_type, comm);
}

int allgatherv_impl(const void *send_buffer, int send_count, MPI_Datatype send_type,
                    void *recv_buffer, const int recv_counts[], const int displacements[],
                    MPI_Datatype recv_type, MPI_Comm comm) {
    return collective(comm, mpich::Iallgatherv, mpich::Allgatherv, send_buffer, send_count,
                      send_type, recv_buffer, recv_counts, displacements, recv_type, comm);
}

int alltoallv_impl(const void *send_buffer, const int send_counts[], const int send_displacements[],
                   MPI_Datatype send_type, void *recv_buffer, const int recv_counts[],
                   const int recv_displacements[], MPI_Datatype recv_type, MPI_Comm comm) {
    return collective(comm, mpich::Ialltoallv, mpich::Alltoallv, send_buffer, send_counts,
                      send_displacements, send_type, recv_buffer, recv_counts, recv_displacements,
                      recv_type, comm);
}

int alltoallw_impl(const void *send_buffer, const int send_counts[], const int send_displacements[],
                   const MPI_Datatype send_types[], void *recv_buffer, const int recv_counts[],
                   const int recv_displacements[], const MPI_Datatype recv_types[], MPI_Comm comm) {
    return collective(comm, mpich::Ialltoallw, mpich::Alltoallw, send_buffer, send_counts,
                      send_displacements, send_types, recv_buffer, recv_counts, recv_displacements,
                      recv_types, comm);
}

int gatherv_impl(const void *send_buffer, int send_count, MPI_Datatype send_type, void *recv_buffer,
                 const int recv_counts[], const int displacements[], MPI_Datatype recv_type,
                 int root, MPI_Comm comm) {
    return collective(comm, mpich::Igatherv, mpich::Gatherv, send_buffer, send_count, send_type,
                      recv_buffer, recv_counts, displacements, recv_type, root, comm);
}

int scatterv_impl(const void *send_buffer, const int send_counts[], const int displacements[],
                  MPI_Datatype send_type, void *recv_buffer, int recv_count, MPI_Datatype recv_type,
                  int root, MPI_Comm comm) {
    return collective(comm, mpich::Iscatterv, mpich::Scatterv, send_buffer, send_counts,
                      displacements, send_type, recv_buffer, recv_count, recv_type, root, comm);
}

int reduce_scatter_impl(const void *send_buffer, void *recv_buffer, const int recv_counts[],
                        MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
    return collective(comm, mpich::Ireduce_scatter, mpich::Reduce_scatter, send_buffer, recv_buffer,
                      recv_counts, type, op, comm);
}

int reduce_scatter_block_impl(const void *send_buffer, void *recv_buffer, int recv_count,
                              MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
    return collective(comm, mpich::Ireduce_scatter_block, mpich::Reduce_scatter_block, send_buffer,
                      recv_buffer, recv_count, type, op, comm);
}

int scan_impl(const void *send_buffer, void *recv_buffer, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm) {
    return collective(comm, mpich::Iscan, mpich::Scan, send_buffer, recv_buffer, count, type, op,
                      comm);
}

int exscan_impl(const void *send_buffer, void *recv_buffer, int count, MPI_Datatype type, MPI_Op op,
                MPI_Comm comm) {
    return collective(comm, mpich::Iexscan, mpich::Exscan, send_buffer, recv_buffer, count, type,
                      op, comm);
}

int ibarrier_impl(MPI_Comm comm, MPI_Request *request) {
    return exchanges::start(comm, mpich::Ibarrier, request, comm);
}

int ibcast_impl(void *buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,
                MPI_Request *request) {
    return exchanges::start(comm, mpich::Ibcast, request, buffer, count, type, root, comm);
}

int ireduce_impl(const void *send_buffer, void *recv_buffer, int count, MPI_Datatype type,
                 MPI_Op op, int root, MPI_Comm comm, MPI_Request *request) {
    return exchanges::start(comm, mpich::Ireduce, request, send_buffer, recv_buffer, count, type,
                            op, root, comm);
}

int iallreduce_impl(const void *send_buffer, void *recv_buffer, int count, MPI_Datatype type,
                    MPI_Op op, MPI_Comm comm, MPI_Request *request) {
    return exchanges::start(comm, mpich::Iallreduce, request, send_buffer, recv_buffer, count, type,
                            op, comm);
}

int igather_impl(const void *send_buffer, int send_count, MPI_Datatype send_type, void *recv_buffer,
                 int recv_count, MPI_Datatype recv_type, int root, MPI_Comm comm,
                 MPI_Request *request) {
    return exchanges::start(comm, mpich::Igather, request, send_buffer, send_count, send_type,
                            recv_buffer, recv_count, recv_type, root, comm);
}

int iscatter_impl(const void *send_buffer, int send_count, MPI_Datatype send_type,
                  void *recv_buffer, int recv_count, MPI_Datatype recv_type, int root,
                  MPI_Comm comm, MPI_Request *request) {
    return exchanges::start(comm, mpich::Iscatter, request, send_buffer, send_count, send_type,
                            recv_buffer, recv_count, recv_type, root, comm);
}

int iallgather_impl(const void *send_buffer, int send_count, MPI_Datatype send_type,
                    void *recv_buffer, int recv_count, MPI_Datatype recv_type, MPI_Comm comm,
                    MPI_Request *request) {
    return exchanges::start(comm, mpich::Iallgather, request, send_buffer, send_count, send_type,
                            recv_buffer, recv_count, recv_type, comm);
}

int ialltoall_impl(const void *send_buffer, int send_count, MPI_Datatype send_type,
                   void *recv_buffer, int recv_count, MPI_Datatype recv_type, MPI_Comm comm,
                   MPI_Request *request) {
    return exchanges::start(comm, mpich::Ialltoall, request, send_buffer, send_count, send_type,
                            recv_buffer, recv_count, recv_type, comm);
}

int iallgatherv_impl(const void *send_buffer, int send_count, MPI_Datatype send_type,
                     void *recv_buffer, const int recv_counts[], const int displacements[],
                     MPI_Datatype recv_type, MPI_Comm comm, MPI_Request *request) {
    return exchanges::start(comm, mpich::Iallgatherv, request, send_buffer, send_count, send_type,
                            recv_buffer, recv_counts, displacements, recv_type, comm);
}

int ialltoallv_impl(const void *send_buffer, const int send_counts[],
                    const int send_displacements[], MPI_Datatype send_type, void *recv_buffer,
                    const int recv_counts[], const int recv_displacements[], MPI_Datatype recv_type,
                    MPI_Comm comm, MPI_Request *request) {
    return exchanges::start(comm, mpich::Ialltoallv, request, send_buffer, send_counts,
                            send_displacements, send_type, recv_buffer, recv_counts,
                            recv_displacements, recv_type, comm);
}

int ialltoallw_impl(const void *send_buffer, const int send_counts[],
                    const int send_displacements[], const MPI_Datatype send_types[],
                    void *recv_buffer, const int recv_counts[], const int recv_displacements[],
                    const MPI_Datatype recv_types[], MPI_Comm comm, MPI_Request *request) {
    return exchanges::start(comm, mpich::Ialltoallw, request, send_buffer, send_counts,
                            send_displacements, send_types, recv_buffer, recv_counts,
                            recv_displacements, recv_types, comm);
}

int igatherv_impl(const void *send_buffer, int send_count, MPI_Datatype send_type,
                  void *recv_buffer, const int recv_counts[], const int displacements[],
                  MPI_Datatype recv_type, int root, MPI_Comm comm, MPI_Request *request) {
    return exchanges::start(comm, mpich::Igatherv, request, send_buffer, send_count, send_type,
                            recv_buffer, recv_counts, displacements, recv_type, root, comm);
}

int iscatterv_impl(const void *send_buffer, const int send_counts[], const int displacements[],
                   MPI_Datatype send_type, void *recv_buffer, int recv_count,
                   MPI_Datatype recv_type, int root, MPI_Comm comm, MPI_Request *request) {
    return exchanges::start(comm, mpich::Iscatterv, request, send_buffer, send_counts,
                            displacements, send_type, recv_buffer, recv_count, recv_type, root,
                            comm);
}

int ireduce_scatter_impl(const void *send_buffer, void *recv_buffer, const int recv_counts[],
                         MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *request) {
    return exchanges::start(comm, mpich::Ireduce_scatter, request, send_buffer, recv_buffer,
                            recv_counts, type, op, comm);
}

int ireduce_scatter_block_impl(const void *send_buffer, void *recv_buffer, int recv_count,
                               MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *request) {
    return exchanges::start(comm, mpich::Ireduce_scatter_block, request, send_buffer, recv_buffer,
                            recv_count, type, op, comm);
}

int iscan_impl(const void *send_buffer, void *recv_buffer, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm, MPI_Request *request) {
    return exchanges::start(comm, mpich::Iscan, request, send_buffer, recv_buffer, count, type, op,
                            comm);
}

int iexscan_impl(const void *send_buffer, void *recv_buffer, int count, MPI_Datatype type,
                 MPI_Op op, MPI_Comm comm, MPI_Request *request) {
    return exchanges::start(comm, mpich::Iexscan, request, send_buffer, recv_buffer, count, type,
                            op, comm);
}

}  // namespace

// The C entry points and their PMPI_ twins, generated from maint/rma_api.txt.
#include "progress/interposed_waits_bindings.inc"
