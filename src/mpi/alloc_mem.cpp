// MPI_Alloc_mem and MPI_Free_mem: the MPI standard's way to give RMA "special memory".
// nbrma hands out node-shareable memory of its own (src/transport/shm/memory_arena.hpp),
// so that windows over it (MPI_Win_create, MPI_Win_attach) reach node-local peers with
// loads, stores and CPU atomics at no copy, and nothing of the application's own memory
// changes. Memory the arena cannot give (the system refuses a memfd) comes from MPICH,
// and MPI_Free_mem passes every pointer nbrma did not hand out to MPICH.
#include <sys/sysinfo.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "mpi/errors.hpp"
#include "mpich/entry_points.hpp"
#include "mpich/pmpi.hpp"
#include "transport/shm/memory_arena.hpp"

namespace nbrma::mpi {
namespace {

// MPI_Alloc_mem(0, ...) returns this (MPI_Free_mem of it does nothing).
char zero_bytes;

// Bytes of RAM and swap: what no allocation can exceed (memfd pages are not counted
// against overcommit, so a larger one would "succeed" and fail at first touch).
std::uint64_t machine_bytes() {
    struct sysinfo info {};
    if (sysinfo(&info) != 0) return UINT64_MAX;
    return (static_cast<std::uint64_t>(info.totalram) + info.totalswap) * info.mem_unit;
}

// The info key mpi_minimum_memory_alignment (MPI 4.1): a power of two from 1 to 1 GiB.
// 0: not given; -1: a value that is not such a number (text gets it).
long long minimum_alignment(MPI_Info info, std::string *text) {
    if (info == MPI_INFO_NULL) return 0;
    char value[MPI_MAX_INFO_VAL + 1] = "";
    int flag = 0;
    if (PMPI_Info_get(info, "mpi_minimum_memory_alignment", MPI_MAX_INFO_VAL, value, &flag) !=
            MPI_SUCCESS ||
        !flag)
        return 0;
    *text = value;
    char *end = nullptr;
    errno = 0;
    const long long alignment = std::strtoll(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0' || alignment < 1 ||
        alignment > (1ll << 30) || (alignment & (alignment - 1)) != 0)
        return -1;
    return alignment;
}

}  // namespace
}  // namespace nbrma::mpi

using namespace nbrma;

namespace {

int alloc_mem_impl(MPI_Aint size, MPI_Info info, void *baseptr) {
    constexpr const char *call = "MPI_Alloc_mem";
    if (!baseptr) return mpi::raise_comm(call, MPI_COMM_NULL, Status::err_arg, "baseptr is NULL");
    if (size < 0) {
        const std::string why = "size " + std::to_string(size) + " is negative";
        return mpi::raise_comm(call, MPI_COMM_NULL, Status::err_arg, why.c_str());
    }
    std::string text;
    const long long alignment = mpi::minimum_alignment(info, &text);
    if (alignment < 0) {
        const std::string why = "info mpi_minimum_memory_alignment=\"" + text +
                                "\" is not a power of two from 1 to 1073741824";
        return mpi::raise_comm(call, MPI_COMM_NULL, Status::err_info_value, why.c_str());
    }
    if (size == 0) {
        *static_cast<void **>(baseptr) = &mpi::zero_bytes;
        return MPI_SUCCESS;
    }
    const std::uint64_t machine = mpi::machine_bytes();
    if (static_cast<std::uint64_t>(size) > machine) {
        const std::string why = "size " + std::to_string(size) +
                                " bytes exceeds this machine's memory (" +
                                std::to_string(machine) + " bytes of RAM and swap)";
        return mpi::raise_comm(call, MPI_COMM_NULL, Status::err_no_memory, why.c_str());
    }
    void *base = transport::shm::arena_allocate(static_cast<std::size_t>(size),
                                                static_cast<std::size_t>(alignment));
    if (base) {
        *static_cast<void **>(baseptr) = base;
        return MPI_SUCCESS;
    }
    if (alignment > 16) {  // MPICH's memory would not keep the alignment
        const std::string why = "cannot map " + std::to_string(size) +
                                " bytes aligned to " + std::to_string(alignment);
        return mpi::raise_comm(call, MPI_COMM_NULL, Status::err_no_memory, why.c_str());
    }
    return mpich::Alloc_mem(size, info, baseptr);
}

int free_mem_impl(void *base) {
    if (base == &mpi::zero_bytes || transport::shm::arena_free(base)) return MPI_SUCCESS;
    return mpich::Free_mem(base);
}

}  // namespace

// The C entry points and their PMPI_ twins, generated from maint/rma_api.txt.
#include "mpi/alloc_mem_bindings.inc"
