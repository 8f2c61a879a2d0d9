// The node segments of freed MPI_Win_create / MPI_Win_create_dynamic windows, kept mapped
// for the next window of the same shape (window creation near MPICH's
// cost). A fresh segment costs memfd_create, fchmod, ftruncate, the peers' open of
// /proc/<pid>/fd/<n>, an mmap on every local rank, page faults on first touch, and the
// munmap and inode teardown at free: about half of what nbrma added to a 2-rank
// MPI_Win_create. Window creation (src/mpi/window_setup.cpp) decides on every rank
// alike whether the node's ranks all offer the same cached segment; each rank cleans its
// own control region at free, after MPICH's MPI_Win_free (a barrier), before its segment
// enters the cache, so a reused segment reads as a fresh one.
#ifndef NBRMA_TRANSPORT_SHM_SEGMENT_CACHE_HPP
#define NBRMA_TRANSPORT_SHM_SEGMENT_CACHE_HPP

#include <cstdint>
#include <memory>
#include <vector>

#include "transport/shm/shm_segment.hpp"

namespace nbrma::transport::shm {

// A segment and its node-wide identity: the creating process's pid in the high 32 bits,
// its count of segments created in the low ones (new_segment_id()).
struct CachedSegment {
    std::unique_ptr<ShmSegment> segment;
    std::uint64_t id = 0;
    // How many node-local ranks mapped it (each keeps it at most once): a reuse needs
    // all of them, so no rank outside the new window still holds it.
    int ranks = 0;
    // The window made on it agreed that its node-local ranks read each other with
    // cross-memory attach, with no Yama consent involved (window_setup.cpp).
    bool cma_checked = false;
    explicit operator bool() const { return segment != nullptr; }
};

// A new identity for a segment this process creates (never 0).
std::uint64_t new_segment_id();

// How many freed segments a process keeps (the oldest is unmapped beyond it).
constexpr std::size_t segment_cache_limit = 4;

// Takes the most recently cached segment out of the cache, reserved for one window
// creation (another thread's creation cannot offer it too); empty if there is none.
CachedSegment segment_cache_take();
// Puts a clean segment (cached, or one a creation took and did not use) back.
void segment_cache_put(CachedSegment entry);
// How many segments are cached (tests).
std::size_t segment_cache_size();

// One rank's offer, as window creation exchanges it (id 0: none).
struct SegmentOffer {
    std::uint64_t node;  // node key: equal iff on one node
    std::uint64_t id;
    std::int64_t bytes;
    std::int32_t ranks;  // how many ranks mapped it (CachedSegment::ranks)
};
// Whether the window is made on the offered segments: on every node every rank offers
// the same segment, mapped by exactly as many ranks as the node has in this window (so
// every rank still holding it is here, and no other window can take it too), of
// `control_bytes` per rank. The same answer on every rank, from the same offers.
bool segment_offers_agree(const std::vector<SegmentOffer> &offers, std::int64_t control_bytes);

}  // namespace nbrma::transport::shm

#endif
