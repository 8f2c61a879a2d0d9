#include "transport/shm/peer_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>

#include "transport/shm/shm_segment.hpp"

namespace nbrma::transport::shm {

namespace {

std::uint64_t page_size() {
    static const std::uint64_t size = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    return size;
}

}  // namespace

PeerMemoryMap::~PeerMemoryMap() {
    if (mapping_) munmap(mapping_, length_);
}

Status PeerMemoryMap::map(pid_t pid, int descriptor, std::uint64_t first, std::uint64_t length) {
    const int fd = ::open(ShmSegment::name_of(pid, descriptor).c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return Status::err_transport;
    if (length == 0) {  // the whole file
        struct stat file{};
        if (fstat(fd, &file) != 0 || file.st_size <= 0) {
            close(fd);
            return Status::err_transport;
        }
        length = static_cast<std::uint64_t>(file.st_size);
    }
    void *mapping = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                         static_cast<off_t>(first));
    close(fd);
    if (mapping == MAP_FAILED) return Status::err_no_memory;
    mapping_ = mapping;
    length_ = length;
    first_ = first;
    return Status::ok;
}

Status PeerMemoryMap::open(pid_t pid, int descriptor, std::uint64_t offset, std::uint64_t size) {
    const std::uint64_t page = page_size();
    const std::uint64_t first = offset / page * page;
    if (size == 0 || offset > UINT64_MAX - size - page) return Status::err_arg;
    const std::uint64_t length = (offset + size + page - 1) / page * page - first;
    if (Status status = map(pid, descriptor, first, length); is_error(status)) return status;
    address_ = at(offset, size);
    return Status::ok;
}

Status PeerMemoryMap::open_file(pid_t pid, int descriptor) {
    if (Status status = map(pid, descriptor, 0, 0); is_error(status)) return status;
    address_ = static_cast<std::uint8_t *>(mapping_);
    return Status::ok;
}

std::uint8_t *PeerMemoryMap::at(std::uint64_t offset, std::uint64_t size) const {
    if (!mapping_ || offset < first_ || offset - first_ > length_ ||
        size > length_ - (offset - first_))
        return nullptr;
    return static_cast<std::uint8_t *>(mapping_) + (offset - first_);
}

namespace {
std::mutex peer_cache_mutex;
std::vector<HeldPeerMemory> peer_cache;  // oldest first
}  // namespace

std::vector<HeldPeerMemory> peer_memory_held() {
    std::lock_guard<std::mutex> lock(peer_cache_mutex);
    return peer_cache;
}

std::shared_ptr<PeerMemoryMap> peer_memory_map(const std::vector<HeldPeerMemory> &held, pid_t pid,
                                               int descriptor, std::uint64_t identity,
                                               Status *status) {
    // Up to 8, of any size: a mapping costs address space only once its owner freed the
    // memory (the owner punches the memfd's pages out: release_file).
    constexpr std::size_t most = 8;
    *status = Status::ok;
    for (const HeldPeerMemory &h : held)
        if (h.pid == pid && h.identity == identity) return h.map;
    std::lock_guard<std::mutex> lock(peer_cache_mutex);
    for (const HeldPeerMemory &h : peer_cache)
        if (h.pid == pid && h.identity == identity) return h.map;
    auto map = std::make_shared<PeerMemoryMap>();
    *status = map->open_file(pid, descriptor);
    if (is_error(*status)) return nullptr;
    if (identity != 0) {
        peer_cache.push_back({pid, identity, map});
        while (peer_cache.size() > most) peer_cache.erase(peer_cache.begin());
    }
    return map;
}

}  // namespace nbrma::transport::shm
