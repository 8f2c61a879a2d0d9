// What the kernel says about ranges of this process's memory, asked before nbrma moves
// pages (user_memory.cpp): mappings by file path (/proc/self/maps), the calling thread's
// stack, private anonymous writable memory, locked or huge-page memory.
#ifndef NBRMA_TRANSPORT_SHM_MEMORY_QUERIES_HPP
#define NBRMA_TRANSPORT_SHM_MEMORY_QUERIES_HPP

#include <cstdint>

namespace nbrma::transport::shm {

// One mapping of a file: its addresses and where they start in the file.
struct Mapping {
    std::uintptr_t low, high;
    std::uint64_t offset;  // in the file
};
// The mappings /proc/self/maps lists whose path begins with `prefix` (with `whole`:
// is `prefix`, perhaps followed by " (deleted)"), at most `most` of them, into `out`;
// returns how many. Allocates nothing: a child of fork runs it while the heap may still
// be in pages it shares with its parent.
int find_mappings(const char *prefix, bool whole, Mapping *out, int most);

// The calling thread's stack (moving it would fault the mover itself).
bool on_own_stack(std::uintptr_t low, std::uintptr_t high);

// Private anonymous memory (madvise(MADV_WIPEONFORK) accepts nothing else; the advice is
// taken back at once), mapped throughout and writable (MADV_POPULATE_WRITE fails on a
// read-only or inaccessible page: moved pages are read-write, which such memory must
// not become).
bool private_anonymous(std::uintptr_t low, std::uintptr_t high);

// Memory the application locked (mlock, mlockall: VmFlags "lo") or backs with huge pages
// (madvise(MADV_HUGEPAGE): "hg"; or AnonHugePages in use) anywhere in [low, high), by
// /proc/self/smaps: moving such pages would unlock them or split them into small pages.
// Unreadable smaps counts as such memory.
bool locked_or_huge(std::uintptr_t low, std::uintptr_t high);

}  // namespace nbrma::transport::shm

#endif
