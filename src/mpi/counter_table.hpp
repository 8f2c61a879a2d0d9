// counter_table.hpp — every process-wide counter nbrma exposes, in ONE table: its name,
// what kind of quantity it is, its meaning and how to read it. nbrma_get_counter, the MPI_T
// performance variables (tool_interface.cpp) and NBRMA_VERBOSE's report at MPI_Finalize all
// read this table; adding a counter is one row in counter_table.cpp.
#ifndef NBRMA_MPI_COUNTER_TABLE_HPP
#define NBRMA_MPI_COUNTER_TABLE_HPP

#include <cstddef>
#include <cstdint>

namespace nbrma::mpi {

// What the value is, which decides its MPI_T class and whether a tool may start, stop and
// reset it: only `count` values grow by events; the others are a state read as it is.
enum class CounterKind {
    count,  // grows by one per event (MPI_T_PVAR_CLASS_COUNTER)
    level,  // a number of things that exist now (MPI_T_PVAR_CLASS_LEVEL)
    size,   // a size in bytes (MPI_T_PVAR_CLASS_SIZE)
    other,  // anything else, e.g. a process id (MPI_T_PVAR_CLASS_GENERIC)
};

struct CounterRow {
    const char *name;       // as nbrma_get_counter takes it: "epochs_completed"
    CounterKind kind;
    bool detail;            // true: for tuning nbrma itself (MPI_T verbosity USER_DETAIL)
    const char *meaning;    // one line
    std::uint64_t (*read)();  // call with the progress lock held (threads::Guard)
};

// The table, and its number of rows.
const CounterRow *counter_table();
std::size_t counter_count();

// The row named `name`, or null.
const CounterRow *counter_find(const char *name);

}  // namespace nbrma::mpi

#endif
