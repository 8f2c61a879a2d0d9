// A POSIX shared-memory segment: created 0600 under an unguessable name, mapped
// by every local rank, unlinked as soon as all have mapped it (so a crash leaves
// nothing in /dev/shm).
#ifndef NBRMA_TRANSPORT_SHM_SHM_SEGMENT_HPP
#define NBRMA_TRANSPORT_SHM_SHM_SEGMENT_HPP

#include <cstddef>
#include <string>

#include "common/status.hpp"

namespace nbrma::transport::shm {

class ShmSegment {
  public:
    ShmSegment() = default;
    ShmSegment(const ShmSegment &) = delete;
    ShmSegment &operator=(const ShmSegment &) = delete;
    ~ShmSegment();

    // Creates a new zero-filled segment of `size` bytes with a fresh random name.
    Status create(std::size_t size);
    // Maps the segment another rank created.
    Status open(const std::string &name, std::size_t size);
    // Removes the name; the mapping stays valid.
    void unlink();

    void *address() const { return address_; }
    std::size_t size() const { return size_; }
    const std::string &name() const { return name_; }

  private:
    Status map(int fd, std::size_t size);
    void *address_ = nullptr;
    std::size_t size_ = 0;
    std::string name_;
    bool linked_ = false;
};

}  // namespace nbrma::transport::shm

#endif
