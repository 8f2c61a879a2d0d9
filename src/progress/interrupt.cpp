#include "progress/interrupt.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "common/log.hpp"
#include "common/settings.hpp"
#include "transport/shm/shm_segment.hpp"

extern char **environ;

namespace nbrma::engine::interrupt {

using helper::HelpHeader;
using helper::RankSlot;

namespace {
struct Table {
    std::unique_ptr<transport::shm::ShmSegment> segment;
    HelpHeader *header = nullptr;
    unsigned slot = 0;
    bool joined = false;
    std::vector<pid_t> spawned;  // the helpers this rank started (it reaps them)
    int helper_pidfd = -1;       // this rank's helper, watched (helper_lost)
    pid_t helper_watched = 0;
    bool lost = false;  // the helper died: reported once
};
Table &table() {
    static auto *state = new Table();  // never destroyed: the thread may run at exit
    return *state;
}

// This rank's helper's count of ranks wanting help (the word it sleeps on).
std::atomic<std::uint32_t> &my_wanted() {
    Table &self = table();
    return self.header->wanted[self.slot % self.header->helpers];
}

// The rank's watch went from 0 to set: count it for its helper and wake the helper.
void newly_wanted() {
    std::atomic<std::uint32_t> &wanted = my_wanted();
    wanted.fetch_add(1, std::memory_order_seq_cst);
    Table &self = table();
    if (self.header->helper_sleeping[self.slot % self.header->helpers].load(
            std::memory_order_seq_cst))
        helper::futex_wake(&wanted);
}
}  // namespace

Counters &counters() {
    static Counters values;
    return values;
}

Status create_table(unsigned slots, unsigned helpers, std::string *name, std::size_t *bytes) {
    Table &self = table();
    self.segment = std::make_unique<transport::shm::ShmSegment>();
    *bytes = helper::table_bytes(slots);
    Status status = self.segment->create(*bytes);
    if (is_error(status)) return status;
    self.header = static_cast<HelpHeader *>(self.segment->address());
    self.header->slots = slots;
    self.header->helpers = helpers;
    self.header->magic = helper::table_magic;
    *name = self.segment->name();
    return Status::ok;
}

Status open_table(const std::string &name, std::size_t bytes) {
    Table &self = table();
    self.segment = std::make_unique<transport::shm::ShmSegment>();
    Status status = self.segment->open(name, bytes);
    if (is_error(status)) return status;
    self.header = static_cast<HelpHeader *>(self.segment->address());
    return self.header->magic == helper::table_magic ? Status::ok : Status::err_transport;
}

void join(unsigned slot) {
    Table &self = table();
    if (!self.header || slot >= self.header->slots) return;
    self.slot = slot;
    RankSlot *mine = helper::table_slot(self.header, slot);
    mine->pid.store(static_cast<std::int32_t>(getpid()));
    mine->presence.store(helper::slot_present, std::memory_order_release);
    self.joined = true;
}

std::string find_helper() {
    if (const char *path = settings::env(settings::Id::helper)) return path;
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void *>(&find_helper), &info) || !info.dli_fname) return "";
    std::string directory = info.dli_fname;
    const auto slash = directory.rfind('/');
    directory = slash == std::string::npos ? "." : directory.substr(0, slash);
    for (const char *candidate :
         {"/nbrma-helper", "/../libexec/nbrma-helper", "/../nbrma-helper"}) {
        const std::string path = directory + candidate;
        if (access(path.c_str(), X_OK) == 0) return path;
    }
#ifdef NBRMA_LIBEXECDIR
    // Installed where libexec is not ../libexec of libdir (Debian: /usr/lib/<multiarch>
    // and /usr/libexec): the configured libexecdir.
    const std::string installed = NBRMA_LIBEXECDIR "/nbrma-helper";
    if (access(installed.c_str(), X_OK) == 0) return installed;
#endif
    return "";
}

Status start_helpers(const std::string &name, std::size_t bytes, std::string *why) {
    Table &self = table();
    const std::string path = find_helper();
    if (path.empty()) {
        *why =
            "the helper program nbrma-helper is not next to libnbrma.so, in ../libexec or "
            "in .. of its directory, or in the libexecdir it was configured with; set "
            "NBRMA_HELPER to its path";
        return Status::err_other;
    }
    const unsigned k = self.header->helpers;
    const std::string size_text = std::to_string(bytes), k_text = std::to_string(k);
    for (unsigned h = 0; h < k; ++h) {
        const std::string h_text = std::to_string(h);
        char *argv[] = {const_cast<char *>(path.c_str()),      const_cast<char *>(name.c_str()),
                        const_cast<char *>(size_text.c_str()), const_cast<char *>(h_text.c_str()),
                        const_cast<char *>(k_text.c_str()),    nullptr};
        // The helper holds nothing of this rank's but its stderr until it is up (it then
        // puts /dev/null there too): no pipe to the launcher, no PMI or MPICH socket, so a
        // rank killed while its helper lives still ends the job as fast as without one.
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addclosefrom_np(&actions, 3);
        pid_t pid = 0;
        const int error = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, environ);
        posix_spawn_file_actions_destroy(&actions);
        if (error != 0) {
            *why = "cannot start the helper " + path + ": " + std::strerror(error);
            return Status::err_other;
        }
        self.spawned.push_back(pid);
        // Wait until it mapped the table (it publishes its state), or exited.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        std::atomic<std::uint32_t> &state = self.header->helper_state[h];
        while (state.load(std::memory_order_acquire) == helper::helper_absent) {
            int wstatus = 0;
            if (waitpid(pid, &wstatus, WNOHANG) == pid) {
                self.spawned.pop_back();
                *why = "the helper " + path + " exited at start (" +
                       (WIFEXITED(wstatus) ? "status " + std::to_string(WEXITSTATUS(wstatus))
                                           : "signal " + std::to_string(WTERMSIG(wstatus))) +
                       ")";
                return Status::err_other;
            }
            if (std::chrono::steady_clock::now() > deadline) {
                *why = "the helper " + path + " did not come up within 30 s";
                return Status::err_other;
            }
            helper::futex_wait(&state, helper::helper_absent, 1000000);
        }
        log(1, "helper %u of %u: pid %d, %s", h, k, static_cast<int>(pid),
            state.load() == helper::helper_bound
                ? "bound to the ranks' package"
                : "no spare core on the node: left to the OS scheduler");
    }
    return Status::ok;
}

void withdraw() {
    if (table().segment) table().segment->withdraw();
}

void leave() {
    Table &self = table();
    if (!self.joined) return;
    unwant();
    my_slot()->presence.store(helper::slot_left, std::memory_order_release);
    helper::futex_wake(&my_wanted());  // our helper looks whether anyone is left
    self.joined = false;
}

void reap_helpers(int timeout_ms) {
    Table &self = table();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (pid_t pid : self.spawned) {
        while (waitpid(pid, nullptr, WNOHANG) == 0) {
            if (std::chrono::steady_clock::now() > deadline) {
                log(1, "helper %d still serves ranks of the node: not waiting for it",
                    static_cast<int>(pid));
                break;
            }
            usleep(1000);
        }
    }
    self.spawned.clear();
}

bool attached() { return table().joined; }
unsigned slot_index() { return table().slot; }
HelpHeader *table_header() { return table().header; }
RankSlot *my_slot() { return helper::table_slot(table().header, table().slot); }

std::atomic<std::uint64_t> *bell(int slot) {
    const Table &self = table();
    if (!self.header || slot < 0 || static_cast<unsigned>(slot) >= self.header->slots)
        return nullptr;
    return &helper::table_slot(self.header, static_cast<unsigned>(slot))->bell;
}

std::size_t table_bytes() {
    return table().header ? helper::table_bytes(table().header->slots) : 0;
}
unsigned helper_count() { return table().header ? table().header->helpers : 0; }
int helper_pid(unsigned h) { return h < helper_count() ? table().header->helper_pid[h].load() : 0; }

bool helper_lost() {
    Table &self = table();
    if (!self.joined) return false;
    if (self.lost) return true;
    const pid_t pid = helper_pid(self.slot % self.header->helpers);
    if (pid <= 0) return false;
    if (self.helper_pidfd < 0 || self.helper_watched != pid) {
        if (self.helper_pidfd >= 0) close(self.helper_pidfd);
        self.helper_pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
        self.helper_watched = pid;
        if (self.helper_pidfd < 0) {  // gone already (ESRCH), or no pidfd_open
            self.lost = errno == ESRCH;
        }
    }
    if (!self.lost && self.helper_pidfd >= 0) {
        pollfd exited{self.helper_pidfd, POLLIN, 0};
        self.lost = ::poll(&exited, 1, 0) > 0;
    }
    if (self.lost)
        log(0,
            "the SmartInterrupts helper (pid %d) is gone; this rank's progress thread "
            "polls from now on (as NBRMA_PROGRESS=thread)",
            static_cast<int>(pid));
    return self.lost;
}

void want(std::uint64_t seen, unsigned rings) {
    if (my_slot()->watch.exchange(seen + rings, std::memory_order_seq_cst) == 0) newly_wanted();
}

void want_at_most(std::uint64_t seen, unsigned rings) {
    RankSlot *slot = my_slot();
    std::uint64_t watch = slot->watch.load(std::memory_order_acquire);
    while (watch == 0 || watch > seen + rings) {
        if (slot->watch.compare_exchange_weak(watch, seen + rings, std::memory_order_seq_cst)) {
            if (watch == 0) newly_wanted();
            return;
        }
    }
}

void unwant() {
    RankSlot *slot = my_slot();
    if (slot->watch.exchange(0, std::memory_order_acq_rel) != 0)
        my_wanted().fetch_sub(1, std::memory_order_acq_rel);
}

bool enter_wait() {
    return attached() && my_slot()->inside.fetch_add(1, std::memory_order_seq_cst) == 0;
}

bool leave_wait() {
    return attached() && my_slot()->inside.fetch_sub(1, std::memory_order_seq_cst) == 1;
}

}  // namespace nbrma::engine::interrupt
