// NBRMA_PMPI(name): nbrma's MPI_name is PMPI_name too (an alias: one function, two
// symbols).
//
// MPI_name in MPICH is a weak alias of PMPI_name, and MPICH's own code calls the PMPI_
// names: the mpi_f08 Fortran bindings (libmpichfort) for waits, tests, collectives,
// MPI_Init and most MPI_Win_* calls, and ROMIO (inside libmpich) for the windows,
// locks, puts and gets of its shared file pointers. Defining the PMPI_ names over
// MPICH's makes those calls run on nbrma as a C or `use mpi` program's do; every
// function nbrma defines gets both names, so no code can create a window with one
// implementation and lock it with the other. nbrma itself reaches MPICH's
// implementation through src/mpich/entry_points.hpp. maint/check_symbols.sh checks that every
// MPI_ function libnbrma.so defines has its PMPI_ twin at the same address.
//
// Used at the end of the file that defines MPI_name (GCC's alias needs the definition
// in the same translation unit).
#ifndef NBRMA_MPICH_PMPI_HPP
#define NBRMA_MPICH_PMPI_HPP

#include <mpi.h>

#define NBRMA_PMPI(name) \
    extern "C" decltype(::MPI_##name) PMPI_##name __attribute__((alias("MPI_" #name)));

#endif  // NBRMA_MPICH_PMPI_HPP
