// MPI initialization and finalization as nbrma sees them: the thread level the
// application asked for switches the progress lock on (doc/design.md §6); with
// NBRMA_PROGRESS=interrupt the node's help table is made and its helpers started;
// MPI_Finalize stops the progress thread before MPICH goes away, leaves the help table
// and prints the NBRMA_VERBOSE report.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "check/races.hpp"
#include "common/log.hpp"
#include "common/settings.hpp"
#include "common/threads.hpp"
#include "common/yield.hpp"
#include "mpi/counter_table.hpp"
#include "mpi/errors.hpp"
#include "mpi/state.hpp"
#include "mpich/entry_points.hpp"
#include "mpich/pmpi.hpp"
#include "mpich/version.hpp"
#include "progress/assist.hpp"
#include "progress/interrupt.hpp"
#include "progress/progress.hpp"

using namespace nbrma;
namespace helper = nbrma::helper;

namespace {
// Why NBRMA_PROGRESS=interrupt cannot run (empty: it can); reported at window creation.
std::string &interrupt_failure_text() {
    static auto *text = new std::string("the help table is made at MPI_Init, which nbrma did not see");
    return *text;
}

// Set at MPI_Init on every rank when NBRMA_PROGRESS=interrupt on some ranks only.
std::string &progress_mismatch_text() {
    static auto *text = new std::string();
    return *text;
}

Status &interrupt_failure_status() {
    static Status status = Status::err_transport;
    return status;
}

// NBRMA_HELPERS: helpers per node, 1 (the default) to helper::max_helpers.
bool helpers_from_environment(unsigned *helpers) {
    const char *text = settings::env(settings::Id::helpers);
    *helpers = 1;
    if (!text || !*text) return true;
    char *end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*end || value < 1 || value > static_cast<long>(helper::max_helpers)) return false;
    *helpers = static_cast<unsigned>(value);
    return true;
}

// Collective over MPI_COMM_WORLD: the node's first rank creates the help table and
// starts the helpers; every rank maps the table and takes its slot. Any failure
// anywhere on the node is every node rank's failure (one reason, from the first rank).
void setup_interrupt() {
    engine::ProgressMode mode;
    const char *mode_text;
    const bool interrupt = engine::progress_mode_from_environment(&mode, &mode_text) &&
                           mode == engine::ProgressMode::interrupt_mode;
    // The help table is made collectively: every rank must want it, or none. A rank
    // that does not would never join the collectives below.
    int wants[2] = {interrupt ? 1 : 0, interrupt ? 0 : 1}, agreed[2] = {0, 0};
    mpich::Allreduce(wants, agreed, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (agreed[0] && agreed[1]) {
        progress_mismatch_text() =
            "NBRMA_PROGRESS differs between ranks: NBRMA_PROGRESS=interrupt on some, not on "
            "others (the node's helpers start at MPI_Init for every rank or for none)";
        if (interrupt) log(0, "%s", progress_mismatch_text().c_str());
        return;
    }
    if (!interrupt) return;
    std::string &failure = interrupt_failure_text();
    failure.clear();
    unsigned helpers = 1;
    const bool helpers_ok = helpers_from_environment(&helpers);
    MPI_Comm node;
    int node_rank = 0, node_size = 1;
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    PMPI_Comm_rank(node, &node_rank);
    PMPI_Comm_size(node, &node_size);
    if (helpers > static_cast<unsigned>(node_size)) helpers = static_cast<unsigned>(node_size);
    struct {
        char name[128];
        unsigned long long bytes;
        int status;  // the Status window creation reports
        char why[384];
    } shared{};
    std::string name, why;
    std::size_t bytes = 0;
    if (node_rank == 0) {
        shared.status = static_cast<int>(Status::err_transport);  // MPI_ERR_OTHER
        if (!helpers_ok) {
            shared.status = static_cast<int>(Status::err_info);  // a bad setting, as NBRMA_PROGRESS
            why = std::string("NBRMA_HELPERS=\"") + settings::env(settings::Id::helpers) +
                  "\" is not a number of helpers per node from 1 to " +
                  std::to_string(helper::max_helpers);
        } else if (is_error(engine::interrupt::create_table(static_cast<unsigned>(node_size),
                                                            helpers, &name, &bytes))) {
            why = "cannot create the node's help table (memfd)";
        }
        std::snprintf(shared.name, sizeof shared.name, "%s", why.empty() ? name.c_str() : "");
        shared.bytes = bytes;
    }
    mpich::Bcast(&shared, sizeof shared, MPI_BYTE, 0, node);
    bool mapped = shared.name[0] != 0;
    if (mapped && node_rank != 0)
        mapped = !is_error(engine::interrupt::open_table(shared.name, shared.bytes));
    if (mapped) engine::interrupt::join(static_cast<unsigned>(node_rank));
    int all_mapped = mapped, everyone = 0;
    mpich::Allreduce(&all_mapped, &everyone, 1, MPI_INT, MPI_MIN, node);
    if (node_rank == 0) {
        if (everyone && is_error(engine::interrupt::start_helpers(shared.name, shared.bytes, &why)))
            everyone = 0;
        else if (!everyone && why.empty())
            why = "a rank of the node cannot map the node's help table (ranks open it as "
                  "/proc/<pid>/fd/<n>: same user, one PID namespace)";
        std::snprintf(shared.why, sizeof shared.why, "%s", everyone ? "" : why.c_str());
    }
    mpich::Bcast(&shared, sizeof shared, MPI_BYTE, 0, node);
    if (node_rank == 0) engine::interrupt::withdraw();
    PMPI_Comm_free(&node);
    if (shared.why[0]) {
        failure = shared.why;
        interrupt_failure_status() = static_cast<Status>(shared.status);
        engine::interrupt::leave();
        log(1, "NBRMA_PROGRESS=interrupt cannot run: %s", failure.c_str());
    }
}

// Another MPICH series than the one nbrma was built for (mpich/version.hpp) is
// refused before nbrma does anything: one line on stderr naming both versions, and the
// job aborted (every rank finds it).
void refuse_other_mpich() {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int length = 0;
    PMPI_Get_library_version(text, &length);
    const std::string why = mpich_mismatch(MPICH_VERSION, text);
    if (why.empty()) return;
    std::fprintf(stderr, "nbrma: MPI_Init: %s\n", why.c_str());
    std::fflush(stderr);
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

int after_init(int error, int provided) {
    if (error != MPI_SUCCESS) return error;
    refuse_other_mpich();
    if (provided == MPI_THREAD_MULTIPLE) threads::enable();
    mpi::register_error_classes();
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    set_log_rank(rank);
    // Settings with values they do not allow: said once, by each rank that has them.
    const std::string invalid = settings::invalid_environment();
    for (std::size_t at = 0, end; (end = invalid.find('\n', at)) != std::string::npos; at = end + 1)
        log(0, "%s", invalid.substr(at, end - at).c_str());
    // Waits must yield the CPU where the node's ranks outnumber its cores; known here
    // from the launcher, else from the first window's node-local ranks.
    set_local_ranks(settings::launcher_local_ranks());
    setup_interrupt();
    check::init();
    return error;
}
}  // namespace

const char *mpi::progress_mismatch() {
    const std::string &text = progress_mismatch_text();
    return text.empty() ? nullptr : text.c_str();
}

const char *mpi::interrupt_failure(Status *status) {
    const std::string &text = interrupt_failure_text();
    *status = interrupt_failure_status();
    return text.empty() ? nullptr : text.c_str();
}

namespace {

int init_impl(int *argc, char ***argv) {
    const int error = mpich::Init(argc, argv);
    int provided = MPI_THREAD_SINGLE;
    if (error == MPI_SUCCESS) PMPI_Query_thread(&provided);  // MPIR_CVAR_DEFAULT_THREAD_LEVEL
    return after_init(error, provided);
}

int init_thread_impl(int *argc, char ***argv, int required, int *provided) {
    int level = MPI_THREAD_SINGLE;
    const int error = mpich::Init_thread(argc, argv, required, &level);
    if (provided) *provided = level;
    return after_init(error, level);
}

int finalize_impl(void) {
    // Windows the application did not free keep the thread running until here.
    engine::progress_thread_stop();
    engine::assist_stop();
    engine::interrupt::leave();
    threads::drain();
    check::finalize();
    if (verbose_level() >= 1) {
        std::string line;
        {
            threads::Guard guard;
            for (std::size_t i = 0; i < mpi::counter_count(); ++i) {
                const mpi::CounterRow &row = mpi::counter_table()[i];
                if (row.kind != mpi::CounterKind::count) continue;
                line += (line.empty() ? "" : " ") + std::string(row.name) + "=" +
                        std::to_string(row.read());
            }
        }
        log(1, "%s", line.c_str());
    }
    const int error = mpich::Finalize();
    engine::interrupt::reap_helpers(2000);
    return error;
}

}  // namespace

// The C entry points and their PMPI_ twins, generated from maint/rma_api.txt.
#include "mpi/init_bindings.inc"
