// settings.cpp — the table of every environment variable and window info key nbrma reads
// (see settings.hpp). Rows are in settings::Id order: the static_assert checks their
// number, get() their order.
#include "common/settings.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace nbrma::settings {

namespace {

using S = Scope;
using A = Audience;

const Setting rows[] = {
    {Id::progress, "NBRMA_PROGRESS", S::environment, A::user, "inline", "inline, thread, interrupt",
     "how epochs advance: inside MPI calls only, also on a polling progress thread per "
     "process, or on a progress thread the node's helper wakes when work waits",
     nullptr},
    {Id::helpers, "NBRMA_HELPERS", S::environment, A::user, "1", "1 to 16",
     "interrupt mode: helper processes per node", nullptr},
    {Id::helper, "NBRMA_HELPER", S::environment, A::user, "", "a path to an executable",
     "interrupt mode: the helper program to start instead of the nbrma-helper installed "
     "beside libnbrma",
     nullptr},
    {Id::notify_max_env, "NBRMA_NOTIFY_MAX", S::environment, A::user, "65536", "0 to 16777216",
     "capacity of the notification counters of windows created without the info key "
     "nbrma_notify_max",
     nullptr},
    {Id::transport_env, "NBRMA_TRANSPORT", S::environment, A::user, "shm", "shm, ucx",
     "how windows reach their peers: node-local peers over shared memory and remote ones "
     "over UCX, or every peer over UCX (the info key nbrma_transport overrides it)",
     nullptr},
    {Id::ucx_prefix, "NBRMA_UCX_*", S::environment, A::user, "",
     "any UCX_* setting (e.g. NBRMA_UCX_TLS=rc,self)",
     "UCX settings for nbrma's own UCX context only, overriding UCX_*", nullptr},
    {Id::cma, "NBRMA_CMA", S::environment, A::user, "1", "0, 1",
     "0: never use cross-memory attach nor prctl(PR_SET_PTRACER); MPI_Win_create and "
     "dynamic windows with node-local peers then fail at creation",
     nullptr},
    {Id::share_user_memory, "NBRMA_SHARE_USER_MEMORY", S::environment, A::user, "0", "0, 1",
     "1 (opt-in, unsafe): move MPI_Win_create memory and attached regions into shared "
     "pages so node-local peers reach them with loads, stores and CPU atomics; this "
     "remaps the application's pages (kernel or device registrations of them go stale, "
     "a system call writing there meanwhile fails with EFAULT); locked and huge-page "
     "memory is never moved. 0: cross-memory attach",
     nullptr},
    {Id::verbose, "NBRMA_VERBOSE", S::environment, A::user, "0", "0 to 3",
     "1: each rank prints its counters to stderr at MPI_Finalize and notes its progress "
     "thread's start and stop; 2: also debug traces; 3: also a line per RMA call",
     nullptr},
    {Id::check_env, "NBRMA_CHECK", S::environment, A::user, "off", "off, races",
     "races: check every RMA call against the calls other origins made to the same target "
     "bytes and report those no MPI synchronization orders (nbrma(7), RACE CHECKING); "
     "the window info key nbrma_check overrides it per window",
     nullptr},
    {Id::check_abort, "NBRMA_CHECK_ABORT", S::environment, A::user, "0", "0, 1",
     "1: with NBRMA_CHECK=races, abort the process at the first race found (its report "
     "printed); 0: report each race and count them to the summary at MPI_Finalize",
     nullptr},
    {Id::virtual_nodes, "NBRMA_VIRTUAL_NODES", S::environment, A::test, "", "1 to 4096",
     "test mode: each node's ranks form k virtual nodes (world rank mod k) that reach each "
     "other through UCX, as if on different machines",
     nullptr},
    {Id::test_die_at, "NBRMA_TEST_DIE_AT", S::environment, A::test, "",
     "creator_created, peer_before_open, peer_opened, peer_agreed",
     "test hook: a process reaching this point of window creation kills itself with "
     "SIGKILL",
     nullptr},
    {Id::test_ucx_fence, "NBRMA_TEST_UCX_FENCE", S::environment, A::test, "", "flush",
     "test hook: every UCX endpoint's fence is a flush of it, as on UCX releases before "
     "1.14 for an endpoint with several network lanes",
     nullptr},

    {Id::accumulate_ordering, "accumulate_ordering", S::window_info, A::user, "rar,raw,war,waw",
     "none, or a comma-separated subset of rar, raw, war, waw",
     "orderings that accumulates from one origin to one target must keep", nullptr},
    {Id::accumulate_ops, "accumulate_ops", S::window_info, A::user, "same_op_no_op",
     "same_op, same_op_no_op",
     "the promise that concurrent accumulates to a location use one operation", nullptr},
    {Id::no_locks, "no_locks", S::window_info, A::user, "false", "true, false",
     "true: the application promises never to lock the window", nullptr},
    {Id::alloc_shared_noncontig, "alloc_shared_noncontig", S::window_info, A::user, "false",
     "true, false", "true: MPI_Win_allocate_shared need not place the ranks' parts contiguously",
     nullptr},
    {Id::same_size, "same_size", S::window_info, A::user, "false", "true, false",
     "a hint that every rank gives the same size (accepted, not used)", nullptr},
    {Id::same_disp_unit, "same_disp_unit", S::window_info, A::user, "false", "true, false",
     "a hint that every rank gives the same displacement unit (accepted, not used)", nullptr},
    {Id::accumulate_granularity, "mpi_accumulate_granularity", S::window_info, A::user, "0",
     "a byte count >= 0",
     "a hint on the atomicity granularity of accumulates (accepted, "
     "not used)",
     nullptr},
    {Id::transport, "nbrma_transport", S::window_info, A::user, "shm", "shm, ucx",
     "this window's transport: node-local peers over shared memory and remote ones over "
     "UCX, or every peer over UCX (overrides NBRMA_TRANSPORT)",
     nullptr, Id::transport_env},
    {Id::notify_max, "nbrma_notify_max", S::window_info, A::user, "65536", "0 to 16777216",
     "capacity of each rank's notification counters, the same on every rank (overrides "
     "NBRMA_NOTIFY_MAX)",
     nullptr, Id::notify_max_env},
    {Id::share_user_memory_key, "nbrma_share_user_memory", S::window_info, A::user, "false",
     "true, false",
     "true (opt-in, unsafe; see NBRMA_SHARE_USER_MEMORY): this rank's MPI_Win_create "
     "memory, or the regions it attaches to this dynamic window, are moved into shared "
     "pages; false: they stay where they are and node-local peers use cross-memory "
     "attach; overrides NBRMA_SHARE_USER_MEMORY",
     nullptr, Id::share_user_memory},
    {Id::check, "nbrma_check", S::window_info, A::user, "off", "off, races",
     "this window's race checking (overrides NBRMA_CHECK; the same on every rank)", nullptr,
     Id::check_env},
    {Id::access_after_access_reorder, "access_after_access_reorder", S::window_info, A::user,
     "false", "true, false, 1, 0",
     "an access epoch may activate while an earlier access epoch is still active (SC14)",
     "MPI_WIN_ACCESS_AFTER_ACCESS_REORDER"},
    {Id::access_after_exposure_reorder, "access_after_exposure_reorder", S::window_info, A::user,
     "false", "true, false, 1, 0",
     "an access epoch may activate while an earlier exposure epoch is still active (SC14)",
     "MPI_WIN_ACCESS_AFTER_EXPOSURE_REORDER"},
    {Id::exposure_after_exposure_reorder, "exposure_after_exposure_reorder", S::window_info,
     A::user, "false", "true, false, 1, 0",
     "an exposure epoch may activate while an earlier exposure epoch is still active (SC14)",
     "MPI_WIN_EXPOSURE_AFTER_EXPOSURE_REORDER"},
    {Id::exposure_after_access_reorder, "exposure_after_access_reorder", S::window_info, A::user,
     "false", "true, false, 1, 0",
     "an exposure epoch may activate while an earlier access epoch is still active (SC14)",
     "MPI_WIN_EXPOSURE_AFTER_ACCESS_REORDER"},
};

static_assert(sizeof rows / sizeof rows[0] == count, "one row per settings::Id");

}  // namespace

const Setting *table() { return rows; }

const Setting &get(Id id) {
    const Setting &row = rows[static_cast<std::size_t>(id)];
    if (row.id != id) std::abort();  // rows out of Id order: a programming error
    return row;
}

const char *env(Id id) {
    const char *value = std::getenv(get(id).name);
    return value && *value ? value : nullptr;
}

const char *ucx_setting(const char *name) {
    const std::string suffix = std::string("UCX_") + name;
    const char *value = std::getenv(("NBRMA_" + suffix).c_str());
    return value ? value : std::getenv(suffix.c_str());
}

int launcher_local_ranks() {
    const char *value = std::getenv("MPI_LOCALNRANKS");
    const int ranks = value ? std::atoi(value) : 0;
    return ranks > 0 ? ranks : 0;
}

int virtual_nodes() {
    const char *text = env(Id::virtual_nodes);
    if (!text) return 0;
    char *end = nullptr;
    const long k = std::strtol(text, &end, 10);
    return *end || k < 1 || k > 4096 ? -1 : static_cast<int>(k);
}

bool accumulate_ordering_mask(const char *value, unsigned *mask) {
    *mask = 0;
    if (std::strcmp(value, "none") == 0) return true;
    const std::string list = std::string(value) + ",";
    for (std::size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos;
         at = comma + 1) {
        const std::string word = list.substr(at, comma - at);
        const unsigned bit = word == "rar"   ? 1u
                             : word == "raw" ? 2u
                             : word == "war" ? 4u
                             : word == "waw" ? 8u
                                             : 0u;
        if (!bit) return false;
        *mask |= bit;
    }
    return true;
}

bool valid(const Setting &setting, const char *value) {
    const std::string allowed = setting.allowed;
    long long low = 0, high = 0;
    int used = 0;
    if (std::sscanf(allowed.c_str(), "%lld to %lld%n", &low, &high, &used) == 2 &&
        static_cast<std::size_t>(used) == allowed.size()) {
        char *end = nullptr;
        errno = 0;
        const long long number = std::strtoll(value, &end, 10);
        return errno == 0 && end != value && *end == '\0' && number >= low && number <= high;
    }
    // "a, b, c": words without spaces; anything else is prose, checked where read.
    std::vector<std::string> words;
    for (std::size_t at = 0; at <= allowed.size();) {
        std::size_t comma = allowed.find(", ", at);
        if (comma == std::string::npos) comma = allowed.size();
        words.push_back(allowed.substr(at, comma - at));
        if (words.back().empty() || words.back().find(' ') != std::string::npos) return true;
        at = comma + 2;
    }
    for (const std::string &word : words)
        if (word == value) return true;
    return false;
}

std::string invalid_environment() {
    std::string lines;
    for (const Setting &row : rows) {
        if (row.scope != Scope::environment) continue;
        const char *value = env(row.id);
        if (!value || valid(row, value)) continue;
        lines += std::string(row.name) + "=\"" + value + "\" is not valid (allowed: " +
                 row.allowed + ")\n";
    }
    return lines;
}

}  // namespace nbrma::settings
