// Which node a process runs on, as a number every process can compute alone.
#ifndef NBRMA_COMMON_NODE_HPP
#define NBRMA_COMMON_NODE_HPP

#include <cstdint>

namespace nbrma {

// Two processes share a node iff they run on one kernel under one host name (what
// MPI_COMM_TYPE_SHARED means to MPICH's hydra, without its collective): a hash of the
// host name and the kernel's boot id, computed once.
std::uint64_t node_key();

}  // namespace nbrma

#endif
