// The UCX transport (DESIGN §2): remote peers through UCP, with nbrma's own worker.
// put/get are ucp_put_nbx/ucp_get_nbx, atomics are 64-bit ucp_atomic_op_nbx (network
// atomics on an HCA that has them, UCX's software emulation otherwise — the target's
// worker must then be progressed, hence needs_target_progress()), fence is
// ucp_worker_fence and flush is ucp_ep_flush_nbx. Completions are queued by the UCP
// callbacks and run only from poll() (ucp_worker_progress, then the queue), as the
// transport contract requires.
//
// Setting up one window, on every rank:
//   1. construct with the local control region; expose_window() (create/allocate
//      flavors) or expose_dynamic() (dynamic windows);
//   2. exchange the bytes of exposure() with every rank (the MPI layer allgathers);
//   3. connect(peer, record) for every rank, then finish_connect() on every rank at
//      once (wireup needs every worker progressed; the MPI layer overlaps it with a
//      nonblocking barrier).
//
// Dynamic windows: each rank registers a directory (attach_capacity entries of base,
// length, generation and packed rkey) that origins read with gets. attach() maps the
// region and publishes its rkey; detach() unmaps it, clears the entry and bumps its
// generation. An origin caches unpacked rkeys per directory slot and, before each
// access, re-reads that slot's header: a changed generation (detach, re-attach at the
// same address) drops the cached rkey; an address no entry covers is err_range.
#ifndef NBRMA_TRANSPORT_UCX_UCX_TRANSPORT_HPP
#define NBRMA_TRANSPORT_UCX_UCX_TRANSPORT_HPP

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "transport/transport.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace nbrma::transport::ucx {

class UcxTransport final : public Transport {
  public:
    static constexpr int directory_capacity = 64;  // = sync::ControlLayout::attach_capacity
    static constexpr std::size_t directory_rkey_bytes = 480;

    UcxTransport(UcxWorker &worker, int rank, int size, void *control, std::size_t control_size);
    ~UcxTransport() override;
    UcxTransport(const UcxTransport &) = delete;
    UcxTransport &operator=(const UcxTransport &) = delete;

    // ---- setup (see the header comment)
    Status expose_window(void *base, std::size_t size);
    Status expose_dynamic();
    std::vector<std::uint8_t> exposure() const;
    Status connect(int peer, const std::uint8_t *record, std::size_t length);
    // Posts a flush on every endpoint; finish_connect_test() progresses and reports
    // whether all completed (error if an endpoint failed).
    Status finish_connect_start();
    Status finish_connect_test(bool *done);

    // ---- Transport
    int size() const override { return static_cast<int>(peers_.size()); }
    int rank() const override { return rank_; }
    void *local_control() override { return control_; }
    Status put(int peer, const void *source, std::size_t length, RemoteAddress target,
               Completion *completion) override;
    Status get(int peer, void *destination, std::size_t length, RemoteAddress source,
               Completion *completion) override;
    Status atomic(int peer, AtomicOp op, RemoteAddress target, std::uint64_t operand,
                  std::uint64_t compare, std::uint64_t *result, Completion *completion) override;
    bool supports_atomics(int, Region) const override { return true; }
    Status fence(int peer) override;
    Status flush(int peer, Completion *completion) override;
    int poll() override;
    bool needs_target_progress() const override { return true; }
    Status attach(const void *base, std::uint64_t size) override;
    Status detach(const void *base) override;

  private:
    struct Remote {
        std::uint64_t base = 0;
        std::uint64_t length = 0;
        ucp_rkey_h rkey = nullptr;
    };
    struct CachedRegion {  // an unpacked rkey of a peer's attached region
        std::uint64_t generation = 0;
        Remote remote;
    };
    struct Peer {
        ucp_ep_h ep = nullptr;
        Remote control;
        Remote window;
        bool dynamic = false;
        Remote directory;
        std::vector<CachedRegion> regions;  // by directory slot (dynamic windows)
    };
    // A directory in memory: directory_capacity headers, then as many rkey slots of
    // directory_rkey_bytes (an origin's lookup reads the headers in one get).
    struct DirectoryHeader {
        std::uint64_t base;
        std::uint64_t length;  // 0: free slot
        std::uint64_t generation;
        std::uint64_t rkey_length;
    };
    static constexpr std::size_t directory_rkeys = directory_capacity * sizeof(DirectoryHeader);
    static constexpr std::size_t directory_bytes =
        directory_rkeys + directory_capacity * directory_rkey_bytes;
    struct Operation;  // per posted call: the completion and the atomic's buffers
    static void on_done(void *request, ucs_status_t status, void *user_data);
    Operation *operation_start(Completion *completion, std::uint64_t operand, std::uint64_t reply,
                               std::uint64_t *result);

    Status unpack(ucp_ep_h ep, const std::uint8_t *rkey, std::size_t length, ucp_rkey_h *out);
    // The remote virtual address and rkey of (peer, address, length), or an error.
    Status resolve(int peer, RemoteAddress address, std::size_t length, std::uint64_t *remote,
                   ucp_rkey_h *rkey);
    Status resolve_dynamic(Peer &peer, std::uint64_t address, std::size_t length, ucp_rkey_h *rkey);
    Status fetch(Peer &peer, void *destination, std::size_t length, std::uint64_t offset);
    Status posted(ucs_status_ptr_t request, Operation *operation);
    Status bitwise_by_cswap(AtomicOp op, std::uint64_t remote, ucp_rkey_h rkey,
                            std::uint64_t operand, std::uint64_t *result);

    UcxWorker &worker_;
    int rank_;
    void *control_;
    std::size_t control_size_;
    std::vector<Peer> peers_;
    std::unique_ptr<UcxRegistration> control_registration_;
    std::unique_ptr<UcxRegistration> window_registration_;
    bool dynamic_ = false;
    std::vector<std::uint64_t> directory_;  // dynamic windows: ours, read by peers
    DirectoryHeader *directory_header(int slot);
    std::unique_ptr<UcxRegistration> directory_registration_;
    std::vector<std::unique_ptr<UcxRegistration>> attached_;  // by directory slot
    std::uint64_t generation_ = 0;
    std::vector<ucp_rkey_h> retired_;  // stale rkeys, destroyed with the transport
    std::vector<ucs_status_ptr_t> connecting_;
    std::deque<std::pair<Completion *, Status>> ready_;  // completions poll() runs
    std::vector<Operation *> free_operations_;
};

}  // namespace nbrma::transport::ucx

#endif
