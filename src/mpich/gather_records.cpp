#include "mpich/gather_records.hpp"

#include "mpich/entry_points.hpp"

namespace nbrma::mpich {

Records gather_records(const std::vector<std::uint8_t> &mine, MPI_Comm comm) {
    int size = 0;
    PMPI_Comm_size(comm, &size);
    Records records;
    const auto n = static_cast<std::size_t>(size);
    records.lengths.assign(n, 0);
    records.offsets.assign(n, 0);
    int length = static_cast<int>(mine.size());
    Allgather(&length, 1, MPI_INT, records.lengths.data(), 1, MPI_INT, comm);
    for (int r = 1; r < size; ++r)
        records.offsets[r] = records.offsets[r - 1] + records.lengths[r - 1];
    records.bytes.resize(static_cast<std::size_t>(records.offsets[size - 1]) +
                         static_cast<std::size_t>(records.lengths[size - 1]));
    Allgatherv(mine.data(), length, MPI_BYTE, records.bytes.data(), records.lengths.data(),
               records.offsets.data(), MPI_BYTE, comm);
    return records;
}

}  // namespace nbrma::mpich
