#include "transport/shm/memory_queries.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace nbrma::transport::shm {

int find_mappings(const char *prefix, bool whole, Mapping *out, int most) {
    const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    const std::size_t prefix_length = std::strlen(prefix);
    int count = 0;
    char chunk[4096], line[512];
    std::size_t used = 0;
    for (ssize_t got; (got = read(fd, chunk, sizeof chunk)) > 0;) {
        for (ssize_t i = 0; i < got; ++i) {
            if (chunk[i] != '\n') {
                if (used < sizeof line - 1) line[used++] = chunk[i];
                continue;
            }
            line[used] = '\0';
            used = 0;
            unsigned long low = 0, high = 0, offset = 0;
            int path_at = 0;
            if (std::sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &low, &high, &offset,
                            &path_at) < 3 ||
                path_at == 0)
                continue;
            const char *path = line + path_at;
            if (std::strncmp(path, prefix, prefix_length) != 0 ||
                (whole && path[prefix_length] != '\0' && path[prefix_length] != ' '))
                continue;
            if (count < most) out[count++] = {low, high, offset};
        }
    }
    close(fd);
    return count;
}

// The calling thread's stack (moving it would fault the mover itself).
bool on_own_stack(std::uintptr_t low, std::uintptr_t high) {
    thread_local std::uintptr_t stack_low = 0, stack_high = 0;
    if (stack_high == 0) {
        pthread_attr_t attributes;
        void *address = nullptr;
        std::size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
            pthread_attr_getstack(&attributes, &address, &size);
            pthread_attr_destroy(&attributes);
        }
        stack_low = reinterpret_cast<std::uintptr_t>(address);
        stack_high = stack_low + size;
        if (stack_high == 0) {  // unknown: keep a generous zone around the stack pointer
            const auto here = reinterpret_cast<std::uintptr_t>(&address);
            stack_low = here - (std::uintptr_t{1} << 20);
            stack_high = here + (std::uintptr_t{16} << 20);
        }
    }
    return low < stack_high && stack_low < high;
}

// Private anonymous memory (madvise(MADV_WIPEONFORK) accepts nothing else; the advice is
// taken back at once), mapped throughout and writable (MADV_POPULATE_WRITE fails on a
// read-only or inaccessible page: moved pages are read-write, which such memory must
// not become).
bool private_anonymous(std::uintptr_t low, std::uintptr_t high) {
    void *pages = reinterpret_cast<void *>(low);
    if (madvise(pages, high - low, MADV_WIPEONFORK) != 0) return false;
    madvise(pages, high - low, MADV_KEEPONFORK);
    return madvise(pages, high - low, MADV_POPULATE_WRITE) == 0;
}

// Memory the application locked (mlock, mlockall: VmFlags "lo") or backs with huge pages
// (madvise(MADV_HUGEPAGE): "hg"; or AnonHugePages in use) anywhere in [low, high), by
// /proc/self/smaps: moving such pages would unlock them or split them into small pages.
// Unreadable smaps counts as such memory.
bool locked_or_huge(std::uintptr_t low, std::uintptr_t high) {
    std::FILE *smaps = std::fopen("/proc/self/smaps", "re");
    if (!smaps) return true;
    bool found = false, inside = false;
    char line[512];
    while (!found && std::fgets(line, sizeof line, smaps)) {
        unsigned long first = 0, last = 0, kib = 0;
        int end = 0;
        if (std::sscanf(line, "%lx-%lx %n", &first, &last, &end) == 2 && end > 0) {
            inside = first < high && low < last;
        } else if (!inside) {
            continue;
        } else if (std::sscanf(line, "AnonHugePages: %lu", &kib) == 1 ||
                   std::sscanf(line, "Locked: %lu", &kib) == 1) {
            found = kib > 0;
        } else if (std::strncmp(line, "VmFlags:", 8) == 0) {
            found = std::strstr(line, " lo") || std::strstr(line, " hg");
        }
    }
    std::fclose(smaps);
    return found;
}

}  // namespace nbrma::transport::shm
