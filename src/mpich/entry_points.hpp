// MPICH's own implementation of the MPI functions nbrma defines, for nbrma to call.
//
// nbrma defines every MPI_ function it interposes under its profiling name PMPI_ too
// (src/mpich/pmpi.hpp), because MPICH's Fortran bindings (mpi_f08) and its ROMIO call
// the PMPI_ names. Inside nbrma, PMPI_Win_free would therefore be nbrma's own
// MPI_Win_free again: nbrma reaches MPICH's through nbrma::mpich::Win_free instead, a
// pointer resolved once when libnbrma is loaded (src/mpich/entry_points.cpp), before any thread
// or MPI call can run. A call through it costs what the PLT call to PMPI_Win_free cost.
// maint/check_symbols.sh fails if src/ calls an interposed PMPI_ name directly.
//
// The functions of MPICH that nbrma does not define are called by their PMPI_ names
// as before (PMPI_Comm_rank, PMPI_Type_get_envelope, ...).
#ifndef NBRMA_MPICH_ENTRY_POINTS_HPP
#define NBRMA_MPICH_ENTRY_POINTS_HPP

#include <mpi.h>

// The interposed functions nbrma calls MPICH's implementation of. Adding one here is
// all it takes to call it as nbrma::mpich::name.
// clang-format off
#define NBRMA_MPICH_FUNCTIONS(X)                                                           \
    X(Init) X(Init_thread) X(Finalize)                                                     \
    X(Wait) X(Waitall) X(Waitany) X(Waitsome)                                              \
    X(Test) X(Testall) X(Testany) X(Testsome)                                              \
    X(Iprobe) X(Probe) X(Request_get_status)                                               \
    X(Recv) X(Send) X(Ssend) X(Sendrecv) X(Sendrecv_replace)                               \
    X(Barrier) X(Bcast) X(Reduce) X(Allreduce) X(Gather) X(Scatter) X(Allgather)           \
    X(Alltoall) X(Allgatherv) X(Alltoallv) X(Alltoallw) X(Gatherv) X(Scatterv)             \
    X(Reduce_scatter) X(Reduce_scatter_block) X(Scan) X(Exscan)                            \
    X(Ibarrier) X(Ibcast) X(Ireduce) X(Iallreduce) X(Igather) X(Iscatter)                  \
    X(Iallgather) X(Ialltoall) X(Iallgatherv) X(Ialltoallv) X(Ialltoallw) X(Igatherv)      \
    X(Iscatterv) X(Ireduce_scatter) X(Ireduce_scatter_block) X(Iscan) X(Iexscan)           \
    X(Win_create) X(Win_create_dynamic) X(Win_free)                                        \
    X(Win_get_attr) X(Win_set_info) X(Alloc_mem) X(Free_mem)                               \
    X(T_category_get_categories) X(T_category_get_cvars) X(T_category_get_events)          \
    X(T_category_get_index) X(T_category_get_info) X(T_category_get_num)                   \
    X(T_category_get_num_events) X(T_category_get_pvars) X(T_cvar_get_index)               \
    X(T_cvar_get_info) X(T_cvar_get_num) X(T_cvar_handle_alloc) X(T_cvar_handle_free)      \
    X(T_cvar_read) X(T_cvar_write) X(T_finalize) X(T_init_thread) X(T_pvar_get_index)      \
    X(T_pvar_get_info) X(T_pvar_get_num) X(T_pvar_handle_alloc) X(T_pvar_handle_free)      \
    X(T_pvar_read) X(T_pvar_readreset) X(T_pvar_reset) X(T_pvar_session_create)            \
    X(T_pvar_session_free) X(T_pvar_start) X(T_pvar_stop) X(T_pvar_write)
// clang-format on

namespace nbrma::mpich {

// Hidden: libnbrma's own, reached without a GOT load (a call costs a load and an
// indirect call, as many instructions as the PLT stub it replaces).
#define NBRMA_MPICH_DECLARE(name) \
    extern __attribute__((visibility("hidden"))) decltype(&::PMPI_##name) name;
NBRMA_MPICH_FUNCTIONS(NBRMA_MPICH_DECLARE)
#undef NBRMA_MPICH_DECLARE

// MPICH's internal MPII_Win_get_attr(win, keyval, value, flag, value type), which its
// Fortran bindings call for MPI_WIN_GET_ATTR instead of PMPI_Win_get_attr: nbrma
// defines one over it (attributes.cpp). Null where MPICH has none.
using WinGetAttrInternal = int (*)(MPI_Win, int, void *, int *, int);
extern __attribute__((visibility("hidden"))) WinGetAttrInternal Win_get_attr_internal;

// True iff the process resolves MPI_Put to libnbrma's (not MPICH's, as where libmpich
// comes before libnbrma on the link line): nbrma_is_active(), and the cause an MPIX_ call
// gives for a window nbrma did not create.
bool process_resolves_to_nbrma();

}  // namespace nbrma::mpich

#endif  // NBRMA_MPICH_ENTRY_POINTS_HPP
