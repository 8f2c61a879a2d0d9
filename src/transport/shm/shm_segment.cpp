#include "transport/shm/shm_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <random>

namespace nbrma::transport::shm {

ShmSegment::~ShmSegment() {
    unlink();
    if (address_) munmap(address_, size_);
}

Status ShmSegment::map(int fd, std::size_t size) {
    void *address = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (address == MAP_FAILED) return Status::err_no_memory;
    address_ = address;
    size_ = size;
    return Status::ok;
}

Status ShmSegment::create(std::size_t size) {
    std::random_device random;
    char name[64];
    for (int attempt = 0; attempt < 16; ++attempt) {
        std::snprintf(name, sizeof name, "/nbrma-%d-%08x%08x", static_cast<int>(getpid()),
                      random(), random());
        int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0) continue;
        if (ftruncate(fd, static_cast<off_t>(size ? size : 1)) != 0) {
            close(fd);
            shm_unlink(name);
            return Status::err_no_memory;
        }
        name_ = name;
        linked_ = true;
        Status status = map(fd, size ? size : 1);
        if (is_error(status)) unlink();
        return status;
    }
    return Status::err_transport;
}

Status ShmSegment::open(const std::string &name, std::size_t size) {
    int fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) return Status::err_transport;
    name_ = name;
    return map(fd, size ? size : 1);
}

void ShmSegment::unlink() {
    if (linked_) shm_unlink(name_.c_str());
    linked_ = false;
}

}  // namespace nbrma::transport::shm
