// A shared-memory segment that never has a name in /dev/shm: an anonymous memfd
// (memfd_create), 0600, mapped by its creator; the node's other ranks open it as
// /proc/<creator pid>/fd/<fd> (which needs only what reading /proc/<pid>/fd needs:
// same user, dumpable process; Yama's ptrace_scope does not restrict it). The memory
// lives as long as a mapping or the creator's descriptor does, so a rank killed at any
// point leaves nothing behind, and the creator never has to wait for the others
// before the segment is safe. The creator closes its descriptor (withdraw) once every
// local rank has mapped the segment, or creation has failed.
//
// Every rank prepares an empty memfd before window creation's one exchange and
// publishes its descriptor number in it (the name is then known without a second
// message); the node's creator sizes and maps its own, the others open the creator's
// and size it too (the same size: whoever comes first, the file ends the same), and
// withdraw theirs unused.
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

    // Makes the empty memfd; descriptor() is its number, peers open it as
    // name_of(getpid(), descriptor()).
    Status prepare();
    int descriptor() const { return fd_; }
    static std::string name_of(int pid, int fd);
    // Sizes the segment (prepare()d, or made here) to `size` zero-filled bytes, maps it.
    Status create(std::size_t size);
    // Maps the segment another process prepared, by its name, sizing it to `size`
    // bytes if its creator has not yet.
    Status open(const std::string &name, std::size_t size);
    // Creator: closes the descriptor peers open the segment through (they can no longer
    // open it); the mapping stays valid.
    void withdraw();

    void *address() const { return address_; }
    std::size_t size() const { return size_; }
    // The errno of the last failed system call (0: none), for an error that names the
    // limit hit (EMFILE: RLIMIT_NOFILE, ...).
    int error() const { return error_; }
    const std::string &name() const { return name_; }

  private:
    Status map(int fd, std::size_t size);
    void *address_ = nullptr;
    std::size_t size_ = 0;
    std::string name_;
    int fd_ = -1;  // creator: the memfd, until withdrawn
    int error_ = 0;
};

// Test hook (test/rma/die_cleanup): with NBRMA_TEST_DIE_AT=<point> in the environment,
// a process that reaches <point> kills itself with SIGKILL.
void test_die_at(const char *point);

}  // namespace nbrma::transport::shm

#endif
