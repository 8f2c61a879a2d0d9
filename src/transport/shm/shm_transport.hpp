// The node-local transport. Control regions and the window memory of
// MPI_Win_allocate[_shared] live in one shared segment mapped by every local rank:
// direct loads/stores and CPU atomics. Memory the user passed to MPI_Win_create or
// MPI_Win_attach is reached with Linux cross-memory attach (process_vm_readv/writev):
// one copy, no target involvement, but no atomics (the engine then uses the
// accumulate lock). Every operation completes inline.
#ifndef NBRMA_TRANSPORT_SHM_SHM_TRANSPORT_HPP
#define NBRMA_TRANSPORT_SHM_SHM_TRANSPORT_HPP

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "transport/directory.hpp"
#include "transport/shm/peer_memory.hpp"
#include "transport/shm/user_memory.hpp"
#include "transport/transport.hpp"

namespace nbrma::transport::shm {

struct ShmPeer {
    std::uint8_t *control = nullptr;  // the peer's mapped control region
    std::uint8_t *window = nullptr;   // the peer's mapped window memory, or null (CMA)
    std::uint64_t window_size = 0;    // bytes reachable in the window region
    std::uint64_t remote_base = 0;    // CMA: the peer's base address (0 for dynamic windows)
    pid_t pid = 0;                    // CMA: the peer's process
    // NBRMA_PROGRESS=interrupt: the peer's bell in the node's help table, bumped after
    // every write into the peer's control region at or past ControlLayout::watched
    // (what a pending epoch of the peer may wait on). Null otherwise.
    std::atomic<std::uint64_t> *bell = nullptr;
};

class ShmTransport final : public Transport {
  public:
    ShmTransport(int rank, std::size_t control_size, std::vector<ShmPeer> peers);

    int size() const override { return static_cast<int>(peers_.size()); }
    int rank() const override { return rank_; }
    void *local_control() override { return peers_[rank_].control; }

    Status put(int peer, const void *source, std::size_t length, RemoteAddress target,
               Completion *completion) override;
    Status get(int peer, void *destination, std::size_t length, RemoteAddress source,
               Completion *completion) override;
    Status atomic(int peer, AtomicOp op, RemoteAddress target, std::uint64_t operand,
                  std::uint64_t compare, std::uint64_t *result,
                  Completion *completion) override;
    bool supports_atomics(int peer, Region region) const override;
    Status atomic32(int peer, AtomicOp op, RemoteAddress target, std::uint32_t operand,
                    std::uint32_t compare, std::uint32_t *result, Completion *completion) override;
    bool supports_atomics32(int peer, Region region) const override {
        return supports_atomics(peer, region);
    }
    Status atomic_small(int peer, AtomicOp op, RemoteAddress target, std::size_t width,
                        std::uint32_t operand, std::uint32_t compare, void *result,
                        Completion *completion) override;
    bool supports_atomics_small(int peer, Region region) const override {
        return supports_atomics(peer, region);
    }
    bool atomic_aligned(int peer, RemoteAddress address, std::size_t width) override;
    bool peek_control(int peer, std::uint64_t offset, std::uint64_t *value) override;
    std::uint64_t *mapped_control_word(int peer, std::uint64_t offset) override {
        if (!valid_peer(peer) || offset % 8 != 0 || offset >= control_size_ ||
            control_size_ - offset < 8 || (offset >= watched_offset_ && peers_[peer].bell))
            return nullptr;
        return reinterpret_cast<std::uint64_t *>(peers_[peer].control + offset);
    }
    std::uint8_t *mapped_window(int peer, std::uint64_t offset, std::size_t length) override {
        if (!valid_peer(peer)) return nullptr;
        const ShmPeer &p = peers_[peer];
        if (!p.window || offset > p.window_size || length > p.window_size - offset)
            return nullptr;
        return p.window + offset;
    }
    std::uint8_t *mapped_window_whole(int peer, std::uint64_t *length) override {
        *length = valid_peer(peer) && peers_[peer].window ? peers_[peer].window_size : 0;
        return *length ? peers_[peer].window : nullptr;
    }
    Status put_deferrable(int peer, const void *source, std::size_t length,
                          RemoteAddress target) override;
    Status get_deferrable(int peer, void *destination, std::size_t length,
                          RemoteAddress source) override;
    Status settle() override;
    Status fence(int peer) override;
    Status flush(int peer, Completion *completion) override;
    int poll() override { return 0; }
    Capabilities capabilities() const override { return {true, false, true, false, true}; }

    // Dynamic windows: our directory lives in our heap (header in our control region);
    // origins copy peers' directories with CMA. A MixedTransport enables it too, only to
    // read the directories its UCX transport writes (same format). With `moved_regions`
    // (shm only) a region attached in pages moved into a memfd (user_memory.hpp) is
    // published with that memfd as its key, and origins map it at their first access to
    // it: loads and stores instead of cross-memory attach.
    void enable_dynamic(bool moved_regions = false);
    Status attach(const void *base, std::uint64_t size) override;
    Status detach(const void *base) override;
    Status check_attached(int peer, std::uint64_t low, std::uint64_t high) override;

  private:
    class DirectorySource;
    // Every call refuses a peer outside the window's ranks (err_rank, or no direct
    // pointer), whatever its caller checked.
    bool valid_peer(int peer) const {
        return static_cast<unsigned>(peer) < static_cast<unsigned>(peers_.size());
    }
    // Local address of (peer, region, offset) when directly mapped, else null.
    std::uint8_t *mapped(int peer, RemoteAddress address, std::size_t length, Status *status);
    // After a write to (peer, address): rings the peer's bell if a wait may depend on it.
    void ring(int peer, RemoteAddress address) {
        if (address.region == Region::control && address.offset >= watched_offset_ &&
            peers_[peer].bell)
            peers_[peer].bell->fetch_add(1, std::memory_order_seq_cst);
    }
    Status cross_memory(int peer, void *local, std::size_t length, std::uint64_t offset,
                        bool write);
    // Dynamic windows: where [address, address + length) of the peer lies in one attached
    // region it moved into a memfd, that region mapped here (cached until the peer's
    // directory changes); null where cross-memory attach must do.
    std::uint8_t *moved_region(int peer, std::uint64_t address, std::size_t length);
    // Dynamic windows: whether the word of `width` bytes at `address` of the peer lies in a region
    // it moved (its directory says so, alike for every origin: accesses to a word never mix CPU
    // atomics with the accumulate lock), and in *word where this process reaches it (null: the
    // region could not be mapped here).
    bool moved_word(int peer, std::uint64_t address, std::size_t width, std::uint8_t **word);
    template <typename T>
    Status atomic_word(int peer, AtomicOp op, RemoteAddress target, T operand, T compare,
                       T *result);
    struct WordRegion {  // the moved region moved_word found last, where it is mapped
        int peer = -1;
        std::uint64_t low = 0, high = 0, generation = 0;
        std::uint8_t *base = nullptr;
    };
    WordRegion last_word_region_;
    struct MovedRegion {
        std::uint64_t base = 0, length = 0, generation = 0;
        std::unique_ptr<PeerMemoryMap> map;
    };
    Status vm_copy(int peer, void *local, std::size_t length, std::uint64_t remote, bool write);
    // Cross-memory copies put_deferrable and get_deferrable held (settle() performs
    // them), one batch per peer and direction, as process_vm_writev/readv's iovec pairs.
    struct Batch {
        std::vector<iovec> local, remote;
        std::size_t bytes = 0;
    };
    struct HeldCopies {
        Batch writes, reads;
        bool listed = false;  // in holding_
    };
    // Holds a copy that cross_memory would make now, when it goes through
    // process_vm_writev/readv; false (nothing held) when it must be made now.
    bool hold(int peer, void *local, std::size_t length, std::uint64_t offset, bool write,
              Status *status);
    Status settle_batch(int peer, Batch &batch, bool write);
    std::vector<HeldCopies> held_;  // by peer
    std::vector<int> holding_;      // the peers with held copies

    int rank_;
    std::size_t control_size_;
    std::size_t watched_offset_;
    std::vector<ShmPeer> peers_;
    bool dynamic_ = false;
    bool moved_regions_ = false;
    std::vector<std::vector<MovedRegion>> moved_;  // peers' mapped regions, by rank
    std::unique_ptr<DirectoryWriter> directory_;
    std::vector<DirectoryCache> directories_;  // peers', by rank
};

}  // namespace nbrma::transport::shm

#endif
