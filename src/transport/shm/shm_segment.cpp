#include "transport/shm/shm_segment.hpp"

#include <cerrno>
#include "common/settings.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace nbrma::transport::shm {

void test_die_at(const char *point) {
    const char *at = settings::env(settings::Id::test_die_at);
    if (!at || std::strcmp(at, point) != 0) return;
    std::fprintf(stderr, "nbrma: NBRMA_TEST_DIE_AT=%s: killing pid %d\n", point,
                 static_cast<int>(getpid()));
    std::fflush(stderr);
    std::raise(SIGKILL);
}

ShmSegment::~ShmSegment() {
    withdraw();
    if (address_) munmap(address_, size_);
}

Status ShmSegment::map(int fd, std::size_t size) {
    void *address = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (address == MAP_FAILED) {
        error_ = errno;
        return Status::err_no_memory;
    }
    address_ = address;
    size_ = size;
    return Status::ok;
}

Status ShmSegment::prepare() {
    int fd = memfd_create("nbrma", MFD_CLOEXEC);
    if (fd < 0) {
        error_ = errno;
        return Status::err_transport;
    }
    if (fchmod(fd, 0600) != 0) {
        close(fd);
        return Status::err_transport;
    }
    fd_ = fd;
    return Status::ok;
}

std::string ShmSegment::name_of(int pid, int fd) {
    return "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
}

// ftruncate to the same length by several processes in any order leaves that length;
// a file already longer is not this window's segment (a descriptor number reused).
static Status size_to(int fd, std::size_t size) {
    struct stat info;
    if (fstat(fd, &info) != 0) return Status::err_transport;
    const auto have = static_cast<std::size_t>(info.st_size);
    if (have == size) return Status::ok;
    if (have > size) return Status::err_transport;
    return ftruncate(fd, static_cast<off_t>(size)) == 0 ? Status::ok : Status::err_no_memory;
}

Status ShmSegment::create(std::size_t size) {
    if (fd_ < 0)
        if (Status prepared = prepare(); is_error(prepared)) return prepared;
    if (!size) size = 1;
    Status status = size_to(fd_, size);
    if (is_error(status) && !error_) error_ = errno;
    if (!is_error(status)) status = map(fd_, size);
    if (is_error(status)) {
        withdraw();
        return status;
    }
    name_ = name_of(getpid(), fd_);
    test_die_at("creator_created");
    return Status::ok;
}

Status ShmSegment::open(const std::string &name, std::size_t size) {
    test_die_at("peer_before_open");
    int fd = ::open(name.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        error_ = errno;
        return Status::err_transport;
    }
    const std::size_t want = size ? size : 1;
    Status status = size_to(fd, want);
    if (!is_error(status)) status = map(fd, want);
    close(fd);
    if (!is_error(status)) name_ = name;
    test_die_at("peer_opened");
    return status;
}

void ShmSegment::withdraw() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
}

}  // namespace nbrma::transport::shm
