// Which MPICH this process runs. nbrma is built against one MPICH series (4.0.x): it
// defines MPICH's RMA entry points over MPICH's own, reaches MPICH through its PMPI_
// names, recognises one of MPICH's built-in request handles and builds error codes with
// MPICH's MPIR_Err_create_code. Another series may differ in any of these, so MPI_Init
// refuses it with a message naming both versions (src/mpi/init.cpp).
#ifndef NBRMA_MPICH_VERSION_HPP
#define NBRMA_MPICH_VERSION_HPP

#include <string>

namespace nbrma {

// The version in MPI_Get_library_version's text ("MPICH Version:\t4.0.2\n..."), or ""
// when the text names no MPICH version.
std::string mpich_version_of(const char *library_version);

// Empty when `running` (MPI_Get_library_version's text) is an MPICH of the series
// (major.minor) of `built` ("4.0.2"); otherwise why not, naming both versions.
std::string mpich_mismatch(const char *built, const char *running);

}  // namespace nbrma

#endif
