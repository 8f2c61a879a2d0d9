// Records of bytes, one per rank and of any length (UCX worker addresses, remote keys),
// gathered on every rank of a communicator: an MPI_Allgather of their lengths, then an
// MPI_Allgatherv of the bytes, both MPICH's.
#ifndef NBRMA_MPICH_GATHER_RECORDS_HPP
#define NBRMA_MPICH_GATHER_RECORDS_HPP

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace nbrma::mpich {

struct Records {
    std::vector<std::uint8_t> bytes;
    std::vector<int> offsets, lengths;  // of rank r's record in `bytes`
    const std::uint8_t *of(int rank) const { return bytes.data() + offsets[rank]; }
};

// Collective over comm: every rank's `mine`.
Records gather_records(const std::vector<std::uint8_t> &mine, MPI_Comm comm);

}  // namespace nbrma::mpich

#endif
