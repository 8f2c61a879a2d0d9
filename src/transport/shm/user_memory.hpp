// Memory the user passed to MPI_Win_create or MPI_Win_attach, made reachable by the
// node's other ranks with loads, stores and CPU atomics, as MPI_Win_allocate memory is:
// an opt-in only (NBRMA_SHARE_USER_MEMORY=1 or the info key nbrma_share_user_memory),
// because it changes the application's mappings. By default nothing here moves a page:
// windows register their ranges (so that an opted-in window never moves pages another
// window exposes) and peers reach the memory with cross-memory attach.
//
// Opted in, the window's whole pages are moved into a memfd at creation: the content is
// copied into the memfd and the memfd is mremap()ed over the same addresses, so the
// user's pointers, the content and the protection (read-write) stay what they were; peers
// open the memfd as /proc/<pid>/fd/<n> and map it (peer_memory.hpp). At MPI_Win_free the
// pages go back to private anonymous memory the same way. Only private anonymous, writable memory
// is moved (heap, anonymous mmap, .bss): a file or shared mapping is left alone
// (madvise(MADV_WIPEONFORK) answers which it is in one call), so is read-only memory
// (MADV_POPULATE_WRITE fails there), the calling thread's stack, and memory that is
// locked or huge-page backed (/proc/self/smaps).
//
// Stores other threads make while the pages move must not be lost: the pages are
// read-only from the copy until the memfd is in place, and a store that faults there
// waits in nbrma's SIGSEGV handler (chained to whatever handler was installed before)
// and is retried on the moved page. What this cannot cover (doc/design.md §9): a system call
// writing into those pages in that window of a few microseconds fails with EFAULT; a page pinned
// for a device or the kernel (RDMA registration, io_uring fixed buffer, cudaHostRegister) keeps its
// old frame, so that registration goes stale; the mremap bypasses other libraries' memory hooks
// (UCX's registration cache).
//
// Every window over user memory registers its pages here, moved or not (reached by
// cross-memory attach or registered with UCX), and dynamic windows their attached
// regions: pages any live window exposes otherwise are never moved, so no access in
// flight meets a moving page. A window inside pages an earlier window moved uses the same
// memfd. Pages no window claims any more stay moved, up to 4 ranges (the oldest go back),
// so that a loop creating and freeing windows over one buffer moves it once; before such
// a range is used again, /proc/self/map_files must show our memfd still mapped exactly
// there (the user may have unmapped the memory since), else what is left of it goes back
// to private memory. A child made by fork() gets private copies of moved pages
// (pthread_atfork), as it would have.
#ifndef NBRMA_TRANSPORT_SHM_USER_MEMORY_HPP
#define NBRMA_TRANSPORT_SHM_USER_MEMORY_HPP

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.hpp"

namespace nbrma::transport::shm {

// True iff NBRMA_SHARE_USER_MEMORY=1: windows not given the info key
// nbrma_share_user_memory offer to move their memory. Off by default.
bool user_memory_sharing_requested();

// One window's claim on the pages of [base, base + size).
class UserMemoryClaim {
  public:
    UserMemoryClaim() = default;
    UserMemoryClaim(const UserMemoryClaim &) = delete;
    UserMemoryClaim &operator=(const UserMemoryClaim &) = delete;
    ~UserMemoryClaim() { release(); }
    struct Entry;  // a registered page range (user_memory.cpp)

    // Registers the pages. With `offer`, peers may map them: descriptor() is then the
    // memfd peers will open, offset() where base lies in it; -1 if they cannot be shared.
    // Memory of user_memory_map_owned is shared as it is; other pages only `may_move`
    // (the opt-in), into a fresh memfd or that of an earlier window whose moved pages
    // hold them.
    void claim(const void *base, std::size_t size, bool offer, bool may_move);
    int descriptor() const { return descriptor_; }
    // The pages are in the memfd already (an earlier window moved them): share() cannot
    // fail.
    bool moved() const;
    std::uint64_t offset() const { return offset_; }
    // The memfd's identity, unique among the node's processes (0: none offered).
    std::uint64_t identity() const;
    // Moves the pages into the memfd (nothing to do where an earlier window did); on
    // failure they stay where they are and stay registered as exposed.
    Status share();
    // The offer is not taken: the pages stay where they are (still registered).
    void decline();
    bool shared() const { return shared_; }
    // Gives the claim back; pages no live claim covers return to private memory.
    void release();

  private:
    Entry *entry_ = nullptr;
    int descriptor_ = -1;
    std::uint64_t offset_ = 0;
    bool shared_ = false;
};

// Node-shareable memory nbrma owns (MPI_Alloc_mem's arena): `length` bytes (rounded up
// to pages) of a fresh memfd named like moved pages' (a fork child gets private copies),
// mapped shared at a multiple of `alignment` (at least a page) and registered, so that
// windows over any part of it are shared with node-local peers without moving anything.
// Its pages are touched only by their users. nullptr if the system refuses (no memory,
// no descriptor). `identity` (optional) gets the memfd's identity.
void *user_memory_map_owned(std::size_t length, std::size_t alignment,
                            std::uint64_t *identity = nullptr);
// Unmaps and unregisters memory user_memory_map_owned returned at `base` (once the last
// live window over some of it is freed, if one is); false if base is not such memory.
bool user_memory_unmap_owned(void *base);

// The memfd holding the moved pages that contain [base, base + size) and where base lies
// in it; false if those bytes are not in moved pages (dynamic windows publish this).
bool user_memory_find(const void *base, std::size_t size, int *descriptor,
                      std::uint64_t *offset);

// Moved ranges no window claims any more go back to private memory now (they are kept
// moved, up to 4, for the next window over the same memory).
void user_memory_uncache();

// Registered ranges of the user's pages, and how many of them are moved (tests; nbrma's
// own memory of user_memory_map_owned is not counted).
std::size_t user_memory_ranges();
std::size_t user_memory_moved();

}  // namespace nbrma::transport::shm

#endif
