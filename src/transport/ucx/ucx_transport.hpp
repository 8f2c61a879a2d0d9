// The UCX transport (doc/design.md §2): remote peers through UCP, with nbrma's own worker.
// put/get are ucp_put_nbx/ucp_get_nbx, atomics are 64- and 32-bit ucp_atomic_op_nbx (network
// atomics on an HCA that has them, UCX's software emulation otherwise — the target's
// worker must then be progressed, hence needs_target_progress), fence is
// ucp_worker_fence (a flush of the endpoint where that does not order its lanes:
// ucx::fence_orders) and flush is ucp_ep_flush_nbx. Completions are queued by the UCP
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
// Dynamic windows: each rank keeps the directory of its attached regions
// (transport/directory.hpp) in registered memory — the slot array, with a packed rkey
// per slot; a grown array is registered anew and its rkey published in the header in
// our (registered) control region. attach() maps the region and publishes its rkey;
// detach() withdraws it, then unmaps it. An origin keeps a copy of each peer's
// directory, re-read when the peer's generation word changed (one 8-byte get per
// access otherwise), and unpacked rkeys per slot, valid while the slot's generation
// is unchanged (a detach or a re-attach at the same address changes it). An access
// spanning regions attached back to back is split into one operation per region; an
// address no region covers is err_range.
#ifndef NBRMA_TRANSPORT_UCX_UCX_TRANSPORT_HPP
#define NBRMA_TRANSPORT_UCX_UCX_TRANSPORT_HPP

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "transport/directory.hpp"
#include "transport/transport.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace nbrma::transport::ucx {

class UcxTransport final : public Transport {
  public:
    static constexpr std::size_t directory_rkey_bytes = 480;  // key bytes per directory slot

    UcxTransport(UcxWorker &worker, int rank, int size, void *control, std::size_t control_size);
    ~UcxTransport() override;
    UcxTransport(const UcxTransport &) = delete;
    UcxTransport &operator=(const UcxTransport &) = delete;

    // ---- setup (see the header comment)
    Status expose_window(void *base, std::size_t size);
    Status expose_dynamic();
    // nbrma_transport=ucx: UCX allocates our control region (in place of the one the
    // constructor got, zeroed here) and, with allocate_window() in place of
    // expose_window(), the window's memory (*base: its address, nullptr for 0 bytes),
    // so that UCX's shared-memory transports reach both with loads, stores and CPU
    // atomics (UcxWorker::allocate). Call allocate_control() first.
    Status allocate_control();
    Status allocate_window(std::size_t size, void **base);
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
    Status atomic32(int peer, AtomicOp op, RemoteAddress target, std::uint32_t operand,
                    std::uint32_t compare, std::uint32_t *result, Completion *completion) override;
    bool supports_atomics32(int, Region) const override { return true; }
    bool atomic_aligned(int peer, RemoteAddress address, std::size_t width) override;
    // A peer whose window UCX allocated on this node: its memory through ucp_rkey_ptr
    // (what UCX's shared-memory put and get copy to and from). Not for atomics: see
    // Transport::copy_window_whole.
    std::uint8_t *copy_window_whole(int peer, std::uint64_t *length) override;
    Status fence(int peer) override;
    Status flush(int peer, Completion *completion) override;
    int poll() override;
    Capabilities capabilities() const override { return {false, true, false, true}; }
    int event_fd() const override { return worker_.event_fd(); }
    bool arm() override { return worker_.arm(); }
    Status attach(const void *base, std::uint64_t size) override;
    Status detach(const void *base) override;
    Status check_attached(int peer, std::uint64_t low, std::uint64_t high) override;

  private:
    struct Remote {
        std::uint64_t base = 0;
        std::uint64_t length = 0;
        ucp_rkey_h rkey = nullptr;
        // The packed rkey in packed_keys_, until the first access to the peer unpacks it.
        std::uint32_t packed_offset = 0;
        std::uint32_t packed_length = 0;
    };
    struct CachedKey {  // an unpacked rkey of a peer's directory slot
        std::uint64_t generation = 0;
        ucp_rkey_h rkey = nullptr;
    };
    struct Peer {
        ucp_ep_h ep = nullptr;
        bool fence_orders = false;  // ucp_worker_fence orders ep (UcxWorker::connect)
        Remote control;
        Remote window;
        bool dynamic = false;
        bool unpacked = false;  // control and window rkeys unpacked (first access)
        // Its control region is in reach of our loads and stores (ucp_rkey_ptr): UCX's
        // shared-memory transports serve its atomics.
        bool shared = false;
        // Its window memory in reach of our loads and stores (ucp_rkey_ptr), or null.
        std::uint8_t *window_pointer = nullptr;
        DirectoryCache directory;           // dynamic windows: the peer's attached regions
        std::uint64_t directory_array = 0;  // the slot array directory_rkey is for
        ucp_rkey_h directory_rkey = nullptr;
        std::vector<CachedKey> keys;  // by directory slot
        // check_attached() just re-read the directory: the access it checked (the
        // engine's next call toward this peer) need not read the generation again.
        bool checked = false;
    };
    Status unpack_keys(Peer &peer);
    Status expose_control();  // registers the control region, if not yet
    struct Piece {  // one contiguous operation: remote address, length, rkey
        std::uint64_t remote;
        std::size_t length;
        ucp_rkey_h rkey;
    };
    class DirectorySource;
    struct Operation;  // per posted call: the completion and the atomic's buffers
    static void on_done(void *request, ucs_status_t status, void *user_data);
    Operation *operation_start(Completion *completion, std::uint64_t operand, std::uint64_t reply,
                               void *result, std::uint8_t width);

    Status unpack(ucp_ep_h ep, const std::uint8_t *rkey, std::size_t length, ucp_rkey_h *out);
    // The remote pieces of (peer, address, length) into pieces_ (one per attached
    // region it spans on dynamic windows; none if length is 0), or an error.
    Status resolve(int peer, RemoteAddress address, std::size_t length);
    Status resolve_dynamic(Peer &peer, std::uint64_t address, std::size_t length);
    Status region_key(Peer &peer, const DirectoryCache::Region &region, ucp_rkey_h *rkey,
                      bool *stale);
    // A blocking get (directory reads).
    Status fetch(Peer &peer, void *destination, std::size_t length, std::uint64_t remote,
                 ucp_rkey_h rkey);
    // Posts a put or get of every piece as one operation (one completion).
    Status post_pieces(int peer, bool write, void *local, Completion *completion);
    Status posted(ucs_status_ptr_t request, Operation *operation);
    // atomic() and atomic32(): a word of `width` bytes (8 or 4); operand, compare and
    // the value stored at *result hold it in their low bytes.
    Status atomic_word(int peer, AtomicOp op, RemoteAddress target, std::size_t width,
                       std::uint64_t operand, std::uint64_t compare, void *result,
                       Completion *completion);
    Status bitwise_by_cswap(int peer, AtomicOp op, std::size_t width, std::uint64_t remote,
                            ucp_rkey_h rkey, std::uint64_t operand, void *result);

    UcxWorker &worker_;
    int rank_;
    void *control_;
    std::size_t control_size_;
    std::vector<Peer> peers_;
    // Every peer's packed rkeys as connect() got them: a window's keys are unpacked peer
    // by peer at the first access (unpack_keys), so creating a window costs no unpack
    // for peers it never reaches.
    std::vector<std::uint8_t> packed_keys_;
    std::unique_ptr<UcxRegistration> control_registration_;
    std::unique_ptr<UcxRegistration> window_registration_;
    bool dynamic_ = false;
    std::unique_ptr<DirectoryWriter> directory_;                          // ours (dynamic windows)
    std::vector<std::unique_ptr<UcxRegistration>> directory_arrays_;      // its slot arrays
    std::map<std::uint64_t, std::unique_ptr<UcxRegistration>> attached_;  // by base
    std::vector<Piece> pieces_;
    std::vector<ucp_rkey_h> retired_;  // stale rkeys, destroyed with the transport
    std::vector<ucs_status_ptr_t> connecting_;
    std::deque<std::pair<Completion *, Status>> ready_;  // completions poll() runs
    std::vector<Operation *> free_operations_;
};

}  // namespace nbrma::transport::ucx

#endif
