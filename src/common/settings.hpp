// settings.hpp — every tunable nbrma reads: its environment variables and its window info
// keys, in ONE table. The code reads each setting through this table (settings::env,
// settings::name), and everything that lists them is generated from it: nbrma-info's
// text and JSON, the ENVIRONMENT and INFO KEYS sections of nbrma(7), and the MPI_T
// control variables. Adding a setting is one row in settings.cpp plus its Id here.
#ifndef NBRMA_COMMON_SETTINGS_HPP
#define NBRMA_COMMON_SETTINGS_HPP

#include <cstddef>
#include <string>

namespace nbrma::settings {

enum class Scope {
    environment,  // an NBRMA_* environment variable, read by every process
    window_info,  // a window info key (MPI_Win_create & co., MPI_Win_set_info)
};

// Who the setting is for: users tune it; tests and developers use the rest.
enum class Audience { user, test };

enum class Id : unsigned {
    // environment variables
    progress,
    helpers,
    helper,
    notify_max_env,
    transport_env,
    ucx_prefix,
    cma,
    share_user_memory,
    verbose,
    check_env,
    check_abort,
    virtual_nodes,
    test_die_at,
    test_ucx_fence,
    // window info keys
    accumulate_ordering,
    accumulate_ops,
    no_locks,
    alloc_shared_noncontig,
    same_size,
    same_disp_unit,
    accumulate_granularity,
    transport,
    notify_max,
    share_user_memory_key,
    check,
    access_after_access_reorder,
    access_after_exposure_reorder,
    exposure_after_exposure_reorder,
    exposure_after_access_reorder,
    count_  // not a setting
};

struct Setting {
    Id id;
    const char *name;           // "NBRMA_PROGRESS", "nbrma_transport"; a trailing '*' names a family
    Scope scope;
    Audience audience;
    const char *default_value;  // as text; "" when unset means "not set"
    const char *allowed;        // the values accepted, in words ("inline, thread, interrupt")
    const char *meaning;        // one line
    const char *alias;          // another spelling the code accepts (info keys), or nullptr
    // Info keys: the environment variable read when the key is not given (none: count_).
    Id fallback = Id::count_;
};

constexpr std::size_t count = static_cast<std::size_t>(Id::count_);

// The whole table, in Id order.
const Setting *table();
const Setting &get(Id id);
inline const char *name(Id id) { return get(id).name; }

// The environment variable's value, or nullptr when unset or empty (NBRMA_X= is unset;
// scope environment only).
const char *env(Id id);

// Whether `value` is one the setting allows: one of its words where `allowed` lists
// words ("inline, thread, interrupt"), an integer in range where it says "N to M";
// settings whose values are described in prose (a path, a list) are checked where read.
bool valid(const Setting &setting, const char *value);
// The info key accumulate_ordering's value as a mask of the orderings it names (read
// after read 1, read after write 2, write after read 4, write after write 8; "none": 0);
// false for a value that is not "none" nor a comma-separated subset of rar, raw, war, waw.
bool accumulate_ordering_mask(const char *value, unsigned *mask);

// The number of ranks on this node that the launcher reports (MPI_LOCALNRANKS, which
// MPICH's mpiexec exports to each process), or 0 when it reports none. Not a setting of
// nbrma's: the one other variable nbrma reads.
int launcher_local_ranks();
// A UCX setting as nbrma's UCX context reads it (the NBRMA_UCX_* entry): the value of
// NBRMA_UCX_<name>, else of UCX_<name>; nullptr when neither is set.
const char *ucx_setting(const char *name);
// NBRMA_VIRTUAL_NODES (test mode): the number k of virtual nodes each node's ranks form
// (world rank r in virtual node r mod k); 0 when unset, -1 for a value not allowed.
int virtual_nodes();
// The environment variables set to values they do not allow, one line each:
// NBRMA_CMA="x" is not valid (allowed: 0, 1). Empty when all are valid.
std::string invalid_environment();

}  // namespace nbrma::settings

#endif
