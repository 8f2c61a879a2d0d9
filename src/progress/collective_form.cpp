#include "progress/collective_form.hpp"

#include <cstdint>
#include <mutex>

#include "common/yield.hpp"
#include "mpich/entry_points.hpp"
#include "progress/progress.hpp"

namespace nbrma::mpi {

namespace {

std::uint64_t entry_of(MPI_Comm comm, CollectiveForm form) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(comm)) << 8) |
           static_cast<std::uint64_t>(form);
}

void cache(MPI_Comm comm, CollectiveForm form) {
    detail::form_cache[detail::form_slot(comm)].store(entry_of(comm, form),
                                                      std::memory_order_relaxed);
}

// The communicator is being freed (or MPI finalized): its handle may be reused.
int forget(MPI_Comm comm, int, void *value, void *) {
    std::uint64_t expected =
        entry_of(comm, static_cast<CollectiveForm>(reinterpret_cast<std::intptr_t>(value)));
    detail::form_cache[detail::form_slot(comm)].compare_exchange_strong(expected, 0);
    return MPI_SUCCESS;
}

std::atomic<std::uint64_t> twins{0};
std::atomic<std::uint64_t> agreements{0};

int keyval = MPI_KEYVAL_INVALID;
std::once_flag keyval_made;

int form_keyval() {
    std::call_once(keyval_made, [] {
        // MPI_COMM_DUP_FN: a duplicate has the same members, hence the same form.
        if (PMPI_Comm_create_keyval(MPI_COMM_DUP_FN, forget, &keyval, nullptr) != MPI_SUCCESS)
            keyval = MPI_KEYVAL_INVALID;
    });
    return keyval;
}

// MPICH's handle layout: a communicator's handle has object kind 1 in bits 26-29 and a
// handle kind (bits 30-31) other than 0 (invalid). Anything else is no communicator.
bool plausible_comm(MPI_Comm comm) {
    const auto handle = static_cast<std::uint32_t>(comm);
    return comm != MPI_COMM_NULL && ((handle >> 26) & 0xf) == 1 && (handle >> 30) != 0;
}

}  // namespace

CollectiveForm detail::collective_form_slow(MPI_Comm comm) {
    if (!plausible_comm(comm)) return CollectiveForm::not_comm;
    const int key = form_keyval();
    if (key == MPI_KEYVAL_INVALID) return CollectiveForm::unknown;
    void *value = nullptr;
    int found = 0;
    if (PMPI_Comm_get_attr(comm, key, &value, &found) != MPI_SUCCESS || !found)
        return CollectiveForm::unknown;
    const auto form = static_cast<CollectiveForm>(reinterpret_cast<std::intptr_t>(value));
    cache(comm, form);
    return form;
}

int agree_collective_form(MPI_Comm comm, CollectiveForm *form, int (*wait)(MPI_Request *)) {
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    int wish = level == MPI_THREAD_MULTIPLE || nbrma::oversubscribed() ||
               nbrma::engine::progress_serves_peers(),
        agreed = 0, inter = 0;
    int error = PMPI_Comm_test_inter(comm, &inter);
    MPI_Request request;
    if (error == MPI_SUCCESS)
        error = mpich::Iallreduce(&wish, &agreed, 1, MPI_INT, MPI_MAX, comm, &request);
    if (error == MPI_SUCCESS) error = wait(&request);
    if (error == MPI_SUCCESS && inter) {
        // An intercommunicator's allreduce returns the other group's maximum: a second
        // one returns, to each process, its own group's.
        int own = 0;
        error = mpich::Iallreduce(&agreed, &own, 1, MPI_INT, MPI_MAX, comm, &request);
        if (error == MPI_SUCCESS) error = wait(&request);
        agreed |= own;
    }
    if (error != MPI_SUCCESS) return error;
    agreements.fetch_add(1, std::memory_order_relaxed);
    *form = agreed ? CollectiveForm::twin : CollectiveForm::blocking;
    const int key = form_keyval();
    if (key != MPI_KEYVAL_INVALID &&
        PMPI_Comm_set_attr(
            comm, key, reinterpret_cast<void *>(static_cast<std::intptr_t>(*form))) == MPI_SUCCESS)
        cache(comm, *form);
    return MPI_SUCCESS;
}

void forget_collective_form(MPI_Comm comm) {
    const int key = form_keyval();
    if (key != MPI_KEYVAL_INVALID) PMPI_Comm_delete_attr(comm, key);  // forget() uncaches it
}

void count_twin_collective() { twins.fetch_add(1, std::memory_order_relaxed); }
std::uint64_t twin_collectives() { return twins.load(std::memory_order_relaxed); }
std::uint64_t collective_agreements() { return agreements.load(std::memory_order_relaxed); }

}  // namespace nbrma::mpi
