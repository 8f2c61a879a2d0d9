// Node-local peers' window memory in moved pages or nbrma's own node-shareable memory
// (user_memory.hpp: the owner's side), mapped from the memfd the peer offered: one
// window's range, or the whole memfd, kept in a small cache across window creations.
#ifndef NBRMA_TRANSPORT_SHM_PEER_MEMORY_HPP
#define NBRMA_TRANSPORT_SHM_PEER_MEMORY_HPP

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.hpp"

namespace nbrma::transport::shm {

// A node-local peer's window memory, mapped from the memfd it offered.
class PeerMemoryMap {
  public:
    PeerMemoryMap() = default;
    PeerMemoryMap(const PeerMemoryMap &) = delete;
    PeerMemoryMap &operator=(const PeerMemoryMap &) = delete;
    ~PeerMemoryMap();
    // Maps the pages holding [offset, offset + size) of memfd `descriptor` of process
    // `pid`; address() is where offset lies.
    Status open(pid_t pid, int descriptor, std::uint64_t offset, std::uint64_t size);
    // Maps the whole memfd (its size now: a memfd moved pages live in never changes size).
    Status open_file(pid_t pid, int descriptor);
    std::uint8_t *address() const { return address_; }
    // Where [offset, offset + size) of the file lies, nullptr if not all of it is mapped.
    std::uint8_t *at(std::uint64_t offset, std::uint64_t size) const;
    std::size_t length() const { return length_; }

  private:
    Status map(pid_t pid, int descriptor, std::uint64_t first, std::uint64_t length);
    void *mapping_ = nullptr;
    std::size_t length_ = 0;
    std::uint64_t first_ = 0;  // the file offset mapping_ shows
    std::uint8_t *address_ = nullptr;
};

// The peers' memfds this process keeps mapped (the last 8 whole memfds a window
// creation mapped, of any size: an owner that gives its memfd up punches its pages out
// first, so a stale mapping holds no memory), each with its owner's pid and identity:
// windows created and freed over one buffer map the peer's memfd once. A creation takes
// them (peer_memory_held) before its exchange, so that it can tell its peers which it
// will find (a concurrent creation may drop them from the cache meanwhile).
struct HeldPeerMemory {
    pid_t pid;
    std::uint64_t identity;
    std::shared_ptr<PeerMemoryMap> map;
};
std::vector<HeldPeerMemory> peer_memory_held();

// Node-local peer `pid`'s memfd `descriptor` (whose identity is `identity`), mapped
// whole: one of `held` with that pid and identity, or the cache's, or mapped now (and
// cached). A mapping the cache drops stays valid while a window holds it.
std::shared_ptr<PeerMemoryMap> peer_memory_map(const std::vector<HeldPeerMemory> &held, pid_t pid,
                                               int descriptor, std::uint64_t identity,
                                               Status *status);

}  // namespace nbrma::transport::shm

#endif
