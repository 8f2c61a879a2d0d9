// The published form of a dynamic window's directory of attached regions
// (MPI_Win_attach): what its owner writes and every origin reads one-sidedly, whatever
// the transport (transport/directory.hpp writes and reads it for shm and ucx).
//
// An array of slots in the owner's own memory (CMA reads it from the
// owner's heap; UCX registers it), and a header in the owner's control region
// (layout::ControlLayout::directory) that says where the array is:
//   +0   generation — a seqlock: odd while the owner changes the directory, bumped
//        twice per attach/detach; a reader copies header and array, then re-reads it
//   +8   address of the slot array in the owner's memory (0: nothing attached yet)
//   +16  slots: capacity of the array
//   +24  key stride: bytes of transport key per slot (UCX: the region's packed rkey)
//   +32  key length of the array itself (UCX: packed rkey of the array's registration)
//   +40  that key
// The array is `slots` Slot records, then `slots * key stride` bytes of keys. A full
// array is replaced by one of twice the capacity; replaced arrays stay allocated (and
// registered) until the window is freed, so a reader holding an old address reads
// stale bytes, never unmapped memory, and the generation tells it to retry. Memory is
// O(regions): the retired arrays add up to less than the current one.
#ifndef NBRMA_LAYOUT_DIRECTORY_HPP
#define NBRMA_LAYOUT_DIRECTORY_HPP

#include <cstdint>

namespace nbrma::layout {

struct DirectoryHeader {
    std::uint64_t generation;
    std::uint64_t address;
    std::uint64_t slots;
    std::uint64_t key_stride;
    std::uint64_t key_length;
    // the array's key follows
};

struct DirectorySlot {
    std::uint64_t base;
    std::uint64_t length;      // 0: free slot
    std::uint64_t generation;  // the directory generation that filled the slot
    std::uint64_t key_length;  // bytes of this slot's key
};

}  // namespace nbrma::layout

#endif
