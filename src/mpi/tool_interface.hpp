// The MPI tool interface's shared parts (tool_interface.cpp: setup, categories and these
// tables; tool_pvars.cpp: performance variables; tool_cvars.cpp: control variables).
// Internal to the MPI layer.
#ifndef NBRMA_MPI_TOOL_INTERFACE_HPP
#define NBRMA_MPI_TOOL_INTERFACE_HPP

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/settings.hpp"
#include "mpi/counter_table.hpp"

namespace nbrma::mpi::tool {

// A handle of one of nbrma's performance variables, bound to one session.
struct PvarHandle {
    MPI_T_pvar_session session;
    const CounterRow *row;
    // Counters (not continuous): the handle's value is `accumulated` plus, while started,
    // the counter's increase since `base` (its value at the last start, reset or write).
    bool started = false;
    std::uint64_t accumulated = 0;
    std::uint64_t base = 0;
};

// A handle of one of nbrma's control variables: its value as it was at allocation (the
// count returned then is the buffer size the tool uses).
struct CvarHandle {
    const settings::Setting *setting;
    std::string value;
};

// MPI_T is initialized: MPI_T_init_thread calls not yet finalized (tool_interface.cpp).
bool is_initialized();
// MPICH's number of performance (control) variables, categories: nbrma's indices start
// there (MPI_T_ERR_NOT_INITIALIZED before MPI_T_init_thread).
int mpich_pvar_count(int *count);
int mpich_cvar_count(int *count);
int mpich_category_count(int *count);

// nbrma's sessions and handles, under `mutex`.
struct Tables {
    std::mutex mutex;
    std::unordered_set<MPI_T_pvar_session> sessions;
    std::unordered_map<const void *, std::unique_ptr<PvarHandle>> pvars;
    std::unordered_map<const void *, std::unique_ptr<CvarHandle>> cvars;
};

Tables &tables();

// The settings exposed as control variables (tool_cvars.cpp).
const std::vector<const settings::Setting *> &cvar_settings();

// MPI_T's string rule (as MPICH's MPIR_T_strncpy): with no buffer or a zero length, only
// the length needed (with the terminating null) is returned; else the string is copied,
// truncated to fit, and *length is what was written, null included.
inline void copy_string(char *out, int *length, const std::string &text) {
    if (!length) return;
    if (!out || *length <= 0) {
        *length = static_cast<int>(text.size()) + 1;
        return;
    }
    const std::size_t n = std::min(text.size(), static_cast<std::size_t>(*length - 1));
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
    *length = static_cast<int>(n) + 1;
}

template <typename T>
void set(T *out, T value) {
    if (out) *out = value;
}

}  // namespace nbrma::mpi::tool

#endif
