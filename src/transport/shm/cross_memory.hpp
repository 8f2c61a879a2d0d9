// Permission for cross-memory attach (process_vm_readv/writev) between the ranks of a
// node, which MPI_Win_create and MPI_Win_attach memory needs (doc/design.md
// §9). The kernel allows it to a process that may ptrace the target;
// with Yama's ptrace_scope 1 that takes the target's consent (PR_SET_PTRACER), with 2
// or 3 only privilege helps. Like UCX and Open MPI, nbrma consents only where Yama asks
// for it, but also only while a window needs it: the consent is reference-counted and
// withdrawn with the last window holding it. NBRMA_CMA=0 forbids both.
#ifndef NBRMA_TRANSPORT_SHM_CROSS_MEMORY_HPP
#define NBRMA_TRANSPORT_SHM_CROSS_MEMORY_HPP

#include <sys/types.h>

#include <cstdint>

namespace nbrma::transport::shm {

// Yama's ptrace_scope (0 to 3) read from `path`, or -1 when there is no such file (no
// Yama: cross-memory attach between processes of one user needs no consent).
int yama_ptrace_scope(const char *path = "/proc/sys/kernel/yama/ptrace_scope");

// True iff the environment says NBRMA_CMA=0: no cross-memory attach, no PR_SET_PTRACER.
bool cross_memory_forbidden();

// Why reading a peer failed, ordered by precedence when the ranks' verdicts are merged.
enum CmaVerdict : int {
    cma_ok = 0,
    cma_unreachable = 1,  // no such process, or the word there is not the probe word
    cma_denied = 2,       // EPERM: no ptrace permission
    cma_forbidden = 3,    // NBRMA_CMA=0
};

// The address of this process's probe word, for peers to read.
std::uint64_t probe_address();
// Reads the probe word of process `pid` at `address` with process_vm_readv.
CmaVerdict probe_peer(pid_t pid, std::uint64_t address);

// A window's share in this process's consent to be traced (PR_SET_PTRACER_ANY).
class PtracerGrant {
  public:
    PtracerGrant() = default;
    PtracerGrant(const PtracerGrant &) = delete;
    PtracerGrant &operator=(const PtracerGrant &) = delete;
    ~PtracerGrant() { release(); }

    // Takes a share when the window needs consent from this process: nbrma's consent
    // is in force already, or `scope` is 1 and the peers could not read this process
    // before (`readable` false; true means someone else, e.g. MPICH's UCX, consented,
    // and that is left alone). The first share sets PR_SET_PTRACER_ANY.
    void acquire(int scope, bool readable);
    // Gives the share back; the last one withdraws the consent (PR_SET_PTRACER 0).
    void release();
    bool held() const { return held_; }

    // Shares held in this process (for tests).
    static int shares();
    // From now on nbrma's consent, once given, is never withdrawn: another user of this
    // process (nbrma's own UCX context, whose CMA transport relies on the same consent)
    // may depend on it.
    static void keep_forever();

  private:
    bool held_ = false;
};

}  // namespace nbrma::transport::shm

#endif
