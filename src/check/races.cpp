// The race checker's engine side (races.hpp): clocks, the access logs and their rules.
#include "check/races.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check/race_log.hpp"
#include "check/tsan.hpp"
#include "common/yield.hpp"
#include "engine/datatype.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace nbrma::check {

using engine::RmaKind;

void SpinLock::wait() {
    unsigned spins = 0;
    do {
        while (word.load(std::memory_order_relaxed) != 0)
            if (++spins % 64 == 0) sched_yield();  // the holder may be descheduled
    } while (word.exchange(1, std::memory_order_acquire) != 0);
}

Process process_state;

std::uint64_t races_found() { return process().races.load(); }
std::uint64_t accesses_checked() { return process().checked.load(); }

void *create_shared(const std::string &name, std::size_t bytes) {
    int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {  // a crashed run's: ours now
        shm_unlink(name.c_str());
        fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    if (fd < 0) return nullptr;
    void *address = MAP_FAILED;
    if (ftruncate(fd, static_cast<off_t>(bytes)) == 0)
        address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (address == MAP_FAILED) {
        shm_unlink(name.c_str());
        return nullptr;
    }
    return address;  // zero-filled
}

void *open_shared(const std::string &name, std::size_t *bytes) {
    const int fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) return nullptr;
    struct stat info;
    void *address = MAP_FAILED;
    if (fstat(fd, &info) == 0 && info.st_size > 0) {
        *bytes = static_cast<std::size_t>(info.st_size);
        address = mmap(nullptr, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    return address == MAP_FAILED ? nullptr : address;
}

void unmap_shared(void *address, std::size_t bytes) {
    if (address) munmap(address, bytes);
}

// The shared-memory names of a process's checker objects: its slot, and its windows'
// areas ("-w" and the window's number after it).
std::string process_name(std::uint64_t pid) {
    return "/nbrma-check-" + std::to_string(static_cast<unsigned long long>(pid));
}

std::string slot_name(int world_rank) { return process_name(process().pids[world_rank]); }

std::string area_name(std::uint64_t pid, std::uint64_t window) {
    return process_name(pid) + "-w" + std::to_string(static_cast<unsigned long long>(window));
}

void start_slot_read(int rank);

void join_slot_locked(int rank) {
    Process &p = process();
    if (rank == p.me || rank < 0 || rank >= p.ranks) return;
    if (!p.tried[rank] && p.may_share_node(rank)) {
        std::size_t bytes = 0;
        void *address = open_shared(slot_name(rank), &bytes);
        if (address && bytes >= Slot::bytes(p.ranks)) {
            p.peers[rank] = static_cast<Slot *>(address);
            p.tried[rank] = 1;
        } else {  // not made yet (a window's info key turned checking on), or failed
            unmap_shared(address, bytes);
            if (p.summary) p.tried[rank] = 1;  // every slot was made at MPI_Init
        }
    }
    const Slot *slot = p.peers[rank];
    if (slot) {
        for (int i = 0; i < p.ranks; ++i) p.clock[i] = std::max(p.clock[i], slot->load(i));
    } else if (p.ucx.load(std::memory_order_relaxed) && p.spanning[rank] != 0 &&
               p.remote_slots[rank]) {
        Process::SlotRead &read = p.slot_reads[rank];
        if (read.request)
            read.again = true;
        else
            start_slot_read(rank);
    }
}

namespace {
void join_slot_read(int rank) {
    Process &p = process();
    const auto *slot = reinterpret_cast<const Slot *>(p.slot_reads[rank].clock.data());
    for (int i = 0; i < p.ranks; ++i) p.clock[i] = std::max(p.clock[i], slot->clock[i]);
}
}  // namespace

void start_slot_read(int rank) {
    Process &p = process();
    Process::SlotRead &read = p.slot_reads[rank];
    const std::size_t bytes = Slot::bytes(p.ranks);
    read.clock.resize(bytes / sizeof(std::uint64_t));
    read.again = false;
    if (is_error(
            remote::get_start(p.remote_slots[rank], 0, read.clock.data(), bytes, &read.request)))
        return;
    if (read.request)
        ++p.slot_reads_in_flight;
    else
        join_slot_read(rank);
}

void settle_slot_reads_locked(bool wait) {
    Process &p = process();
    Backoff backoff;
    while (p.slot_reads_in_flight != 0) {
        for (int rank = 0; rank < p.ranks; ++rank) {
            Process::SlotRead &read = p.slot_reads[rank];
            if (!read.request) continue;
            const Status status = remote::test(read.request);
            if (status == Status::in_progress) continue;
            read.request = nullptr;
            --p.slot_reads_in_flight;
            if (!is_error(status)) join_slot_read(rank);
            if (read.again) start_slot_read(rank);
        }
        if (!wait || p.slot_reads_in_flight == 0) return;
        if (p.worker->progress() == 0) backoff.pause();
    }
}

namespace {
[[gnu::always_inline]] inline void tick() {
    Process &p = process();
    if (p.tsan) tsan::released(p.clock[p.me]);
    ++p.clock[p.me];
}

[[gnu::always_inline]] inline void publish() {
    Process &p = process();
    const std::uint64_t *clock = p.clock.data();
    for (std::size_t i = 0, n = p.clock.size(); i < n; ++i)
        p.own->store(static_cast<int>(i), clock[i]);
    tick();
}
}  // namespace

void tick_locked() { tick(); }

void publish_locked() { publish(); }

void synchronized() {
    Process &p = process();
    if (!p.tsan) return;
    std::lock_guard<ProcessLock> guard(p.mutex);
    tsan::ordered_after_replays();
}

void replay_locked() {
    for (WindowCheck *window : process().replaying) window->replay(false);
}

void release() {
    Process &p = process();
    std::lock_guard<ProcessLock> guard(p.mutex);
    settle_slot_reads(false);
    publish_locked();
}

// ---- call sites -------------------------------------------------------------------

namespace {

std::uint32_t name_hash(const char *name) {
    std::uint32_t hash = 2166136261u;  // FNV-1a, 24 bits kept
    for (; name && *name; ++name) hash = (hash ^ static_cast<unsigned char>(*name)) * 16777619u;
    return hash & 0xffffffu;
}

constexpr int site_shift = 40;

struct FindObject {
    std::uint32_t hash;
    std::uintptr_t base = 0;
    bool found = false;
};

int find_object(struct dl_phdr_info *info, std::size_t, void *data) {
    auto *find = static_cast<FindObject *>(data);
    // dladdr names the executable by its path, dl_iterate_phdr by "": hash what dladdr says
    Dl_info named;
    const char *name = info->dlpi_name;
    if ((!name || !*name) && info->dlpi_phnum > 0) {
        for (int i = 0; i < info->dlpi_phnum; ++i)
            if (info->dlpi_phdr[i].p_type == PT_LOAD) {
                const auto address = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
                if (dladdr(reinterpret_cast<void *>(address), &named)) name = named.dli_fname;
                break;
            }
    }
    if (name_hash(name) != find->hash) return 0;
    find->base = info->dlpi_addr;
    find->found = true;
    return 1;
}

}  // namespace

std::uint64_t encode_site(const void *address) {
    Dl_info info;
    if (!address || !dladdr(address, &info) || !info.dli_fbase) return 0;
    const auto offset = reinterpret_cast<std::uintptr_t>(address) -
                        reinterpret_cast<std::uintptr_t>(info.dli_fbase);
    return (static_cast<std::uint64_t>(name_hash(info.dli_fname)) << site_shift) |
           (offset & ((std::uint64_t{1} << site_shift) - 1));
}

namespace {
struct CachedSite {
    const void *address;
    std::uint64_t site;
};
// This thread's last call site, in static TLS as detail::caller (no __tls_get_addr call).
__attribute__((tls_model("initial-exec"))) thread_local CachedSite last_site = {};
}  // namespace

std::uint64_t call_site() {
    const void *address = detail::caller;
    if (address == last_site.address) return last_site.site;
    if (!address) return 0;
    // dladdr walks the loaded objects: a call site is resolved once per thread and address
    thread_local CachedSite cache[64] = {};
    CachedSite &slot = cache[(reinterpret_cast<std::uintptr_t>(address) >> 2) % 64];
    if (slot.address != address)
        slot = {address, encode_site(static_cast<const char *>(address) - 1)};
    last_site = slot;
    return slot.site;
}

std::string describe_site(std::uint64_t site) {
    if (site == 0) return "an unknown call site";
    FindObject find{static_cast<std::uint32_t>(site >> site_shift)};
    dl_iterate_phdr(find_object, &find);
    const std::uint64_t offset = site & ((std::uint64_t{1} << site_shift) - 1);
    char text[512];
    if (!find.found) {
        std::snprintf(text, sizeof text, "offset 0x%llx of a program this rank does not run",
                      static_cast<unsigned long long>(offset));
        return text;
    }
    const auto address = reinterpret_cast<void *>(find.base + offset);
    Dl_info info;
    if (dladdr(address, &info) && info.dli_sname) {
        std::snprintf(
            text, sizeof text, "%s (%s+0x%llx)", info.dli_fname, info.dli_sname,
            static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(address) -
                                            reinterpret_cast<std::uintptr_t>(info.dli_saddr)));
    } else {  // a static function, or no dynamic symbols: addr2line finds the line
        const char *file = info.dli_fname ? info.dli_fname : "?";
        std::snprintf(text, sizeof text, "%s+0x%llx (addr2line -f -e %s 0x%llx)", file,
                      static_cast<unsigned long long>(offset), file,
                      static_cast<unsigned long long>(offset));
    }
    return text;
}

// ---- the rules ----------------------------------------------------------------------

namespace {

constexpr std::int32_t swap_op = -1;  // compare_and_swap's "op" in an entry

bool accumulate_family(std::uint8_t kind) {
    return kind != static_cast<std::uint8_t>(RmaKind::put) &&
           kind != static_cast<std::uint8_t>(RmaKind::get);
}

std::int32_t no_op() { return static_cast<std::int32_t>(MPI_NO_OP); }

bool writes(const Entry &e) {
    switch (static_cast<RmaKind>(e.kind)) {
        case RmaKind::get:
            return false;
        case RmaKind::get_accumulate:
        case RmaKind::fetch_and_op:
            return e.op != no_op();
        default:
            return true;
    }
}

// MPI's exception for concurrent accumulates: same basic datatype on the same elements,
// and the same op, or MPI_NO_OP on one side where accumulate_ops is same_op_no_op.
bool concurrent_allowed(const Entry &a, const Entry &b, const AccumulateRules &rules) {
    if (!accumulate_family(a.kind) || !accumulate_family(b.kind)) return false;
    if (a.basic != b.basic || a.element == 0 || a.low % a.element != b.low % a.element)
        return false;
    return a.op == b.op || (rules.no_op_mixes && (a.op == no_op() || b.op == no_op()));
}

// Whether `e`, logged at its target, is ordered before a call this rank runs now.
bool ordered_before(const Entry &e, const Entry &now, const std::vector<std::uint64_t> &clock,
                    int me, const AccumulateRules &rules = {}) {
    // Completed, and this rank learned of it: it completed the call itself (a flush, an
    // epoch's end), or acquired a clock published after that.
    const bool seen = e.completed != not_completed &&
                      (e.completer == me ? true : clock[e.completer] > e.completed);
    if (seen || e.origin != me) return seen;
    // Two accumulate-family calls of one origin: as accumulate_ordering orders them.
    if (!accumulate_family(e.kind) || !accumulate_family(now.kind)) return false;
    const unsigned pair = writes(e) ? (writes(now) ? AccumulateRules::waw : AccumulateRules::raw)
                                    : (writes(now) ? AccumulateRules::war : AccumulateRules::rar);
    return (rules.ordering & pair) != 0;
}

const char *call_name(std::uint8_t kind) {
    switch (static_cast<RmaKind>(kind)) {
        case RmaKind::put:
            return "MPI_Put";
        case RmaKind::get:
            return "MPI_Get";
        case RmaKind::accumulate:
            return "MPI_Accumulate";
        case RmaKind::get_accumulate:
            return "MPI_Get_accumulate";
        case RmaKind::fetch_and_op:
            return "MPI_Fetch_and_op";
        case RmaKind::compare_and_swap:
            return "MPI_Compare_and_swap";
    }
    return "?";
}

const char *sync_name(std::uint8_t sync) {
    switch (static_cast<WindowCheck::Sync>(sync)) {
        case WindowCheck::Sync::lock_exclusive:
            return "an exclusive lock epoch";
        case WindowCheck::Sync::lock_shared:
            return "a shared lock epoch";
        case WindowCheck::Sync::lock_all:
            return "a lock_all epoch";
        case WindowCheck::Sync::fence:
            return "a fence epoch";
        case WindowCheck::Sync::pscw:
            return "a start/complete epoch";
    }
    return "?";
}

std::string describe_access(const Entry &e) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "%s from rank %d (world rank %d) in %s, target displacement %lld, "
                  "bytes [%llu, %llu)",
                  call_name(e.kind), e.origin_window, e.origin, sync_name(e.sync),
                  static_cast<long long>(e.displacement), static_cast<unsigned long long>(e.low),
                  static_cast<unsigned long long>(e.high));
    return std::string(text) + "\n      at " + describe_site(e.site) +
           (e.completed == not_completed ? "" : ", completed at its target");
}

// A race between `earlier` (logged) and `now`: counted; reported once per pair of call
// sites; with NBRMA_CHECK_ABORT=1 the process aborts.
void race(const Entry &earlier, const Entry &now, int target, int target_world) {
    Process &p = process();
    ++p.races;
    if (!p.reported.insert({earlier.site, now.site}).second && !p.abort_on_race) return;
    std::fprintf(stderr,
                 "nbrma check: rank %d: race at rank %d (world rank %d)'s window memory:\n"
                 "  %s\n  %s\n  conflict: overlapping bytes, %s, and no MPI synchronization "
                 "orders the first before the second (%s)\n",
                 p.me, target, target_world, describe_access(earlier).c_str(),
                 describe_access(now).c_str(),
                 writes(earlier) && writes(now) ? "both write" : "one writes",
                 earlier.origin == now.origin
                     ? "same origin: no flush or epoch end between them"
                     : "no lock hand-over, fence, post/start, complete/wait, message or "
                       "collective after the first completed");
    std::fflush(stderr);
    if (p.abort_on_race) {
        std::fprintf(stderr, "nbrma check: NBRMA_CHECK_ABORT=1: aborting at the first race\n");
        std::abort();
    }
}

template <typename Drop>
void prune(Area &area, Drop drop) {
    Entry *entries = area.entries();
    std::uint32_t kept = 0;
    for (std::uint32_t i = 0; i < area.count; ++i)
        if (!drop(entries[i])) entries[kept++] = entries[i];
    area.count = kept;
}

// Whether `e` covers [low, high) with a call of that kind, op, basic type and sync.
bool has_shape(const Entry &e, std::uint64_t low, std::uint64_t high, std::uint8_t kind,
               std::int32_t op, std::int32_t basic, std::uint8_t sync) {
    return e.low == low && e.high == high && e.kind == kind && e.op == op && e.basic == basic &&
           e.sync == sync;
}

bool same_shape(const Entry &a, const Entry &b) {
    return a.origin == b.origin && has_shape(a, b.low, b.high, b.kind, b.op, b.basic, b.sync);
}

// Appends `now` to the target's ring of calls to replay into ThreadSanitizer (caller
// holds the area's lock); the call issued after the target's publication `acquired`.
// A call of the same shape as the last one not yet replayed, issued after the same
// publication, stands for both.
void land(Area &area, const Entry &now, std::uint64_t acquired) {
    Landing *ring = area.landings();
    const std::uint32_t size = area.landing_capacity;
    if (area.landings_head > area.landings_tail) {
        Landing &last = ring[(area.landings_head - 1) % size];
        if (!last.replayed && last.origin == now.origin && last.low == now.low &&
            last.high == now.high && last.kind == now.kind && last.acquired == acquired) {
            last.completed = now.completed;
            last.completer = now.completer;
            last.notify = now.notify;
            return;
        }
    }
    if (area.landings_head - area.landings_tail == size) {
        ++area.dropped;
        ++process().dropped;
        return;
    }
    Landing &l = ring[area.landings_head++ % size];
    l = Landing{};
    l.low = now.low;
    l.high = now.high;
    l.acquired = acquired;
    l.completed = now.completed;
    l.origin = now.origin;
    l.completer = now.completer;
    l.kind = now.kind;
    l.writes = writes(now) ? 1 : 0;
    l.notify = now.notify;
}

// Marks this rank's calls in the area's ring complete at `at` (caller holds its lock);
// or, `notified`, the notified calls of every origin, completed by this rank.
void complete_landings(Area &area, int me, std::uint64_t at, bool notified) {
    Landing *ring = area.landings();
    for (std::uint64_t i = area.landings_tail; i < area.landings_head; ++i) {
        Landing &l = ring[i % area.landing_capacity];
        if (l.completed != not_completed || (notified ? !l.notify : l.origin != me)) continue;
        l.completed = at;
        l.completer = me;
    }
}

}  // namespace

// ---- WindowCheck --------------------------------------------------------------------

namespace {
// An area's clocks are stored entry by entry under its lock and loaded entry by entry,
// some without it (lock_acquired).
[[gnu::always_inline]] inline void join_into(std::vector<std::uint64_t> &into,
                                             const std::uint64_t *clock) {
    std::uint64_t *to = into.data();
    for (std::size_t i = 0, n = into.size(); i < n; ++i)
        to[i] = std::max(to[i], __atomic_load_n(&clock[i], __ATOMIC_RELAXED));
}
[[gnu::always_inline]] inline void release_into(std::uint64_t *clock,
                                                const std::vector<std::uint64_t> &from) {
    const std::uint64_t *value = from.data();
    for (std::size_t i = 0, n = from.size(); i < n; ++i)
        if (value[i] > clock[i]) __atomic_store_n(&clock[i], value[i], __ATOMIC_RELAXED);
}
}  // namespace

namespace {
// Calls `move(offset, bytes)` for the area's ring slots [from, to) (indices modulo its
// capacity): one or two pieces of the area, `offset` from its start.
template <typename Move>
Status ring_pieces(Area &area, std::uint64_t from, std::uint64_t to, Move move) {
    const std::uint64_t size = area.landing_capacity;
    Status status = Status::ok;
    while (from < to && !is_error(status)) {
        const std::uint64_t first = from % size, n = std::min(to - from, size - first);
        status = move(static_cast<std::size_t>(reinterpret_cast<char *>(area.landings() + first) -
                                               reinterpret_cast<char *>(&area)),
                      sizeof(Landing) * n);
        from += n;
    }
    return status;
}
}  // namespace

inline Area *WindowCheck::hold(int rank) {
    if (worker_) return hold_through_ucx(rank);
    Area *area = areas_[rank];
    if (area) area->lock.lock();
    return area;
}

inline void WindowCheck::let_go(int rank, bool wrote) {
    if (worker_)
        let_go_through_ucx(rank, wrote);
    else
        areas_[rank]->lock.unlock();
}

Area *WindowCheck::hold_through_ucx(int rank) {
    Area *area = areas_[rank];
    if (is_error(remote::lock(*worker_, remote_[rank]))) return nullptr;
    if (area) return area;
    // A remote area: copied here, byte for byte where used: its header and clocks, its
    // entries in use, the slots of its ring that are not replayed yet.
    const Remote &region = remote_[rank];
    const std::size_t header = Area::bytes(process().ranks, 0, 0);
    if (mirror_.size() * sizeof(std::uint64_t) < header)
        mirror_.resize(header / sizeof(std::uint64_t));
    auto *copy = reinterpret_cast<Area *>(mirror_.data());
    Status status = remote::get(*worker_, region, 0, copy, header);
    if (!is_error(status) &&
        (copy->count > copy->capacity || copy->landings_head < copy->landings_tail ||
         copy->landings_head - copy->landings_tail > copy->landing_capacity))
        status = Status::err_range;
    if (!is_error(status)) {
        const std::size_t bytes =
            Area::bytes(process().ranks, copy->capacity, copy->landing_capacity);
        if (mirror_.size() * sizeof(std::uint64_t) < bytes) {
            mirror_.resize((bytes + sizeof(std::uint64_t) - 1) / sizeof(std::uint64_t));
            copy = reinterpret_cast<Area *>(mirror_.data());
        }
        status =
            remote::get(*worker_, region, header, copy->entries(), sizeof(Entry) * copy->count);
    }
    if (!is_error(status))
        status = ring_pieces(*copy, copy->landings_tail, copy->landings_head,
                             [&](std::size_t offset, std::size_t bytes) {
                                 return remote::get(*worker_, region, offset,
                                                    reinterpret_cast<char *>(copy) + offset, bytes);
                             });
    if (is_error(status)) {
        (void)remote::unlock(*worker_, region);
        return nullptr;
    }
    return copy;
}

void WindowCheck::let_go_through_ucx(int rank, bool wrote) {
    const Remote &region = remote_[rank];
    if (!areas_[rank] && wrote) {  // all but the lock word, the entries and ring slots in use
        auto *copy = reinterpret_cast<Area *>(mirror_.data());
        auto put = [&](std::size_t offset, std::size_t bytes) {
            return remote::put(*worker_, region, offset, reinterpret_cast<char *>(copy) + offset,
                               bytes);
        };
        const std::size_t skip = sizeof(SpinLock);
        (void)put(skip, Area::bytes(process().ranks, copy->count, 0) - skip);
        (void)ring_pieces(*copy, copy->landings_tail, copy->landings_head, put);
    }
    (void)remote::unlock(*worker_, region);
}

std::vector<std::uint64_t> WindowCheck::snapshot() const {
    Process &p = process();
    std::lock_guard<ProcessLock> guard(p.mutex);
    settle_slot_reads(true);
    return p.clock;
}

void WindowCheck::keep_acquired(std::uint64_t epoch, int target,
                                const std::vector<std::uint64_t> &clock) {
    Acquired *free_entry = nullptr;
    for (Acquired &a : acquired_) {
        if (a.used && a.epoch == epoch && a.target == target) {
            join_into(a.clock, clock.data());
            return;
        }
        if (!a.used && !free_entry) free_entry = &a;
    }
    if (!free_entry) free_entry = &acquired_.emplace_back();
    free_entry->used = true;
    free_entry->epoch = epoch;
    free_entry->target = target;
    free_entry->clock.assign(clock.begin(), clock.end());  // its capacity kept: no allocation
}

const std::vector<std::uint64_t> *WindowCheck::find_acquired(std::uint64_t epoch,
                                                             int target) const {
    for (const Acquired &a : acquired_)
        if (a.used && a.epoch == epoch && a.target == target) return &a.clock;
    return nullptr;
}

void WindowCheck::epoch_done(std::uint64_t epoch) {
    for (Acquired &a : acquired_)
        if (a.epoch == epoch) a.used = false;
}

Entry WindowCheck::entry(const engine::RmaCall &call, Sync sync, std::uint64_t site) const {
    Entry now{};
    now.completed = not_completed;
    now.displacement = call.displacement;
    now.site = site;
    now.origin = world_[rank_];
    now.completer = now.origin;
    now.origin_window = rank_;
    now.notify = call.notify ? 1 : 0;
    now.kind = static_cast<std::uint8_t>(call.kind);
    now.sync = static_cast<std::uint8_t>(sync);
    return now;
}

void WindowCheck::access(const engine::RmaCall &call, const engine::TypeLayout *target,
                         std::uint64_t byte_offset, Sync sync, std::uint64_t site,
                         const std::vector<std::uint64_t> &issued, std::uint64_t epoch,
                         bool fetch_request) {
    Process &p = process();
    if (!reaches(call.target)) {
        ++p.unchecked;
        return;
    }
    if (!target && is_error(engine::type_layout_get(call.target_type, &target))) return;
    Entry now = entry(call, sync, site);
    if (call.kind != RmaKind::put && call.kind != RmaKind::get) {
        now.op =
            call.kind == RmaKind::compare_and_swap ? swap_op : static_cast<std::int32_t>(call.op);
        now.basic = static_cast<std::int32_t>(target->basic);
        now.element = static_cast<std::uint8_t>(std::min<std::size_t>(target->basic_size, 255));
    }
    // The target bytes: a segment each (the rest as one span past a bound).
    constexpr std::size_t most_segments = 64;
    Segment segments[most_segments];  // 1 KiB left uninitialized
    std::size_t n = 0;
    engine::type_for_each_segment(*target, static_cast<std::size_t>(call.target_count),
                                  [&](std::int64_t offset, std::size_t length) {
                                      const std::uint64_t low = byte_offset + offset;
                                      if (n < most_segments) {
                                          segments[n++] = {low, low + length};
                                      } else {
                                          auto &last = segments[most_segments - 1];
                                          last.first = std::min(last.first, low);
                                          last.second = std::max(last.second, low + length);
                                      }
                                  });
    if (n == 1 && !fetch_request) {  // (the quick path reads no clock: any issue clock)
        now.low = segments[0].first;
        now.high = segments[0].second;
        if (quick(
                call, [&](const Entry &e) { return same_shape(e, now); },
                [&](Entry &e) { e = now; }))
            return;
    }
    log_access(call, now, segments, n, issued, epoch, fetch_request);
}

// A call of one segment toward a mapped area whose log is empty (the log is appended
// its entry, `make`: nothing to check it against), or holds only this rank's last call,
// completed by this rank since, of the same shape (`same`: a put, get or atomic in a loop
// with a flush: ordered after it, and against nothing else; the entry stands for the new
// call, as log_access would merge them). Under the area's lock; false, with nothing done,
// for anything else.
template <typename Same, typename Make>
[[gnu::always_inline]] inline bool WindowCheck::quick(const engine::RmaCall &call, Same same,
                                                      Make make) {
    Area *area = worker_ || call.notify ? nullptr : areas_[call.target];
    if (!area || area->landing_capacity || area->capacity == 0) return false;
    const std::int32_t me = world_[rank_];
    bool taken = false;
    Process &p = process();
    std::lock_guard<ProcessLock> guard(p.mutex);
    area->lock.lock();
    Entry &e = area->entries()[0];
    if (area->count == 0) {
        make(e);
        area->count = 1;
        taken = true;
    } else if (area->count == 1 && e.origin == me && e.completer == me && !e.notify &&
               e.completed != not_completed && same(e)) {
        e.completed = not_completed;
        taken = true;
    }
    if (taken) {  // the entry at 0, ours, is pending
        p.checked.store(p.checked.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        char &pending = pending_[call.target];
        pending = pending == 0 ? at_head_only : 1;
        logged_[call.target] = 1;
    }
    area->lock.unlock();
    return taken;
}

void WindowCheck::block(const engine::RmaCall &call, std::uint64_t low, std::size_t bytes,
                        const void *local, Sync sync, std::uint64_t site, std::uint64_t epoch,
                        bool fetch_request, bool watch) {
    if (!reaches(call.target)) {
        ++process().unchecked;
    } else if (fetch_request || !quick(
                                    call,
                                    [&](const Entry &e) {  // (a put or get: no op, no basic type)
                                        return has_shape(e, low, low + bytes,
                                                         static_cast<std::uint8_t>(call.kind), 0, 0,
                                                         static_cast<std::uint8_t>(sync));
                                    },
                                    [&](Entry &e) {
                                        e = entry(call, sync, site);
                                        e.low = low;
                                        e.high = low + bytes;
                                    })) {
        static const std::vector<std::uint64_t> now_clock;  // issued as it runs: the clock now
        Entry now = entry(call, sync, site);
        const Segment segment{low, low + bytes};
        log_access(call, now, &segment, 1, now_clock, epoch, fetch_request);
    }
    if (!watch) return;
    Watched &watched = next_watched(call, call.kind == RmaKind::get, site);
    watched.few[0] = {reinterpret_cast<std::uintptr_t>(local), bytes};
    watched.count = 1;
    keep(watched);
}

void WindowCheck::log_access(const engine::RmaCall &call, Entry &now, const Segment *segments,
                             std::size_t n, const std::vector<std::uint64_t> &issued,
                             std::uint64_t epoch, bool fetch_request) {
    Process &p = process();
    std::lock_guard<ProcessLock> guard(p.mutex);
    settle_slot_reads(true);
    // The clock the call was issued with: now, or then plus what its epoch acquired since.
    if (!issued.empty()) {
        then_.assign(issued.begin(), issued.end());
        for (int key : {call.target, -1})
            if (const std::vector<std::uint64_t> *acquired = find_acquired(epoch, key))
                join_into(then_, acquired->data());
    }
    const std::vector<std::uint64_t> &clock = issued.empty() ? p.clock : then_;
    if (fetch_request) {
        now.completed = p.clock[p.me];
        tick_locked();
    }
    Area *area = hold(call.target);
    if (!area) {
        ++p.unchecked;
        return;
    }
    pending_[call.target] = logged_[call.target] = 1;
    if (call.notify)  // the notification will tell the target of our clock up to this call
        release_into(area->clock(Area::notified), clock);
    Entry *entries = area->entries();
    for (std::size_t s = 0; s < n; ++s) {
        now.low = segments[s].first;
        now.high = segments[s].second;
        // Under the process lock: no read-modify-write needed (readers load it whole).
        p.checked.store(p.checked.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        bool logged = false;
        for (std::uint32_t i = 0; i < area->count; ++i) {
            Entry &e = entries[i];
            if (e.high <= now.low || now.high <= e.low) continue;
            if ((writes(e) || writes(now)) && !concurrent_allowed(e, now, rules_) &&
                !ordered_before(e, now, clock, p.me, rules_))
                race(e, now, call.target, world_[call.target]);
            if (!logged && same_shape(e, now)) {  // the newer stands for both
                e.completed = now.completed;
                e.completer = now.completer;
                e.notify = now.notify;
                logged = true;
            }
        }
        if (area->landing_capacity) land(*area, now, clock[world_[call.target]]);
        if (logged) continue;
        if (area->count < area->capacity) {
            entries[area->count++] = now;
        } else {
            ++area->dropped;
            ++p.dropped;
        }
    }
    let_go(call.target, true);
}

namespace {
// The calls `me` logged in `area` completed there at its clock value `at`.
[[gnu::always_inline]] inline void complete_in(Area &area, int me, std::uint64_t at) {
    Entry *entries = area.entries();
    for (std::uint32_t i = 0; i < area.count; ++i)
        if (entries[i].origin == me && entries[i].completed == not_completed)
            entries[i].completed = at;
    if (area.landing_capacity) complete_landings(area, me, at, false);
}
}  // namespace

void WindowCheck::completed(int target, bool complete) {
    verify(target);
    Process &p = process();
    std::lock_guard<ProcessLock> guard(p.mutex);
    settle_slot_reads(true);
    const std::uint64_t at = p.clock[p.me];
    const int end = target == -1 ? static_cast<int>(areas_.size()) : target + 1;
    for (int r = target == -1 ? 0 : target; r < end; ++r) {
        if (!pending_[r] && !complete) continue;
        if (pending_[r] == at_head_only && !complete) {
            // Our one pending call is the entry quick left at 0, which only we
            // write and no one moves while it is pending (a prune keeps it, and it has
            // no entry before it): completed with one store, without the lock, before
            // the publication below (a checker that loads it pending meanwhile is not
            // ordered after this completion, which is not published yet).
            __atomic_store_n(&areas_[r]->entries()[0].completed, at, __ATOMIC_RELAXED);
            pending_[r] = 0;
            continue;
        }
        Area *area = hold(r);
        if (!area) continue;
        complete_in(*area, p.me, at);
        if (complete) {  // the clock released covers those completions
            tick();
            release_into(area->clock(Area::done), p.clock);
        }
        let_go(r, true);
        pending_[r] = 0;
    }
    if (!complete) tick();
    // Published at once: a message this rank sends next carries it (send/receive joins
    // slots, which need not be exact).
    publish();
}

void WindowCheck::lock_acquired(int target, bool exclusive, std::uint64_t epoch, bool later_calls) {
    Process &p = process();
    if (!reaches(target)) return;
    std::lock_guard<ProcessLock> guard(p.mutex);
    settle_slot_reads(true);
    // The releases this grant follows are read without the area's lock where the area is
    // mapped: each holder stored its release (unlocked) before its lock word let the next
    // holder in, and none stores the clock the grant reads while the grant holds the lock
    // (an exclusive release while any holder does, a shared one while an exclusive holder
    // does). A remote area is read under its lock.
    Area *held = areas_[target] ? nullptr : hold(target);
    Area *area = areas_[target] ? areas_[target] : held;
    if (!area) return;
    join_into(p.clock, area->clock(Area::exclusive_release));
    if (exclusive) join_into(p.clock, area->clock(Area::shared_release));
    if (later_calls) {
        std::vector<std::uint64_t> &acquired = scratch_;
        acquired.assign(static_cast<std::size_t>(p.ranks), 0);
        join_into(acquired, area->clock(Area::exclusive_release));
        if (exclusive) join_into(acquired, area->clock(Area::shared_release));
        keep_acquired(epoch, target, acquired);
    }
    // Everything logged before is ordered before every later holder: gone from the log,
    // which an exclusive holder's unlock leaves empty of its own calls (only the lock is
    // taken for a log with entries; one appended meanwhile, unordered, is kept).
    if (exclusive && __atomic_load_n(&area->count, __ATOMIC_RELAXED) != 0) {
        Entry probe{};
        if (!held) held = hold(target);
        if (held)
            prune(*held, [&](const Entry &e) { return ordered_before(e, probe, p.clock, p.me); });
    }
    if (held) let_go(target, true);
    replay_locked();
}

void WindowCheck::unlocked(int target, bool exclusive, bool release) {
    verify(target);
    Process &p = process();
    std::lock_guard<ProcessLock> guard(p.mutex);
    settle_slot_reads(true);
    Area *area = reaches(target) ? hold(target) : nullptr;
    if (area) {
        const int me = p.me;
        // An exclusive release orders our calls there before every later one: they
        // leave the log (complete, then pruned, at once) unless ThreadSanitizer replays.
        if (release && exclusive && !area->landing_capacity)
            prune(*area, [me](const Entry &e) { return e.origin == me; });
        else
            complete_in(*area, me, p.clock[me]);
        pending_[target] = 0;
        tick();  // the released clock covers those completions
        if (release) {
            release_into(area->clock(exclusive ? Area::exclusive_release : Area::shared_release),
                         p.clock);
            if (exclusive && area->landing_capacity)
                prune(*area, [me](const Entry &e) {
                    return e.origin == me && e.completed != not_completed;
                });
        }
        let_go(target, true);
    } else {
        tick();
    }
    publish();  // as completed() does
}

void WindowCheck::fence_entered(std::uint64_t fence) {
    Process &p = process();
    std::lock_guard<ProcessLock> guard(p.mutex);
    settle_slot_reads(true);
    // Only this rank writes its fence clocks, and a peer reads the one of fence k only
    // once it passed k's barrier, before this rank can enter fence k + 2 (which writes
    // it again): stored without the area's lock, unless peers copy the area whole
    // (through UCX) and write it back.
    Area *area = worker_ ? hold(rank_) : areas_[rank_];
    if (!area) return;
    std::uint64_t *clock = area->clock(fence % 2 ? Area::fence1 : Area::fence0);
    for (std::size_t i = 0; i < p.clock.size(); ++i)
        __atomic_store_n(&clock[i], p.clock[i], __ATOMIC_RELAXED);
    __atomic_store_n(&area->fences[fence % 2], fence, __ATOMIC_RELEASE);
    if (worker_) let_go(rank_, true);
    tick_locked();
}

void WindowCheck::fence_passed(std::uint64_t fence, std::uint64_t epoch, bool later_calls) {
    Process &p = process();
    std::lock_guard<ProcessLock> guard(p.mutex);
    settle_slot_reads(true);
    std::vector<std::uint64_t> &acquired = scratch_;
    acquired.assign(static_cast<std::size_t>(p.ranks), 0);
    const int me = p.me;
    for (int r = 0; r < static_cast<int>(areas_.size()); ++r) {
        if (!reaches(r)) continue;
        Area *mapped = worker_ ? nullptr : areas_[r];
        if (mapped && !logged_[r]) {  // nothing of ours to prune: the clock, without the lock
            if (__atomic_load_n(&mapped->fences[fence % 2], __ATOMIC_ACQUIRE) == fence)
                join_into(acquired, mapped->clock(fence % 2 ? Area::fence1 : Area::fence0));
            continue;
        }
        Area *area = hold(r);
        if (!area) continue;
        if (area->fences[fence % 2] == fence)
            join_into(acquired, area->clock(fence % 2 ? Area::fence1 : Area::fence0));
        prune(*area,
              [me](const Entry &e) { return e.origin == me && e.completed != not_completed; });
        let_go(r, true);
        logged_[r] = 0;
    }
    join_into(p.clock, acquired.data());
    if (later_calls) keep_acquired(epoch, -1, acquired);
    replay_locked();
}

void WindowCheck::post_release() {
    Process &p = process();
    std::lock_guard<ProcessLock> guard(p.mutex);
    settle_slot_reads(true);
    // Only this rank writes its post clock, and its origins read it once they saw the
    // grant that follows, before this rank can post again (its exposure ends first):
    // stored without the area's lock, unless peers copy the area whole (through UCX).
    Area *area = worker_ ? hold(rank_) : areas_[rank_];
    if (!area) return;
    std::uint64_t *clock = area->clock(Area::post);
    for (std::size_t i = 0; i < p.clock.size(); ++i)
        __atomic_store_n(&clock[i], p.clock[i], __ATOMIC_RELAXED);
    if (worker_) let_go(rank_, true);
    tick_locked();
}

void WindowCheck::post_acquire(int target, std::uint64_t epoch, bool later_calls) {
    Process &p = process();
    if (!reaches(target)) return;
    std::lock_guard<ProcessLock> guard(p.mutex);
    settle_slot_reads(true);
    std::vector<std::uint64_t> &acquired = scratch_;
    acquired.assign(static_cast<std::size_t>(p.ranks), 0);
    // The grant seen (or, MPI_MODE_NOCHECK, the post promised): the clock post_release
    // stored before it, read without the lock where the area is mapped.
    Area *area = worker_ ? hold(target) : areas_[target];
    if (!area) return;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    join_into(acquired, area->clock(Area::post));
    if (worker_) let_go(target, false);
    join_into(p.clock, acquired.data());
    if (later_calls) keep_acquired(epoch, target, acquired);
}

void WindowCheck::complete_acquire() {
    Process &p = process();
    std::lock_guard<ProcessLock> guard(p.mutex);
    settle_slot_reads(true);
    // The origins store their completes under the area's lock, entry by entry, each
    // before its done notice: once a notice is seen, its origin's clock is there (a
    // read racing with another origin's store joins a newer clock, as a slot's may).
    Area *area = worker_ ? hold(rank_) : areas_[rank_];
    if (!area) return;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    join_into(p.clock, area->clock(Area::done));
    if (worker_) let_go(rank_, false);
    replay_locked();
}

void WindowCheck::notified() {
    Process &p = process();
    std::lock_guard<ProcessLock> guard(p.mutex);
    settle_slot_reads(true);
    Area *area = hold(rank_);
    if (!area) return;
    join_into(p.clock, area->clock(Area::notified));
    const std::uint64_t at = p.clock[p.me];
    Entry *entries = area->entries();
    for (std::uint32_t i = 0; i < area->count; ++i)
        if (entries[i].notify && entries[i].completed == not_completed) {
            entries[i].completed = at;
            entries[i].completer = p.me;
        }
    if (area->landing_capacity) complete_landings(*area, p.me, at, true);
    let_go(rank_, true);
    tick_locked();
    publish_locked();
    replay_locked();
}

void WindowCheck::exposure_done() {
    Process &p = process();
    // One entry left (an origin's last call, which its next call of the same shape takes
    // again: quick) stays, rather than take the area's lock and its entries' line from
    // the origins at every exposure: it is ordered before every later exposure's calls
    // (through the done and post clocks), as a shared lock's completed calls stay.
    if (!worker_ && areas_[rank_] && __atomic_load_n(&areas_[rank_]->count, __ATOMIC_RELAXED) <= 1)
        return;
    std::lock_guard<ProcessLock> guard(p.mutex);
    settle_slot_reads(true);
    Area *area = hold(rank_);
    if (!area) return;
    Entry probe{};
    prune(*area, [&](const Entry &e) { return ordered_before(e, probe, p.clock, p.me); });
    let_go(rank_, true);
}

// ---- origin and result buffers ------------------------------------------------------

namespace {

// Mixes bytes into a digest, four words at a time in independent lanes.
std::uint64_t mix(std::uint64_t hash, const unsigned char *bytes, std::size_t length) {
    constexpr std::uint64_t prime = 0x100000001b3ull;
    // Four named lanes, not an array: GCC keeps them in registers (18 bytes/ns here, an
    // array of lanes 8).
    std::uint64_t a = hash, b = hash ^ 1, c = hash ^ 2, d = hash ^ 3;
    std::size_t i = 0;
    for (; i + 32 <= length; i += 32) {
        std::uint64_t word[4];
        std::memcpy(word, bytes + i, 32);
        a = (a ^ word[0]) * prime;
        b = (b ^ word[1]) * prime;
        c = (c ^ word[2]) * prime;
        d = (d ^ word[3]) * prime;
    }
    hash = a ^ (b >> 1) ^ (c >> 2) ^ (d >> 3) ^ length;
    for (; i + 8 <= length; i += 8) {
        std::uint64_t word;
        std::memcpy(&word, bytes + i, 8);
        hash = (hash ^ word) * prime;
    }
    for (; i < length; ++i) hash = (hash ^ bytes[i]) * prime;
    return hash ^ (hash >> 29);
}

using Range = std::pair<std::uintptr_t, std::size_t>;

// Whether a watched buffer can be read when its call completes: one of up to 64 KiB
// always (malloc never unmaps such); a larger one if every page from its lowest to its
// highest byte is still mapped, so that a large buffer freed before its call completed
// (malloc unmaps those) reads as missing, not as a crash. msync(MS_ASYNC) only looks the
// span up in the process's mappings (ENOMEM for a hole; no page is written back since
// Linux 2.6.19): one system call, whatever the span's size, where mincore walks every
// page of it. At the call the engine reads the buffer anyway.
bool readable_at_completion(const Range *ranges, std::size_t n) {
    constexpr std::size_t may_unmap = 64 << 10;
    if (n == 1 && ranges[0].second <= may_unmap) return true;
    static const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    std::size_t total = 0;
    std::uintptr_t low = UINTPTR_MAX, high = 0;
    for (std::size_t r = 0; r < n; ++r) {
        total += ranges[r].second;
        low = std::min(low, ranges[r].first);
        high = std::max(high, ranges[r].first + ranges[r].second);
    }
    if (total <= may_unmap) return true;
    low &= ~(page - 1);
    return msync(reinterpret_cast<void *>(low), high - low, MS_ASYNC) == 0;
}

// The bytes of a range that stand for it: all of them, up to sample_bytes; of a longer one
// a sample: its first and last 64 bytes and 16 words evenly spaced between (the same
// cost at any size). Written into `block`; returns how many.
constexpr std::size_t sample_bytes = WindowCheck::sample_bytes;
std::size_t take_sample(std::uintptr_t address, std::size_t length, unsigned char *block) {
    if (length <= sample_bytes) {
        std::memcpy(block, reinterpret_cast<const void *>(address), length);
        return length;
    }
    constexpr std::size_t edge = 64, words = 16;
    std::memcpy(block, reinterpret_cast<const void *>(address), edge);
    const std::size_t step = (length - 2 * edge) / words;  // >= 8: length > 256
    for (std::size_t i = 0; i < words; ++i)
        std::memcpy(block + edge + 8 * i, reinterpret_cast<const void *>(address + edge + i * step),
                    8);
    std::memcpy(block + edge + 8 * words, reinterpret_cast<const void *>(address + length - edge),
                edge);
    return sample_bytes;
}

// A digest of the bytes of ranges [0, n): a buffer of one word or less is its own digest;
// of each range, its sample (take_sample: a buffer refilled, or changed at either end, is
// caught; a byte changed in the middle of a range above 256 bytes may not be).
inline std::uint64_t word_digest(Range range) {  // a word or less: the bytes themselves
    const auto *bytes = reinterpret_cast<const unsigned char *>(range.first);
    std::uint64_t word = 0;
    if (range.second == 8)
        std::memcpy(&word, bytes, 8);
    else
        for (std::size_t i = 0; i < range.second; ++i) word |= std::uint64_t{bytes[i]} << 8 * i;
    return word;
}
inline bool one_word(const Range *ranges, std::size_t n) { return n == 1 && ranges[0].second <= 8; }

std::uint64_t digest(const Range *ranges, std::size_t n) {
    if (one_word(ranges, n)) return word_digest(ranges[0]);
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (std::size_t r = 0; r < n; ++r) {
        const auto [address, length] = ranges[r];
        if (length <= sample_bytes) {
            hash = mix(hash, reinterpret_cast<const unsigned char *>(address), length);
        } else {
            unsigned char block[sample_bytes];
            hash = mix(hash, block, take_sample(address, length, block));
        }
    }
    return hash;
}

}  // namespace

void WindowCheck::Watched::add_more(Range range) {
    if (count == 2) more.assign(few, few + 2);
    more.push_back(range);
    ++count;
}

[[gnu::always_inline]] inline WindowCheck::Watched &WindowCheck::next_watched(
    const engine::RmaCall &call, bool result, std::uint64_t site) {
    if (watching_ == watched_.size()) watched_.emplace_back();
    Watched &watched = watched_[watching_++];
    watched.target = call.target;
    watched.kind = static_cast<std::uint8_t>(call.kind);
    watched.result = result;
    watched.site = site;
    watched.displacement = call.displacement;
    watched.count = 0;
    return watched;
}

// One range of more than a word (most buffers): its sample kept as it is, compared at
// completion; else a digest.
[[gnu::always_inline]] inline void WindowCheck::keep(Watched &watched) {
    watched.kept = 0;
    if (one_word(watched.few, watched.count))
        watched.digest = word_digest(watched.few[0]);
    else if (watched.count == 1)
        watched.kept = static_cast<std::uint16_t>(
            take_sample(watched.few[0].first, watched.few[0].second, watched.sample));
    else
        watched.digest = digest(watched.ranges(), watched.count);
}

void WindowCheck::watch(const engine::RmaCall &call, const void *buffer,
                        const engine::TypeLayout &layout, MPI_Aint count, bool result,
                        std::uint64_t site) {
    if (!buffer || count <= 0) return;
    Watched &watched = next_watched(call, result, site);
    if (layout.contiguous) {  // one range (as type_for_each_segment finds it)
        watched.few[0] = {reinterpret_cast<std::uintptr_t>(buffer),
                          layout.size * static_cast<std::size_t>(count)};
        watched.count = 1;
        keep(watched);
        return;
    }
    watched.more.clear();
    constexpr std::uint32_t most_ranges = 64;
    const auto base = reinterpret_cast<std::uintptr_t>(buffer);
    engine::type_for_each_segment(layout, static_cast<std::size_t>(count),
                                  [&](std::int64_t offset, std::size_t length) {
                                      if (watched.count < most_ranges)
                                          watched.add({base + offset, length});
                                  });
    keep(watched);
}

void WindowCheck::watch_origin(const engine::RmaCall &call, std::uint64_t site) {
    // A notified call's buffer is free once its notification was seen (MPIX_Put_notify).
    if (call.kind == RmaKind::get || call.notify) return;
    const engine::TypeLayout *origin = nullptr;
    if (!is_error(engine::type_layout_get(call.origin_type, &origin)) &&
        !(call.kind != RmaKind::accumulate && call.op == MPI_NO_OP))
        watch(call, call.origin, *origin, call.origin_count, false, site);
    if (call.kind == RmaKind::compare_and_swap && origin)
        watch(call, call.compare, *origin, 1, false, site);
}

void WindowCheck::watch_result(const engine::RmaCall &call, const engine::TypeLayout *result,
                               std::uint64_t site) {
    if (call.kind == RmaKind::put || call.kind == RmaKind::accumulate || call.notify) return;
    if (!result && is_error(engine::type_layout_get(call.result_type, &result))) return;
    watch(call, call.result, *result, call.result_count, true, site);
}

void WindowCheck::result_running(const engine::RmaCall &call) {
    if (call.kind == RmaKind::put || call.kind == RmaKind::accumulate || call.notify) return;
    verify(call.target, reinterpret_cast<std::uintptr_t>(call.result));
}

void WindowCheck::verify(int target, std::uintptr_t result) {
    // (the calls before a flush) buffers of a word or less, all toward `target`, unchanged
    if (!result) {
        std::size_t i = 0;
        while (i < watching_ && (target == -1 || watched_[i].target == target) &&
               one_word(watched_[i].few, watched_[i].count) &&
               word_digest(watched_[i].few[0]) == watched_[i].digest)
            ++i;
        if (i == watching_) {
            watching_ = 0;
            return;
        }
    }
    verify_all(target, result);
}

void WindowCheck::verify_all(int target, std::uintptr_t result) {
    Process &p = process();
    std::size_t kept = 0;
    for (std::size_t i = 0; i < watching_; ++i) {
        Watched &w = watched_[i];
        if ((target != -1 && w.target != target) ||
            (result && (!w.result || w.count == 0 || w.ranges()[0].first > result ||
                        w.ranges()[0].first + w.ranges()[0].second <= result))) {
            if (kept != i) std::swap(watched_[kept], w);  // the one at kept is done
            ++kept;
            continue;
        }
        if (one_word(w.few, w.count)) {
            if (word_digest(w.few[0]) == w.digest) continue;
        } else if (!readable_at_completion(w.ranges(), w.count)) {
            continue;
        } else if (w.kept != 0) {
            unsigned char now[sample_bytes];
            take_sample(w.few[0].first, w.few[0].second, now);
            if (std::memcmp(now, w.sample, w.kept) == 0) continue;
        } else if (digest(w.ranges(), w.count) == w.digest) {
            continue;
        }
        ++p.races;
        std::lock_guard<ProcessLock> guard(p.mutex);
        if (!p.reported.insert({w.site, w.result ? 1 : 0}).second && !p.abort_on_race) continue;
        std::fprintf(stderr,
                     "nbrma check: rank %d: the %s buffer of %s to rank %d (target "
                     "displacement %lld) changed before the call completed\n      at %s\n"
                     "  MPI lets a program %s that buffer only after the call completed "
                     "(MPI_Win_flush_local, a flush, an unlock, a fence or a complete)\n",
                     p.me, w.result ? "result" : "origin", call_name(w.kind), w.target,
                     static_cast<long long>(w.displacement), describe_site(w.site).c_str(),
                     w.result ? "store into" : "change");
        std::fflush(stderr);
        if (p.abort_on_race) std::abort();
    }
    watching_ = kept;
}

// ---- ThreadSanitizer ----------------------------------------------------------------

void WindowCheck::replay(bool all) {
    Process &p = process();
    Area *area = hold(rank_);
    if (!area) return;
    Landing *ring = area->landings();
    for (std::uint64_t i = area->landings_tail; i < area->landings_head; ++i) {
        Landing &l = ring[i % area->landing_capacity];
        const bool covered = l.completed != not_completed &&
                             (l.completer == p.me || p.clock[l.completer] > l.completed);
        if (l.replayed || !(covered || all)) continue;
        tsan::replay(l.origin, static_cast<RmaKind>(l.kind), l.acquired,
                     reinterpret_cast<void *>(base_ + l.low),
                     static_cast<std::size_t>(l.high - l.low), l.writes != 0);
        l.replayed = 1;
    }
    while (area->landings_tail < area->landings_head &&
           ring[area->landings_tail % area->landing_capacity].replayed)
        ++area->landings_tail;
    let_go(rank_, true);
}

void WindowCheck::forget(bool replay_rest) {
    Process &p = process();
    std::lock_guard<ProcessLock> guard(p.mutex);
    auto found = std::find(p.replaying.begin(), p.replaying.end(), this);
    if (found == p.replaying.end()) return;
    if (replay_rest) replay(true);
    p.replaying.erase(found);
}

void WindowCheck::freed() { forget(true); }

WindowCheck::~WindowCheck() {
    forget(false);
    Process &p = process();
    if (worker_) {
        std::lock_guard<ProcessLock> guard(p.mutex);
        for (std::size_t r = 0; r < remote_.size(); ++r) {
            if (remote_[r].rkey) ucp_rkey_destroy(remote_[r].rkey);
            if (!areas_[r]) --p.spanning[world_[r]];
        }
    }
    registration_.reset();  // before the area goes
    for (std::size_t r = 0; r < maps_.size(); ++r) unmap_shared(maps_[r], map_bytes_[r]);
}

}  // namespace nbrma::check
