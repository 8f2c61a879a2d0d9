#include "transport/shm/shm_transport.hpp"

#include <sched.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/copy.hpp"
#include "layout/control_region.hpp"
#include "transport/cpu_atomics.hpp"

namespace nbrma::transport::shm {

using layout::ControlLayout;

ShmTransport::ShmTransport(int rank, std::size_t control_size, std::vector<ShmPeer> peers)
    : rank_(rank),
      control_size_(control_size),
      watched_offset_(ControlLayout::watched),
      peers_(std::move(peers)) {}

namespace {

// [offset, offset + length) lies in a region of `size` bytes (never wraps around).
bool inside(std::uint64_t offset, std::size_t length, std::uint64_t size) {
    return offset <= size && length <= size - offset;
}

// Dynamic windows address by absolute address: nothing in the first page is ever
// attached memory (a displacement computed from a null base lands there).
constexpr std::uint64_t null_page = 4096;

// The transport's own bounds check of a cross-memory access to the peer's window: within
// the window the peer registered (for dynamic windows, remote_base 0 and window_size all
// of memory: an address range that neither wraps around nor starts in the null page).
bool cross_memory_inside(const ShmPeer &p, std::uint64_t offset, std::size_t length) {
    return inside(offset, length, p.window_size) && p.remote_base + offset >= null_page;
}

// Control-region writes (lock grants, successor records, reader links) are words their
// owner reads, clears and reuses while the writer may still be running. memcpy must not
// do them: glibc copies 8 bytes as two overlapping 8-byte stores to the same address, and
// a writer preempted between the two rewrote a grant its owner had already consumed and
// cleared - the owner then took a lock someone else held (lock_at_once 4: lost updates
// with a progress thread and in mixed windows). Here each aligned word is one atomic
// store, anything else one byte store at a time.
void store_words(std::uint8_t *destination, const std::uint8_t *source, std::size_t length) {
    while (length >= 8 && reinterpret_cast<std::uintptr_t>(destination) % 8 == 0) {
        std::uint64_t word;
        std::memcpy(&word, source, 8);
        __atomic_store_n(reinterpret_cast<std::uint64_t *>(destination), word, __ATOMIC_RELEASE);
        destination += 8;
        source += 8;
        length -= 8;
    }
    for (; length > 0; --length)
        __atomic_store_n(destination++, *source++, __ATOMIC_RELEASE);
}

}  // namespace

std::uint8_t *ShmTransport::mapped(int peer, RemoteAddress address, std::size_t length,
                                   Status *status) {
    if (!valid_peer(peer)) {
        *status = Status::err_rank;
        return nullptr;
    }
    const ShmPeer &p = peers_[peer];
    *status = Status::ok;
    if (address.region == Region::control) {
        if (!inside(address.offset, length, control_size_)) *status = Status::err_range;
        return p.control + address.offset;
    }
    if (!p.window) return nullptr;  // cross-memory: checked in cross_memory
    if (!inside(address.offset, length, p.window_size)) *status = Status::err_range;
    return p.window + address.offset;
}

// The transport's own bounds check, whatever the engine computed: within the window
// the peer registered (MPI_Win_create), or for dynamic windows (remote_base 0,
// window_size all of memory) an address range that neither wraps around nor starts in
// the null page and lies in regions the peer attached (its directory).
Status ShmTransport::cross_memory(int peer, void *local, std::size_t length,
                                  std::uint64_t offset, bool write) {
    const ShmPeer &p = peers_[peer];
    if (!cross_memory_inside(p, offset, length)) return Status::err_range;
    if (dynamic_) {
        Status status = check_attached(peer, offset, offset + length);
        if (is_error(status)) return status;
        if (std::uint8_t *direct = moved_region(peer, offset, length)) {
            if (write)
                copy_bytes(direct, local, length);
            else
                copy_bytes(local, direct, length);
            return Status::ok;
        }
    }
    return vm_copy(peer, local, length, p.remote_base + offset, write);
}

Status ShmTransport::vm_copy(int peer, void *local, std::size_t length, std::uint64_t remote,
                             bool write) {
    const ShmPeer &p = peers_[peer];
    if (peer == rank_) {
        auto *address = reinterpret_cast<void *>(remote);
        if (write)
            std::memmove(address, local, length);
        else
            std::memmove(local, address, length);
        return Status::ok;
    }
    auto *cursor = static_cast<std::uint8_t *>(local);
    while (length > 0) {
        iovec local_iov{cursor, length};
        iovec remote_iov{reinterpret_cast<void *>(remote), length};
        ssize_t moved = write ? process_vm_writev(p.pid, &local_iov, 1, &remote_iov, 1, 0)
                              : process_vm_readv(p.pid, &local_iov, 1, &remote_iov, 1, 0);
        if (moved < 0) {
            if (errno == EINTR) continue;
            return errno == EFAULT ? Status::err_range : Status::err_transport;
        }
        if (moved == 0) return Status::err_transport;
        cursor += moved;
        remote += static_cast<std::uint64_t>(moved);
        length -= static_cast<std::size_t>(moved);
    }
    return Status::ok;
}

Status ShmTransport::put(int peer, const void *source, std::size_t length, RemoteAddress target,
                         Completion *) {
    Status status;
    std::uint8_t *destination = mapped(peer, target, length, &status);
    if (is_error(status)) return status;
    if (!destination)
        return cross_memory(peer, const_cast<void *>(source), length, target.offset, true);
    if (target.region == Region::control)
        store_words(destination, static_cast<const std::uint8_t *>(source), length);
    else
        copy_bytes(destination, source, length);
    ring(peer, target);
    return Status::ok;
}

Status ShmTransport::get(int peer, void *destination, std::size_t length, RemoteAddress source,
                         Completion *) {
    Status status;
    std::uint8_t *origin = mapped(peer, source, length, &status);
    if (is_error(status)) return status;
    if (!origin) return cross_memory(peer, destination, length, source.offset, false);
    copy_bytes(destination, origin, length);
    return Status::ok;
}

bool ShmTransport::peek_control(int peer, std::uint64_t offset, std::uint64_t *value) {
    if (!valid_peer(peer) || offset % 8 != 0) return false;
    Status status;
    auto *word = reinterpret_cast<std::uint64_t *>(
        mapped(peer, RemoteAddress{Region::control, offset}, 8, &status));
    if (is_error(status) || !word) return false;
    *value = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    return true;
}

// One CPU atomic on the word of sizeof(T) bytes at target, aligned to its width, where
// this process reaches it: mapped, or (dynamic windows) moved into the arena.
template <typename T>
Status ShmTransport::atomic_word(int peer, AtomicOp op, RemoteAddress target, T operand, T compare,
                                 T *result) {
    Status status;
    std::uint8_t *word = mapped(peer, target, sizeof(T), &status);
    if (is_error(status)) return status;
    if (!word && dynamic_ && target.region == Region::window) {
        if (!moved_word(peer, target.offset, sizeof(T), &word)) return Status::err_unsupported;
        if (!word) return Status::err_transport;  // its peers use CPU atomics there
    }
    if (!word) return Status::err_unsupported;
    if (reinterpret_cast<std::uintptr_t>(word) % sizeof(T) != 0) return Status::err_arg;
    const T previous = apply_atomic(reinterpret_cast<T *>(word), op, operand, compare);
    ring(peer, target);
    if (result) *result = previous;
    return Status::ok;
}

Status ShmTransport::atomic(int peer, AtomicOp op, RemoteAddress target, std::uint64_t operand,
                            std::uint64_t compare, std::uint64_t *result, Completion *) {
    return atomic_word(peer, op, target, operand, compare, result);
}

Status ShmTransport::atomic32(int peer, AtomicOp op, RemoteAddress target, std::uint32_t operand,
                              std::uint32_t compare, std::uint32_t *result, Completion *) {
    return atomic_word(peer, op, target, operand, compare, result);
}

Status ShmTransport::atomic_small(int peer, AtomicOp op, RemoteAddress target, std::size_t width,
                                  std::uint32_t operand, std::uint32_t compare, void *result,
                                  Completion *) {
    if (width == 2)
        return atomic_word(peer, op, target, static_cast<std::uint16_t>(operand),
                           static_cast<std::uint16_t>(compare),
                           static_cast<std::uint16_t *>(result));
    if (width == 1)
        return atomic_word(peer, op, target, static_cast<std::uint8_t>(operand),
                           static_cast<std::uint8_t>(compare), static_cast<std::uint8_t *>(result));
    return Status::err_arg;
}

bool ShmTransport::supports_atomics(int peer, Region region) const {
    if (!valid_peer(peer)) return false;
    return region == Region::control || peers_[peer].window != nullptr || moved_regions_;
}

bool ShmTransport::atomic_aligned(int peer, RemoteAddress address, std::size_t width) {
    if (!valid_peer(peer)) return false;
    if (dynamic_ && address.region == Region::window) {
        std::uint8_t *word = nullptr;
        return moved_regions_ && address.offset % width == 0 &&
               moved_word(peer, address.offset, width, &word);
    }
    Status status;
    const std::uint8_t *word = mapped(peer, address, width, &status);
    return !is_error(status) && word && reinterpret_cast<std::uintptr_t>(word) % width == 0;
}

Status ShmTransport::fence(int peer) {
    if (!valid_peer(peer)) return Status::err_rank;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return Status::ok;
}

Status ShmTransport::flush(int peer, Completion *) {
    if (!valid_peer(peer)) return Status::err_rank;
    const Status settled = holding_.empty() ? Status::ok : settle();
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return settled;
}

// ---------------------------------------------------------------- held copies

Status ShmTransport::put_deferrable(int peer, const void *source, std::size_t length,
                                    RemoteAddress target) {
    Status status;
    if (valid_peer(peer) && target.region == Region::window && !peers_[peer].window &&
        hold(peer, const_cast<void *>(source), length, target.offset, true, &status))
        return status;
    return put(peer, source, length, target, nullptr);
}

Status ShmTransport::get_deferrable(int peer, void *destination, std::size_t length,
                                    RemoteAddress source) {
    Status status;
    if (valid_peer(peer) && source.region == Region::window && !peers_[peer].window &&
        hold(peer, destination, length, source.offset, false, &status))
        return status;
    return get(peer, destination, length, source, nullptr);
}

// A cross-memory copy of MPI_Win_create memory worth gathering: small (one system call
// a copy costs about 2 us, a page pinned about 0.3), toward another process, checked as
// cross_memory checks it. Dynamic windows copy at once (their regions may move).
bool ShmTransport::hold(int peer, void *local, std::size_t length, std::uint64_t offset, bool write,
                        Status *status) {
    constexpr std::size_t largest = 64 * 1024;      // a copy held
    constexpr std::size_t most_copies = 64;         // a batch (IOV_MAX is 1024)
    constexpr std::size_t most_bytes = 256 * 1024;  // a batch
    const ShmPeer &p = peers_[peer];
    if (peer == rank_ || dynamic_ || length == 0 || length > largest ||
        !cross_memory_inside(p, offset, length))
        return false;  // cross_memory copies it, or refuses it, now
    if (held_.empty()) held_.resize(peers_.size());
    HeldCopies &copies = held_[peer];
    if (!copies.listed) {
        copies.listed = true;
        holding_.push_back(peer);
    }
    Batch &batch = write ? copies.writes : copies.reads;
    batch.local.push_back(iovec{local, length});
    batch.remote.push_back(iovec{reinterpret_cast<void *>(p.remote_base + offset), length});
    batch.bytes += length;
    *status = batch.local.size() >= most_copies || batch.bytes >= most_bytes
                  ? settle_batch(peer, batch, write)
                  : Status::ok;
    return true;
}

Status ShmTransport::settle() {
    Status result = Status::ok;
    for (int peer : holding_) {
        HeldCopies &copies = held_[peer];
        copies.listed = false;
        for (const bool write : {true, false}) {
            Batch &batch = write ? copies.writes : copies.reads;
            if (batch.local.empty()) continue;
            const Status status = settle_batch(peer, batch, write);
            if (!is_error(result)) result = status;
        }
    }
    holding_.clear();
    return result;
}

// One process_vm_writev/readv for the whole batch, continued past partial transfers.
Status ShmTransport::settle_batch(int peer, Batch &batch, bool write) {
    const pid_t pid = peers_[peer].pid;
    const std::size_t count = batch.local.size();
    std::size_t first = 0;
    Status status = Status::ok;
    while (first < count) {
        const ssize_t moved = write ? process_vm_writev(pid, &batch.local[first], count - first,
                                                        &batch.remote[first], count - first, 0)
                                    : process_vm_readv(pid, &batch.local[first], count - first,
                                                       &batch.remote[first], count - first, 0);
        if (moved < 0 && errno == EINTR) continue;
        if (moved <= 0) {
            status = moved < 0 && errno == EFAULT ? Status::err_range : Status::err_transport;
            break;
        }
        auto left = static_cast<std::size_t>(moved);
        while (first < count && left >= batch.local[first].iov_len) {
            left -= batch.local[first].iov_len;
            ++first;
        }
        if (left > 0) {  // part of one copy: the rest of it next
            for (iovec *side : {&batch.local[first], &batch.remote[first]}) {
                side->iov_base = static_cast<std::uint8_t *>(side->iov_base) + left;
                side->iov_len -= left;
            }
        }
    }
    batch.local.clear();
    batch.remote.clear();
    batch.bytes = 0;
    return status;
}

// ---------------------------------------------------------------- dynamic windows

// A peer's directory: the header in its mapped control region, the slot array in its
// heap through CMA.
class ShmTransport::DirectorySource final : public DirectoryCache::Source {
  public:
    DirectorySource(ShmTransport &owner, int peer) : owner_(owner), peer_(peer) {}
    Status read_header(std::size_t offset, void *destination, std::size_t length) override {
        const auto *words = reinterpret_cast<const std::uint64_t *>(
            owner_.peers_[peer_].control + ControlLayout::directory + offset);
        auto *out = static_cast<std::uint64_t *>(destination);
        for (std::size_t i = 0; i < length / 8; ++i)
            out[i] = __atomic_load_n(&words[i], __ATOMIC_ACQUIRE);
        return Status::ok;
    }
    Status read_array(const DirectoryHeader &, std::uint64_t address, void *destination,
                      std::size_t length) override {
        return owner_.vm_copy(peer_, destination, length, address, false);
    }

  private:
    ShmTransport &owner_;
    int peer_;
};

namespace {
// A moved region's key in the directory: the memfd's number and where the region starts
// in it.
struct MovedKey {
    std::uint64_t descriptor;
    std::uint64_t offset;
};
}  // namespace

void ShmTransport::enable_dynamic(bool moved_regions) {
    dynamic_ = true;
    moved_regions_ = moved_regions;
    directory_ = std::make_unique<DirectoryWriter>(peers_[rank_].control + ControlLayout::directory,
                                                   ControlLayout::directory_bytes,
                                                   moved_regions ? sizeof(MovedKey) : 0);
    directories_.resize(peers_.size());
    moved_.resize(peers_.size());
}

Status ShmTransport::attach(const void *base, std::uint64_t size) {
    if (!directory_) return Status::err_unsupported;
    const auto address = reinterpret_cast<std::uintptr_t>(base);
    int descriptor = -1;
    std::uint64_t offset = 0;
    if (moved_regions_ && size > 0 &&
        user_memory_find(base, static_cast<std::size_t>(size), &descriptor, &offset)) {
        const MovedKey key{static_cast<std::uint64_t>(descriptor), offset};
        return directory_->add(address, size, reinterpret_cast<const std::uint8_t *>(&key),
                               sizeof key);
    }
    return directory_->add(address, size, nullptr, 0);
}

std::uint8_t *ShmTransport::moved_region(int peer, std::uint64_t address, std::size_t length) {
    if (!moved_regions_ || peer == rank_) return nullptr;
    const DirectoryCache &directory = directories_[peer];
    std::size_t first = 0, count = 0;
    if (is_error(directory.cover(address, address + length, &first, &count)) || count != 1)
        return nullptr;
    const DirectoryCache::Region &region = directory.region(first);
    if (region.key_length != sizeof(MovedKey)) return nullptr;
    std::vector<MovedRegion> &cache = moved_[peer];
    for (const MovedRegion &m : cache)
        if (m.base == region.base && m.length == region.length &&
            m.generation == region.generation)
            return m.map->address() + (address - m.base);

    // First access: the key from the peer's slot array, the memfd mapped; then the
    // peer's directory must not have changed since it was read, so the descriptor was
    // still the region's (a detach closes it only after bumping the generation).
    MovedKey key{};
    if (is_error(vm_copy(peer, &key, sizeof key, directory.key_address(region.slot), false)))
        return nullptr;
    auto map = std::make_unique<PeerMemoryMap>();
    if (key.descriptor > INT32_MAX ||
        is_error(map->open(peers_[peer].pid, static_cast<int>(key.descriptor), key.offset,
                           region.length)))
        return nullptr;
    std::uint64_t generation = 0;
    DirectorySource source(*this, peer);
    if (is_error(source.read_header(0, &generation, sizeof generation)) ||
        generation != directory.generation())
        return nullptr;
    // Regions the directory no longer lists go (their memory may have moved back).
    cache.erase(std::remove_if(cache.begin(), cache.end(),
                               [&](const MovedRegion &m) {
                                   std::size_t at = 0, n = 0;
                                   return is_error(directory.cover(m.base, m.base + m.length,
                                                                   &at, &n)) ||
                                          n != 1 || directory.region(at).base != m.base ||
                                          directory.region(at).generation != m.generation;
                               }),
                cache.end());
    cache.push_back({region.base, region.length, region.generation, std::move(map)});
    return cache.back().map->address() + (address - region.base);
}

bool ShmTransport::moved_word(int peer, std::uint64_t address, std::size_t width,
                              std::uint8_t **word) {
    *word = nullptr;
    if (!moved_regions_ || address > UINT64_MAX - width) return false;
    // A region mapped while the peer's directory changed (it attached or detached some
    // region meanwhile) is not taken: the directory is read again, a bounded number of
    // times; a region that cannot be mapped with the directory unchanged never will be.
    for (int attempt = 0;; ++attempt) {
        // (the directory re-read if it changed; an address outside every region fails)
        if (is_error(check_attached(peer, address, address + width))) return false;
        const DirectoryCache &directory = directories_[peer];
        const std::uint64_t seen = directory.generation();
        WordRegion &last = last_word_region_;  // the region the last word was in
        if (last.peer == peer && last.generation == seen && last.low <= address &&
            address + width <= last.high) {
            *word = last.base + (address - last.low);
            return true;
        }
        std::size_t first = 0, count = 0;
        if (is_error(directory.cover(address, address + width, &first, &count)) || count != 1 ||
            directory.region(first).key_length != sizeof(MovedKey))
            return false;
        const DirectoryCache::Region &region = directory.region(first);
        // our own region is our memory (the pages peers map)
        *word = peer == rank_ ? reinterpret_cast<std::uint8_t *>(address)
                              : moved_region(peer, address, width);
        if (*word) {
            last = {peer, region.base, region.base + region.length, seen,
                    *word - (address - region.base)};
            return true;
        }
        std::uint64_t now = seen;
        if (attempt == 1000 ||
            is_error(DirectorySource(*this, peer).read_header(0, &now, sizeof now)) || now == seen)
            return true;
        sched_yield();
    }
}

Status ShmTransport::detach(const void *base) {
    if (!directory_) return Status::err_unsupported;
    return directory_->remove(reinterpret_cast<std::uintptr_t>(base));
}

Status ShmTransport::check_attached(int peer, std::uint64_t low, std::uint64_t high) {
    if (!dynamic_ || peer < 0 || peer >= size() || !peers_[peer].control) return Status::err_range;
    DirectorySource source(*this, peer);
    DirectoryCache &directory = directories_[peer];
    Status status = directory.refresh(source);
    if (is_error(status)) return status;
    std::size_t first = 0, count = 0;
    return directory.cover(low, high, &first, &count);
}

}  // namespace nbrma::transport::shm
