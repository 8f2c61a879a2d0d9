#include "transport/shm/user_memory.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <list>
#include <mutex>
#include <string>
#include <vector>

#include "common/settings.hpp"
#include "transport/shm/memory_queries.hpp"
#include "transport/shm/shm_segment.hpp"

namespace nbrma::transport::shm {

bool user_memory_sharing_requested() {
    const char *value = settings::env(settings::Id::share_user_memory);
    return value && std::strcmp(value, "1") == 0;
}

struct UserMemoryClaim::Entry {
    std::uintptr_t low;
    std::uintptr_t high;
    int fd;         // the memfd (offered or moved into), -1: exposed where it is
    bool moved;     // the pages live in the memfd
    int claims;     // live claims on this entry
    std::uint64_t id;  // the memfd is named "nbrma-user-<id>" (unique in the process)
    bool owned = false;   // nbrma's own memory (user_memory_map_owned): never moved back
    bool orphan = false;  // owned, given back while a window covered it: unmapped after it
};

namespace {

std::mutex registry_mutex;
std::list<UserMemoryClaim::Entry> registry;  // stable addresses
// Memfd identities: a per-process random high half (a pid reused by a later process on
// the node never repeats one), a count in the low half.
std::uint64_t next_id = 0;
char own_prefix[40] = "/memfd:nbrma-user-";  // + the nonce's 8 hex digits (fork child)
std::uint64_t new_identity() {
    if (next_id == 0) {
        std::uint64_t nonce = 0;
        if (getrandom(&nonce, sizeof nonce, 0) != sizeof nonce)
            nonce = static_cast<std::uint64_t>(getpid()) * 0x9e3779b97f4a7c15ull ^
                    static_cast<std::uint64_t>(time(nullptr));
        next_id = (nonce << 32) | 1;
        std::snprintf(own_prefix, sizeof own_prefix, "/memfd:nbrma-user-%08llx",
                      static_cast<unsigned long long>(next_id >> 32));
    }
    return next_id++;
}

// Moved pages no window claims any more stay moved, up to this many ranges, for the next
// window over the same memory (a create/free loop pays the move once); beyond it the
// oldest goes back.
constexpr std::size_t cached_limit = 4;

std::uintptr_t page_size() {
    static const std::uintptr_t size = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    return size;
}

bool overlaps(const UserMemoryClaim::Entry &e, std::uintptr_t low, std::uintptr_t high) {
    return e.low < high && low < e.high;
}

// ------------------------------------------------------------------ moving pages
//
// While pages move they are read-only; a store into them faults and its thread waits
// here until they are back (read-write), then retries. The handler stays installed once
// installed (a fault taken during a move may be delivered just after it), chained to the
// handler it replaced.

std::atomic<std::uintptr_t> busy_low{0}, busy_high{0};      // the pages moving now
std::atomic<std::uintptr_t> last_low{0}, last_high{0};      // the pages moved last
std::atomic<pid_t> busy_thread{0};                          // the thread moving them
std::atomic<bool> busy_aborted{false};  // that thread faulted on them itself
struct sigaction chained{};

pid_t this_thread() { return static_cast<pid_t>(syscall(SYS_gettid)); }

void on_fault(int signal, siginfo_t *info, void *context) {
    const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
    if (info->si_code == SEGV_ACCERR) {
        const std::uintptr_t low = busy_low.load(std::memory_order_acquire);
        if (address >= low && address < busy_high.load(std::memory_order_acquire)) {
            if (busy_thread.load(std::memory_order_acquire) == this_thread()) {
                // The mover itself (a failing call storing errno there): give the pages
                // their protection back and let the move fail.
                busy_aborted.store(true, std::memory_order_release);
                mprotect(reinterpret_cast<void *>(low),
                         busy_high.load(std::memory_order_acquire) - low,
                         PROT_READ | PROT_WRITE);
                return;
            }
            while (busy_low.load(std::memory_order_acquire) == low) sched_yield();
            return;
        }
        if (address >= last_low.load(std::memory_order_acquire) &&
            address < last_high.load(std::memory_order_acquire))
            return;  // faulted during the last move, delivered after it: retry
    }
    if (chained.sa_flags & SA_SIGINFO) {
        chained.sa_sigaction(signal, info, context);
    } else if (chained.sa_handler == SIG_DFL || chained.sa_handler == SIG_IGN) {
        struct sigaction fallback{};
        fallback.sa_handler = SIG_DFL;
        sigemptyset(&fallback.sa_mask);
        sigaction(SIGSEGV, &fallback, nullptr);  // the retried access ends the process
    } else {
        chained.sa_handler(signal);
    }
}

// Our handler is the process's SIGSEGV handler (installed now if another replaced it).
// False where that cannot be (a sanitizer that keeps SIGSEGV for itself).
bool handler_installed() {
    struct sigaction current{};
    if (sigaction(SIGSEGV, nullptr, &current) != 0) return false;
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_fault) return true;
    struct sigaction ours{};
    ours.sa_sigaction = on_fault;
    ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
    sigemptyset(&ours.sa_mask);
    chained = current;
    if (sigaction(SIGSEGV, &ours, nullptr) != 0) return false;
    if (sigaction(SIGSEGV, nullptr, &current) != 0) return false;
    return (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_fault;
}

// Copies between pages and a memfd (pwrite: into it, pread: out of it) with the kernel
// doing the copy: no sanitizer sees a read of a heap redzone that happens to share the
// page.
bool copy_file(long call, int fd, void *pages, std::size_t length, std::uint64_t offset) {
    std::size_t done = 0;
    while (done < length) {
        const long moved = syscall(call, fd, static_cast<std::uint8_t *>(pages) + done,
                                   length - done, static_cast<off_t>(offset + done));
        if (moved < 0 && errno == EINTR) continue;
        if (moved <= 0) return false;
        done += static_cast<std::size_t>(moved);
    }
    return true;
}
bool copy_to_file(int fd, std::uintptr_t low, std::size_t length) {
    return copy_file(SYS_pwrite64, fd, reinterpret_cast<void *>(low), length, 0);
}
bool copy_from_file(int fd, void *destination, std::size_t length, std::uint64_t offset = 0) {
    return copy_file(SYS_pread64, fd, destination, length, offset);
}

// mremap(from, length, length, MREMAP_MAYMOVE | MREMAP_FIXED, to) as the system call:
// UCX 1.13's memory hooks (ucm), which MPICH's UCX loads, replace mremap with a function
// that drops the fifth argument and moves the mapping to address 0.
bool move_mapping(void *from, std::size_t length, void *to) {
    return syscall(SYS_mremap, from, length, length, MREMAP_MAYMOVE | MREMAP_FIXED, to) ==
           reinterpret_cast<long>(to);
}

// Puts `replacement` (a mapping of `length` bytes holding the pages' content) in place of
// the pages at `low`, with no store to them lost. `fill` copies the pages' content into
// the replacement while they are read-only. Between the protection and the mremap only
// system calls run: no lock a faulting thread could hold, no allocation.
template <class Fill>
bool swap_in(std::uintptr_t low, std::size_t length, void *replacement, Fill fill) {
    if (!handler_installed()) return false;
    busy_aborted.store(false, std::memory_order_relaxed);
    busy_thread.store(this_thread(), std::memory_order_relaxed);
    busy_high.store(low + length, std::memory_order_relaxed);
    busy_low.store(low, std::memory_order_release);
    void *pages = reinterpret_cast<void *>(low);
    bool ok = mprotect(pages, length, PROT_READ) == 0;
    ok = ok && fill() && !busy_aborted.load(std::memory_order_acquire);
    if (ok) ok = move_mapping(replacement, length, pages);
    if (!ok) mprotect(pages, length, PROT_READ | PROT_WRITE);
    last_high.store(low + length, std::memory_order_relaxed);
    last_low.store(low, std::memory_order_release);
    busy_low.store(0, std::memory_order_release);
    busy_high.store(0, std::memory_order_release);
    busy_thread.store(0, std::memory_order_release);
    return ok;
}

bool move_into_file(const UserMemoryClaim::Entry &e) {
    const std::size_t length = e.high - e.low;  // the memfd's size (claim)
    void *view = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, e.fd, 0);
    if (view == MAP_FAILED) return false;
    if (swap_in(e.low, length, view, [&] { return copy_to_file(e.fd, e.low, length); }))
        return true;
    munmap(view, length);
    return false;
}

bool move_back(const UserMemoryClaim::Entry &e) {
    const std::size_t length = e.high - e.low;
    void *fresh = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fresh == MAP_FAILED) return false;
    if (swap_in(e.low, length, fresh, [&] { return copy_from_file(e.fd, fresh, length); }))
        return true;
    munmap(fresh, length);
    return false;
}

// The memfd's name as /proc shows a mapping of it.
std::string memfd_name(std::uint64_t id) {
    char name[40];
    std::snprintf(name, sizeof name, "nbrma-user-%016llx", static_cast<unsigned long long>(id));
    return name;
}
std::string memfd_path(const UserMemoryClaim::Entry &e) { return "/memfd:" + memfd_name(e.id); }

// Whether a moved range no window claims is still ours: the user may have unmapped or
// remapped its pages since its last window was freed. It is iff the mapping at exactly
// [low, high) is our memfd (/proc/self/map_files/<low>-<high> names a mapping's file;
// the process may read its own).
bool still_mapped(const UserMemoryClaim::Entry &e) {
    // /proc/self/map_files held open (a lookup from it walks half the path); reopened in
    // a child of fork, whose /proc/self is another directory. Under registry_mutex.
    static int directory = -1;
    static pid_t directory_owner = 0;
    const pid_t self = getpid();
    if (directory < 0 || directory_owner != self) {
        if (directory >= 0) close(directory);
        directory = ::open("/proc/self/map_files", O_PATH | O_DIRECTORY | O_CLOEXEC);
        directory_owner = self;
        if (directory < 0) return false;
    }
    char name[40], target[128];
    std::snprintf(name, sizeof name, "%lx-%lx", static_cast<unsigned long>(e.low),
                  static_cast<unsigned long>(e.high));
    const ssize_t n = readlinkat(directory, name, target, sizeof target - 1);
    if (n <= 0) return false;
    target[n] = '\0';
    const std::string want = memfd_path(e);
    return std::strncmp(target, want.c_str(), want.size()) == 0 &&
           (target[want.size()] == '\0' || target[want.size()] == ' ');
}

// Closes an entry's memfd, its pages freed first: peers may keep a mapping of it cached
// (peer_memory_map), which then holds no memory.
void release_file(const UserMemoryClaim::Entry &e) {
    if (e.fd < 0) return;
    fallocate(e.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
              static_cast<off_t>(e.high - e.low));
    close(e.fd);
}

// A moved range that is no longer mapped where it was: whatever is left of its mapping
// (anywhere: /proc/self/maps names it) becomes private memory again, so no page stays
// shared with a child the process forks.
void repair(const UserMemoryClaim::Entry &e) {
    Mapping pieces[64];
    const int count = find_mappings(memfd_path(e).c_str(), true, pieces, 64);
    for (int i = 0; i < count; ++i) {
        const std::size_t length = pieces[i].high - pieces[i].low;
        void *fresh =
            mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (fresh == MAP_FAILED) continue;
        if (!swap_in(pieces[i].low, length, fresh,
                     [&] { return copy_from_file(e.fd, fresh, length, pieces[i].offset); }))
            munmap(fresh, length);
    }
}

// A moved range leaves the registry: its pages go back to private memory (or what is
// left of them, if they moved since) and the memfd is closed. False (nothing done) if
// moving them back failed.
bool retire(UserMemoryClaim::Entry &e) {
    if (e.moved) {
        if (still_mapped(e)) {
            if (!move_back(e)) return false;
        } else {
            repair(e);
        }
    }
    release_file(e);
    return true;
}

// No live claim overlaps e (other than e's own).
bool unclaimed_around(const UserMemoryClaim::Entry &e) {
    for (const auto &other : registry)
        if (&other != &e && other.claims > 0 && overlaps(other, e.low, e.high)) return false;
    return e.claims == 0;
}

// A child of fork() is a single thread: every mapping of this process's memfds (their
// names begin with its nonce; whatever the registry thinks of them, split or left over)
// becomes a private copy directly. Peers' memfds stay shared, like window segments.
// Nothing here may allocate before the copies are made: the heap itself may be in those
// pages, still shared with the parent.
void unshare_in_child() {
    Mapping pieces[256];
    const int count = find_mappings(own_prefix, false, pieces, 256);
    for (int i = 0; i < count; ++i) {
        const std::size_t length = pieces[i].high - pieces[i].low;
        void *fresh =
            mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (fresh == MAP_FAILED) continue;
        // The kernel copies (no sanitizer sees the heap redzones in these pages).
        iovec to{fresh, length}, from{reinterpret_cast<void *>(pieces[i].low), length};
        if (syscall(SYS_process_vm_readv, getpid(), &to, 1UL, &from, 1UL, 0UL) !=
                static_cast<long>(length) ||
            !move_mapping(fresh, length, reinterpret_cast<void *>(pieces[i].low)))
            munmap(fresh, length);
    }
    for (UserMemoryClaim::Entry &e : registry) e.moved = false;
}

// Entries no live claim holds: exposed ones go; moved ones stay moved for the next
// window over them (cached), the oldest going back beyond cached_limit once no live
// entry overlaps them (an access through that entry may be in flight).
void collect() {
    std::size_t cached = 0;
    for (auto it = registry.begin(); it != registry.end();) {
        if (it->claims == 0 && it->orphan) {
            munmap(reinterpret_cast<void *>(it->low), it->high - it->low);
            release_file(*it);
            it = registry.erase(it);
        } else if (it->claims == 0 && !it->moved) {
            if (it->fd >= 0) close(it->fd);
            it = registry.erase(it);
        } else {
            cached += it->claims == 0 && !it->owned;
            ++it;
        }
    }
    while (cached > cached_limit) {
        auto oldest = registry.end();
        for (auto it = registry.begin(); it != registry.end(); ++it)
            if (it->moved && !it->owned && unclaimed_around(*it) &&
                (oldest == registry.end() || it->id < oldest->id))
                oldest = it;
        if (oldest == registry.end() || !retire(*oldest)) return;
        registry.erase(oldest);
        --cached;
    }
}

}  // namespace

void UserMemoryClaim::claim(const void *base, std::size_t size, bool offer, bool may_move) {
    release();
    const auto start = reinterpret_cast<std::uintptr_t>(base);
    if (size == 0 || start > UINTPTR_MAX - size) return;
    const std::uintptr_t page = page_size();
    const std::uintptr_t low = start / page * page;
    const std::uintptr_t end = start + size;
    if (end > UINTPTR_MAX - page) return;
    const std::uintptr_t high = (end + page - 1) / page * page;

    std::lock_guard<std::mutex> lock(registry_mutex);
    // nbrma's own shared memory (MPI_Alloc_mem): shared as it is, nothing moves.
    for (Entry &e : registry) {
        if (e.owned && !e.orphan && e.low <= low && high <= e.high) {
            ++e.claims;
            entry_ = &e;
            descriptor_ = offer ? e.fd : -1;
            offset_ = start - e.low;
            return;
        }
    }
    // Cached moved ranges over these pages: one that holds them all and is still ours is
    // taken again; the others go back (none stays half under a new window).
    const Entry *checked = nullptr;  // a cached range found still ours just now
    for (auto it = registry.begin(); it != registry.end();) {
        const bool holds_all = it->low <= low && high <= it->high;
        if (it->owned || !it->moved || !overlaps(*it, low, high) || !unclaimed_around(*it)) {
            ++it;
        } else if (offer && may_move && holds_all && still_mapped(*it)) {
            checked = &*it;
            ++it;
        } else if (retire(*it)) {
            it = registry.erase(it);
        } else {
            ++it;
        }
    }
    bool overlapping = false;
    for (Entry &e : registry) {
        if (offer && may_move && e.moved && e.low <= low && high <= e.high &&
            (e.claims > 0 || &e == checked || still_mapped(e))) {
            ++e.claims;
            entry_ = &e;
            descriptor_ = e.fd;
            offset_ = start - e.low;
            return;
        }
        overlapping |= overlaps(e, low, high);
    }
    registry.push_back(Entry{low, high, -1, false, 1, 0});
    entry_ = &registry.back();
    if (!offer || !may_move || overlapping || on_own_stack(low, high) ||
        !private_anonymous(low, high) || locked_or_huge(low, high))
        return;
    const std::uint64_t id = new_identity();
    const std::string name = memfd_name(id);
    const int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
    if (fd < 0) return;
    // Sized now: a peer maps the whole memfd, perhaps before this rank moves the pages.
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, static_cast<off_t>(high - low)) != 0) {
        close(fd);
        return;
    }
    entry_->fd = fd;
    entry_->id = id;
    descriptor_ = fd;
    offset_ = start - low;
}

Status UserMemoryClaim::share() {
    if (!entry_ || descriptor_ < 0) return Status::err_unsupported;
    std::lock_guard<std::mutex> lock(registry_mutex);
    static std::once_flag fork_handler;
    std::call_once(fork_handler, [] { pthread_atfork(nullptr, nullptr, unshare_in_child); });
    if (!entry_->moved) {
        // A window claimed some of these pages after our claim (another thread's): they
        // are exposed where they are now, and stay there.
        bool exposed = false;
        for (const Entry &e : registry)
            exposed |= &e != entry_ && e.claims > 0 && overlaps(e, entry_->low, entry_->high);
        if (exposed || !move_into_file(*entry_)) {
            close(entry_->fd);
            entry_->fd = -1;
            descriptor_ = -1;
            return Status::err_transport;
        }
        entry_->moved = true;
    }
    shared_ = true;
    return Status::ok;
}

void UserMemoryClaim::decline() {
    if (!entry_ || descriptor_ < 0) return;
    std::lock_guard<std::mutex> lock(registry_mutex);
    if (!entry_->moved && entry_->fd >= 0) {
        close(entry_->fd);
        entry_->fd = -1;
    }
    descriptor_ = -1;
    shared_ = false;
}

void UserMemoryClaim::release() {
    if (!entry_) return;
    std::lock_guard<std::mutex> lock(registry_mutex);
    --entry_->claims;
    entry_ = nullptr;
    descriptor_ = -1;
    shared_ = false;
    collect();
}

void *user_memory_map_owned(std::size_t length, std::size_t alignment, std::uint64_t *identity) {
    const std::uintptr_t page = page_size();
    if (alignment < page) alignment = page;
    if (length == 0 || length > SIZE_MAX - alignment - page) return nullptr;
    length = (length + page - 1) / page * page;
    std::lock_guard<std::mutex> lock(registry_mutex);
    static std::once_flag fork_handler;
    std::call_once(fork_handler, [] { pthread_atfork(nullptr, nullptr, unshare_in_child); });
    const std::uint64_t id = new_identity();
    const int fd = memfd_create(memfd_name(id).c_str(), MFD_CLOEXEC);
    if (fd < 0) return nullptr;
    // Over-reserve for the alignment, then place the memfd's mapping inside.
    const std::size_t reserved = length + (alignment > page ? alignment : 0);
    void *reservation = MAP_FAILED;
    if (fchmod(fd, 0600) == 0 && ftruncate(fd, static_cast<off_t>(length)) == 0)
        reservation = mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                           -1, 0);
    if (reservation == MAP_FAILED) {
        close(fd);
        return nullptr;
    }
    const auto first = reinterpret_cast<std::uintptr_t>(reservation);
    const std::uintptr_t low = (first + alignment - 1) / alignment * alignment;
    if (mmap(reinterpret_cast<void *>(low), length, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
        munmap(reservation, reserved);
        close(fd);
        return nullptr;
    }
    if (low > first) munmap(reservation, low - first);
    if (first + reserved > low + length)
        munmap(reinterpret_cast<void *>(low + length), first + reserved - (low + length));
    UserMemoryClaim::Entry e{low, low + length, fd, true, 0, id};
    e.owned = true;
    registry.push_back(e);
    if (identity) *identity = id;
    return reinterpret_cast<void *>(low);
}

bool user_memory_unmap_owned(void *base) {
    const auto low = reinterpret_cast<std::uintptr_t>(base);
    std::lock_guard<std::mutex> lock(registry_mutex);
    for (auto it = registry.begin(); it != registry.end(); ++it) {
        if (!it->owned || it->orphan || it->low != low) continue;
        if (it->claims > 0) {  // a live window covers it (an erroneous program)
            it->orphan = true;
            return true;
        }
        munmap(base, it->high - it->low);
        release_file(*it);
        registry.erase(it);
        return true;
    }
    return false;
}

bool user_memory_find(const void *base, std::size_t size, int *descriptor,
                      std::uint64_t *offset) {
    const auto low = reinterpret_cast<std::uintptr_t>(base);
    if (low > UINTPTR_MAX - size) return false;
    std::lock_guard<std::mutex> lock(registry_mutex);
    for (const auto &e : registry)
        if (e.moved && e.low <= low && low + size <= e.high) {
            *descriptor = e.fd;
            *offset = low - e.low;
            return true;
        }
    return false;
}

void user_memory_uncache() {
    std::lock_guard<std::mutex> lock(registry_mutex);
    for (auto it = registry.begin(); it != registry.end();) {
        if (it->moved && !it->owned && unclaimed_around(*it) && retire(*it))
            it = registry.erase(it);
        else
            ++it;
    }
}

bool UserMemoryClaim::moved() const {
    if (!entry_ || descriptor_ < 0) return false;
    std::lock_guard<std::mutex> lock(registry_mutex);
    return entry_->moved;
}

std::uint64_t UserMemoryClaim::identity() const {
    return descriptor_ >= 0 && entry_ ? entry_->id : 0;
}

std::size_t user_memory_ranges() {
    std::lock_guard<std::mutex> lock(registry_mutex);
    std::size_t ranges = 0;
    for (const auto &e : registry) ranges += !e.owned;
    return ranges;
}

std::size_t user_memory_moved() {
    std::lock_guard<std::mutex> lock(registry_mutex);
    std::size_t moved = 0;
    for (const auto &e : registry) moved += e.moved && !e.owned;
    return moved;
}

}  // namespace nbrma::transport::shm
