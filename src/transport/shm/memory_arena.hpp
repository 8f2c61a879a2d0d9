// MPI_Alloc_mem's memory: node-shareable pages nbrma owns (user_memory_map_owned), so
// that MPI_Win_create and MPI_Win_attach over it reach node-local peers with loads,
// stores and CPU atomics, as MPI_Win_allocate memory does, without moving anything.
//
// Blocks up to 1 MiB are carved out of 8 MiB chunks, one memfd each (a block costs no
// descriptor of its own), first fit in 64-byte grains; larger blocks, and blocks aligned
// to more than 1 MiB, get a memfd of their own. A chunk is mapped, never touched: its
// pages are faulted in by their users. A chunk left empty is unmapped unless it is the
// last one (the next allocation reuses it); memory a live window still covers is
// unmapped when that window is freed (user_memory_unmap_owned).
#ifndef NBRMA_TRANSPORT_SHM_MEMORY_ARENA_HPP
#define NBRMA_TRANSPORT_SHM_MEMORY_ARENA_HPP

#include <cstddef>

namespace nbrma::transport::shm {

// `size` bytes (> 0) at a multiple of `alignment` (a power of two; at least 64 bytes);
// nullptr if the system refuses the memory or the descriptor.
void *arena_allocate(std::size_t size, std::size_t alignment);
// Gives back a block arena_allocate returned; false (nothing done) if `base` is not one.
bool arena_free(void *base);
// Live blocks and mapped chunks (tests).
std::size_t arena_blocks();
std::size_t arena_chunks();

}  // namespace nbrma::transport::shm

#endif
