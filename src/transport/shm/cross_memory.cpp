#include "transport/shm/cross_memory.hpp"
#include "common/settings.hpp"

#include <sys/prctl.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace nbrma::transport::shm {

namespace {

constexpr std::uint64_t probe_value = 0x6e62726d61434d41ull;  // "nbrmaCMA"
const volatile std::uint64_t probe_word = probe_value;

std::mutex grant_mutex;
int grant_shares = 0;      // windows holding nbrma's consent
bool grant_given = false;  // PR_SET_PTRACER_ANY set by nbrma and not withdrawn
bool grant_pinned = false;

// Lets any process of the user trace this one (Yama's exception), or withdraws that.
void consent(bool any) {
#ifdef PR_SET_PTRACER
    prctl(PR_SET_PTRACER, any ? PR_SET_PTRACER_ANY : 0UL, 0, 0, 0);
#else
    (void)any;
#endif
}

}  // namespace

int yama_ptrace_scope(const char *path) {
    std::FILE *file = std::fopen(path, "r");
    if (!file) return -1;
    int scope = -1;
    if (std::fscanf(file, "%d", &scope) != 1) scope = -1;
    std::fclose(file);
    return scope;
}

bool cross_memory_forbidden() {
    const char *value = settings::env(settings::Id::cma);
    return value && std::strcmp(value, "0") == 0;
}

std::uint64_t probe_address() {
    return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&probe_word));
}

CmaVerdict probe_peer(pid_t pid, std::uint64_t address) {
    std::uint64_t value = 0;
    iovec local{&value, sizeof value};
    iovec remote{reinterpret_cast<void *>(address), sizeof value};
    ssize_t moved;
    do {
        moved = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    } while (moved < 0 && errno == EINTR);
    if (moved < 0 && errno == EPERM) return cma_denied;
    if (moved != static_cast<ssize_t>(sizeof value) || value != probe_value) return cma_unreachable;
    return cma_ok;
}

void PtracerGrant::acquire(int scope, bool readable) {
    if (held_) return;
    std::lock_guard<std::mutex> lock(grant_mutex);
    if (grant_shares == 0 && (scope != 1 || readable)) return;
    if (grant_shares++ == 0 && !grant_given) {
        consent(true);
        grant_given = true;
    }
    held_ = true;
}

void PtracerGrant::release() {
    if (!held_) return;
    held_ = false;
    std::lock_guard<std::mutex> lock(grant_mutex);
    if (--grant_shares == 0 && !grant_pinned) {
        consent(false);
        grant_given = false;
    }
}

int PtracerGrant::shares() {
    std::lock_guard<std::mutex> lock(grant_mutex);
    return grant_shares;
}

void PtracerGrant::keep_forever() {
    std::lock_guard<std::mutex> lock(grant_mutex);
    grant_pinned = true;
}

}  // namespace nbrma::transport::shm
