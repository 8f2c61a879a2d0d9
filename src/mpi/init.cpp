// MPI initialization and finalization as nbrma sees them: the thread level the
// application asked for switches the progress lock on (DESIGN §6); MPI_Finalize stops
// the progress thread before MPICH goes away and prints the NBRMA_VERBOSE report.
#include "common/log.hpp"
#include "common/threads.hpp"
#include "engine/progress.hpp"
#include "mpi/state.hpp"

using namespace nbrma;

namespace {
int after_init(int error, int provided) {
    if (error == MPI_SUCCESS && provided == MPI_THREAD_MULTIPLE) threads::enable();
    return error;
}
}  // namespace

extern "C" {

int MPI_Init(int *argc, char ***argv) {
    const int error = PMPI_Init(argc, argv);
    int provided = MPI_THREAD_SINGLE;
    if (error == MPI_SUCCESS) PMPI_Query_thread(&provided);  // MPIR_CVAR_DEFAULT_THREAD_LEVEL
    return after_init(error, provided);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int level = MPI_THREAD_SINGLE;
    const int error = PMPI_Init_thread(argc, argv, required, &level);
    if (provided) *provided = level;
    return after_init(error, level);
}

int MPI_Finalize(void) {
    // Windows the application did not free keep the thread running until here.
    engine::progress_thread_stop();
    threads::drain();
    if (verbose_level() >= 1) {
        threads::Guard guard;
        const Counters &c = counters();
        log(1,
            "windows_created=%llu epochs_opened=%llu epochs_completed=%llu rma_ops=%llu "
            "lock_grants=%llu progress_thread_sweeps=%llu",
            static_cast<unsigned long long>(c.windows_created),
            static_cast<unsigned long long>(c.epochs_opened),
            static_cast<unsigned long long>(c.epochs_completed),
            static_cast<unsigned long long>(c.rma_ops),
            static_cast<unsigned long long>(c.lock_grants),
            static_cast<unsigned long long>(c.progress_thread_sweeps));
    }
    return PMPI_Finalize();
}

}  // extern "C"
