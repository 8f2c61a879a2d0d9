#include "transport/ucx/ucx_transport.hpp"

#include <cstring>

#include "common/log.hpp"
#include "layout/control_region.hpp"

namespace nbrma::transport::ucx {

namespace {

// The exposure record: what a peer needs to reach our worker and memory.
class RecordWriter {
  public:
    void bytes(const std::vector<std::uint8_t> &data) {
        word(data.size());
        out_.insert(out_.end(), data.begin(), data.end());
    }
    void word(std::uint64_t value) {
        auto *raw = reinterpret_cast<const std::uint8_t *>(&value);
        out_.insert(out_.end(), raw, raw + sizeof value);
    }
    std::vector<std::uint8_t> take() { return std::move(out_); }

  private:
    std::vector<std::uint8_t> out_;
};

class RecordReader {
  public:
    RecordReader(const std::uint8_t *data, std::size_t length) : data_(data), left_(length) {}
    bool word(std::uint64_t *value) {
        if (left_ < sizeof *value) return false;
        std::memcpy(value, data_, sizeof *value);
        data_ += sizeof *value;
        left_ -= sizeof *value;
        return true;
    }
    bool bytes(const std::uint8_t **start, std::size_t *length) {
        std::uint64_t size = 0;
        if (!word(&size) || size > left_) return false;
        *start = data_;
        *length = size;
        data_ += size;
        left_ -= size;
        return true;
    }

  private:
    const std::uint8_t *data_;
    std::size_t left_;
};

ucp_atomic_op_t ucp_opcode(AtomicOp op) {
    switch (op) {
        case AtomicOp::fetch_add:
            return UCP_ATOMIC_OP_ADD;
        case AtomicOp::compare_swap:
            return UCP_ATOMIC_OP_CSWAP;
        case AtomicOp::swap:
            return UCP_ATOMIC_OP_SWAP;
        case AtomicOp::fetch_and:
            return UCP_ATOMIC_OP_AND;
        case AtomicOp::fetch_or:
            return UCP_ATOMIC_OP_OR;
        case AtomicOp::fetch_xor:
            return UCP_ATOMIC_OP_XOR;
    }
    return UCP_ATOMIC_OP_LAST;
}

}  // namespace

struct UcxTransport::Operation {
    UcxTransport *owner;
    Completion *completion;
    std::uint64_t operand;  // the atomic's buffer (UCX may read it after the call returns);
                            // for compare-and-swap, the compare value
    std::uint64_t reply;    // the atomic's reply buffer; for compare-and-swap, on input
                            // the value to swap in (ucp_atomic_op_nbx's CSWAP semantics)
    void *result;           // the previous value, `width` bytes (little-endian: reply's low)
    std::uint8_t width;
    int parts;       // UCX requests still in flight for this operation (split put/get)
    Status failure;  // the first failed part's
};

UcxTransport::UcxTransport(UcxWorker &worker, int rank, int size, void *control,
                           std::size_t control_size)
    : worker_(worker), rank_(rank), control_(control), control_size_(control_size), peers_(size) {}

UcxTransport::~UcxTransport() {
    auto destroy = [](Remote &remote) {
        if (remote.rkey) ucp_rkey_destroy(remote.rkey);
        remote.rkey = nullptr;
    };
    for (Peer &peer : peers_) {
        destroy(peer.control);
        destroy(peer.window);
        if (peer.directory_rkey) ucp_rkey_destroy(peer.directory_rkey);
        for (CachedKey &key : peer.keys)
            if (key.rkey) ucp_rkey_destroy(key.rkey);
    }
    for (ucp_rkey_h rkey : retired_) ucp_rkey_destroy(rkey);
    for (ucs_status_ptr_t request : connecting_)
        if (request && !UCS_PTR_IS_ERR(request)) (void)worker_.wait(request);
    for (Operation *operation : free_operations_) delete operation;
}

// ---------------------------------------------------------------- setup

Status UcxTransport::expose_control() {
    if (control_registration_) return Status::ok;
    return worker_.map(control_, control_size_, &control_registration_);
}

Status UcxTransport::expose_window(void *base, std::size_t size) {
    Status status = expose_control();
    if (is_error(status)) return status;
    return worker_.map(base, size, &window_registration_);
}

Status UcxTransport::allocate_control() {
    Status status = worker_.allocate(control_size_, &control_registration_);
    if (is_error(status)) return status;
    control_ = reinterpret_cast<void *>(control_registration_->base());
    std::memset(control_, 0, control_size_);
    return Status::ok;
}

Status UcxTransport::allocate_window(std::size_t size, void **base) {
    Status status = expose_control();
    if (is_error(status)) return status;
    *base = nullptr;
    if (size == 0) return worker_.map(nullptr, 0, &window_registration_);
    status = worker_.allocate(size, &window_registration_);
    if (!is_error(status)) *base = reinterpret_cast<void *>(window_registration_->base());
    return status;
}

Status UcxTransport::expose_dynamic() {
    dynamic_ = true;
    // Every slot array the directory grows into is registered (and stays so until the
    // window is freed); peers find its rkey in the directory header.
    auto publish = [this](void *array, std::size_t bytes, std::vector<std::uint8_t> *key) {
        std::unique_ptr<UcxRegistration> registration;
        Status status = worker_.map(array, bytes, &registration);
        if (is_error(status)) return status;
        *key = registration->rkey();
        directory_arrays_.push_back(std::move(registration));
        return Status::ok;
    };
    directory_ = std::make_unique<DirectoryWriter>(
        static_cast<std::uint8_t *>(control_) + layout::ControlLayout::directory,
        layout::ControlLayout::directory_bytes, directory_rkey_bytes, publish);
    return expose_window(nullptr, 0);
}

std::vector<std::uint8_t> UcxTransport::exposure() const {
    RecordWriter out;
    out.bytes(worker_.address());
    for (const UcxRegistration *registration :
         {control_registration_.get(), window_registration_.get()}) {
        out.word(registration ? registration->base() : 0);
        out.word(registration ? registration->length() : 0);
        out.bytes(registration ? registration->rkey() : std::vector<std::uint8_t>());
    }
    out.word(dynamic_ ? 1 : 0);
    return out.take();
}

Status UcxTransport::unpack(ucp_ep_h ep, const std::uint8_t *rkey, std::size_t length,
                            ucp_rkey_h *out) {
    *out = nullptr;
    if (length == 0) return Status::ok;
    ucs_status_t status = ucp_ep_rkey_unpack(ep, rkey, out);
    if (status != UCS_OK) log(1, "ucx: ucp_ep_rkey_unpack failed: %s", ucs_status_string(status));
    return status_from_ucs(status);
}

Status UcxTransport::connect(int peer, const std::uint8_t *record, std::size_t length) {
    if (peer < 0 || peer >= size()) return Status::err_rank;
    Peer &p = peers_[peer];
    RecordReader in(record, length);
    const std::uint8_t *address = nullptr;
    std::size_t address_length = 0;
    if (!in.bytes(&address, &address_length)) return Status::err_arg;
    Status status = worker_.connect(address, address_length, &p.ep, &p.fence_orders);
    if (is_error(status)) return status;
    for (Remote *remote : {&p.control, &p.window}) {
        const std::uint8_t *rkey = nullptr;
        std::size_t rkey_length = 0;
        if (!in.word(&remote->base) || !in.word(&remote->length) || !in.bytes(&rkey, &rkey_length))
            return Status::err_arg;
        if (packed_keys_.size() + rkey_length > UINT32_MAX) return Status::err_no_memory;
        remote->packed_offset = static_cast<std::uint32_t>(packed_keys_.size());
        remote->packed_length = static_cast<std::uint32_t>(rkey_length);
        packed_keys_.insert(packed_keys_.end(), rkey, rkey + rkey_length);
    }
    std::uint64_t dynamic = 0;
    if (!in.word(&dynamic)) return Status::err_arg;
    p.dynamic = dynamic != 0;
    return Status::ok;
}

// The peer's control and window rkeys, unpacked at the first access toward it.
Status UcxTransport::unpack_keys(Peer &peer) {
    for (Remote *remote : {&peer.control, &peer.window}) {
        if (remote->rkey || remote->packed_length == 0) continue;
        Status status = unpack(peer.ep, packed_keys_.data() + remote->packed_offset,
                               remote->packed_length, &remote->rkey);
        if (is_error(status)) return status;
    }
    void *pointer = nullptr;
    peer.shared =
        peer.control.rkey && ucp_rkey_ptr(peer.control.rkey, peer.control.base, &pointer) == UCS_OK;
    pointer = nullptr;
    if (!peer.dynamic && peer.window.rkey && peer.window.length > 0 &&
        ucp_rkey_ptr(peer.window.rkey, peer.window.base, &pointer) == UCS_OK)
        peer.window_pointer = static_cast<std::uint8_t *>(pointer);
    peer.unpacked = true;
    return Status::ok;
}

std::uint8_t *UcxTransport::copy_window_whole(int peer, std::uint64_t *length) {
    *length = 0;
    if (peer < 0 || peer >= size() || !peers_[peer].ep) return nullptr;
    Peer &p = peers_[peer];
    if (!p.unpacked && is_error(unpack_keys(p))) return nullptr;
    if (p.window_pointer) *length = p.window.length;
    return p.window_pointer;
}

Status UcxTransport::finish_connect_start() {
    ucp_request_param_t param{};
    for (Peer &peer : peers_) {
        ucs_status_ptr_t request = ucp_ep_flush_nbx(peer.ep, &param);
        if (UCS_PTR_IS_ERR(request)) {
            log(1, "ucx: endpoint flush failed: %s", ucs_status_string(UCS_PTR_STATUS(request)));
            return status_from_ucs(UCS_PTR_STATUS(request));
        }
        connecting_.push_back(request);
    }
    return Status::ok;
}

Status UcxTransport::finish_connect_test(bool *done) {
    (void)worker_.progress();
    Status failure = Status::ok;
    *done = true;
    for (ucs_status_ptr_t &request : connecting_) {
        if (!request) continue;
        ucs_status_t status = ucp_request_check_status(request);
        if (status == UCS_INPROGRESS) {
            *done = false;
            continue;
        }
        ucp_request_free(request);
        request = nullptr;
        if (status != UCS_OK) {
            log(1, "ucx: endpoint wireup failed: %s", ucs_status_string(status));
            failure = status_from_ucs(status);
        }
    }
    if (*done) connecting_.clear();
    return failure;
}

// ---------------------------------------------------------------- addressing

Status UcxTransport::fetch(Peer &peer, void *destination, std::size_t length, std::uint64_t remote,
                           ucp_rkey_h rkey) {
    ucp_request_param_t param{};
    return worker_.wait(ucp_get_nbx(peer.ep, destination, length, remote, rkey, &param));
}

// A peer's directory through gets: the header in its control region, the slot array
// with the rkey the header publishes (unpacked once per array).
class UcxTransport::DirectorySource final : public DirectoryCache::Source {
  public:
    DirectorySource(UcxTransport &owner, Peer &peer) : owner_(owner), peer_(peer) {}
    Status read_header(std::size_t offset, void *destination, std::size_t length) override {
        return owner_.fetch(peer_, destination, length,
                            peer_.control.base + layout::ControlLayout::directory + offset,
                            peer_.control.rkey);
    }
    Status read_array(const DirectoryHeader &header, std::uint64_t address, void *destination,
                      std::size_t length) override {
        if (header.address != peer_.directory_array || !peer_.directory_rkey) {
            std::uint8_t key[layout::ControlLayout::directory_bytes];
            if (header.key_length == 0 || header.key_length > sizeof key - sizeof header)
                return Status::err_transport;
            Status status = read_header(sizeof header, key, header.key_length);
            if (is_error(status)) return status;
            std::uint64_t generation = 0;  // the key is the array's only if nothing changed
            status = read_header(0, &generation, sizeof generation);
            if (is_error(status)) return status;
            if (generation != header.generation) return Status::err_transport;  // refresh retries
            ucp_rkey_h rkey = nullptr;
            status = owner_.unpack(peer_.ep, key, header.key_length, &rkey);
            if (is_error(status)) return status;
            if (peer_.directory_rkey) owner_.retired_.push_back(peer_.directory_rkey);
            peer_.directory_rkey = rkey;
            peer_.directory_array = header.address;
        }
        return owner_.fetch(peer_, destination, length, address, peer_.directory_rkey);
    }

  private:
    UcxTransport &owner_;
    Peer &peer_;
};

Status UcxTransport::check_attached(int peer, std::uint64_t low, std::uint64_t high) {
    if (peer < 0 || peer >= size() || !peers_[peer].ep || !peers_[peer].dynamic)
        return Status::err_range;
    Peer &p = peers_[peer];
    if (!p.unpacked)
        if (Status status = unpack_keys(p); is_error(status)) return status;
    DirectorySource source(*this, p);
    Status status = p.directory.refresh(source);
    if (is_error(status)) return status;
    std::size_t first = 0, count = 0;
    status = p.directory.cover(low, high, &first, &count);
    p.checked = !is_error(status);
    return status;
}

// The rkey of a region of the peer's directory: cached while the slot's generation is
// unchanged, else read from the slot. *stale: the directory changed meanwhile.
Status UcxTransport::region_key(Peer &peer, const DirectoryCache::Region &region, ucp_rkey_h *rkey,
                                bool *stale) {
    if (peer.keys.size() <= region.slot) peer.keys.resize(region.slot + 1);
    CachedKey &key = peer.keys[region.slot];
    if (key.rkey && key.generation == region.generation) {
        *rkey = key.rkey;
        return Status::ok;
    }
    if (region.key_length == 0 || region.key_length > directory_rkey_bytes)
        return Status::err_transport;
    std::uint8_t packed[directory_rkey_bytes];
    Status status = fetch(peer, packed, region.key_length, peer.directory.key_address(region.slot),
                          peer.directory_rkey);
    if (is_error(status)) return status;
    DirectorySource source(*this, peer);
    std::uint64_t generation = 0;
    status = source.read_header(0, &generation, sizeof generation);
    if (is_error(status)) return status;
    if (generation != peer.directory.generation()) {
        *stale = true;
        return Status::ok;
    }
    if (key.rkey) retired_.push_back(key.rkey);  // in-flight operations may still use it
    key.rkey = nullptr;
    status = unpack(peer.ep, packed, region.key_length, &key.rkey);
    if (is_error(status)) return status;
    key.generation = region.generation;
    *rkey = key.rkey;
    return Status::ok;
}

Status UcxTransport::resolve_dynamic(Peer &peer, std::uint64_t address, std::size_t length) {
    std::uint64_t high = 0;
    if (__builtin_add_overflow(address, length, &high)) return Status::err_range;
    for (bool checked = peer.checked;; checked = false) {
        peer.checked = false;
        pieces_.clear();
        DirectorySource source(*this, peer);
        Status status = checked ? Status::ok : peer.directory.refresh(source);
        if (is_error(status)) return status;
        std::size_t first = 0, count = 0;
        status = peer.directory.cover(address, high, &first, &count);
        if (is_error(status)) return status;
        bool stale = false;
        std::uint64_t cursor = address;
        for (std::size_t i = first; i < first + count && !stale; ++i) {
            const DirectoryCache::Region &region = peer.directory.region(i);
            ucp_rkey_h rkey = nullptr;
            status = region_key(peer, region, &rkey, &stale);
            if (is_error(status)) return status;
            const std::uint64_t end =
                region.length >= high - region.base ? high : region.base + region.length;
            pieces_.push_back(Piece{cursor, static_cast<std::size_t>(end - cursor), rkey});
            cursor = end;
        }
        if (!stale) return Status::ok;
    }
}

Status UcxTransport::resolve(int peer, RemoteAddress address, std::size_t length) {
    if (peer < 0 || peer >= size() || !peers_[peer].ep) return Status::err_rank;
    Peer &p = peers_[peer];
    if (!p.unpacked)
        if (Status status = unpack_keys(p); is_error(status)) return status;
    if (address.region == Region::window && p.dynamic)
        return resolve_dynamic(p, address.offset, length);
    pieces_.clear();
    const Remote &target = address.region == Region::control ? p.control : p.window;
    if (!target.rkey || address.offset > target.length || length > target.length - address.offset)
        return Status::err_range;
    if (length > 0) pieces_.push_back(Piece{target.base + address.offset, length, target.rkey});
    return Status::ok;
}

// ---------------------------------------------------------------- operations

void UcxTransport::on_done(void *request, ucs_status_t status, void *user_data) {
    auto *operation = static_cast<Operation *>(user_data);
    UcxTransport *owner = operation->owner;
    ucp_request_free(request);
    if (status != UCS_OK && !is_error(operation->failure))
        operation->failure = status_from_ucs(status);
    if (--operation->parts > 0) return;
    if (operation->result && !is_error(operation->failure))
        std::memcpy(operation->result, &operation->reply, operation->width);
    if (operation->completion)
        owner->ready_.emplace_back(operation->completion, operation->failure);
    owner->free_operations_.push_back(operation);
}

Status UcxTransport::posted(ucs_status_ptr_t request, Operation *operation) {
    if (request != nullptr && !UCS_PTR_IS_ERR(request)) return Status::in_progress;
    Status status = Status::ok;
    if (UCS_PTR_IS_ERR(request)) {
        status = status_from_ucs(UCS_PTR_STATUS(request));
        log(1, "ucx: operation failed: %s", ucs_status_string(UCS_PTR_STATUS(request)));
    } else if (operation->result) {
        std::memcpy(operation->result, &operation->reply, operation->width);
    }
    free_operations_.push_back(operation);
    return status;
}

UcxTransport::Operation *UcxTransport::operation_start(Completion *completion,
                                                       std::uint64_t operand, std::uint64_t reply,
                                                       void *result, std::uint8_t width) {
    Operation *operation = nullptr;
    if (free_operations_.empty()) {
        operation = new Operation;
    } else {
        operation = free_operations_.back();
        free_operations_.pop_back();
    }
    *operation = Operation{this, completion, operand, reply, result, width, 1, Status::ok};
    return operation;
}

namespace {
ucp_request_param_t callback_param(void *operation, ucp_send_nbx_callback_t callback) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.user_data = operation;
    param.cb.send = callback;
    return param;
}
}  // namespace

Status UcxTransport::post_pieces(int peer, bool write, void *local, Completion *completion) {
    Operation *operation = operation_start(completion, 0, 0, nullptr, 0);
    operation->parts = 1;  // held while posting
    auto *cursor = static_cast<std::uint8_t *>(local);
    for (const Piece &piece : pieces_) {
        ucp_request_param_t param = callback_param(operation, on_done);
        ucs_status_ptr_t request = write ? ucp_put_nbx(peers_[peer].ep, cursor, piece.length,
                                                       piece.remote, piece.rkey, &param)
                                         : ucp_get_nbx(peers_[peer].ep, cursor, piece.length,
                                                       piece.remote, piece.rkey, &param);
        if (UCS_PTR_IS_ERR(request)) {  // parts posted already report it at completion
            operation->failure = status_from_ucs(UCS_PTR_STATUS(request));
            log(1, "ucx: operation failed: %s", ucs_status_string(UCS_PTR_STATUS(request)));
            break;
        }
        if (request) ++operation->parts;
        cursor += piece.length;
    }
    if (--operation->parts > 0) return Status::in_progress;
    const Status status = operation->failure;  // every part completed inline
    free_operations_.push_back(operation);
    return status;
}

Status UcxTransport::put(int peer, const void *source, std::size_t length, RemoteAddress target,
                         Completion *completion) {
    if (length > 0 && !source) return Status::err_arg;
    Status status = resolve(peer, target, length);
    if (is_error(status)) return status;
    return post_pieces(peer, true, const_cast<void *>(source), completion);
}

Status UcxTransport::get(int peer, void *destination, std::size_t length, RemoteAddress source,
                         Completion *completion) {
    if (length > 0 && !destination) return Status::err_arg;
    Status status = resolve(peer, source, length);
    if (is_error(status)) return status;
    return post_pieces(peer, false, destination, completion);
}

bool UcxTransport::atomic_aligned(int peer, RemoteAddress address, std::size_t width) {
    return !is_error(resolve(peer, address, width)) && pieces_.size() == 1 &&
           pieces_[0].remote % width == 0;
}

Status UcxTransport::atomic(int peer, AtomicOp op, RemoteAddress target, std::uint64_t operand,
                            std::uint64_t compare, std::uint64_t *result, Completion *completion) {
    return atomic_word(peer, op, target, 8, operand, compare, result, completion);
}

Status UcxTransport::atomic32(int peer, AtomicOp op, RemoteAddress target, std::uint32_t operand,
                              std::uint32_t compare, std::uint32_t *result,
                              Completion *completion) {
    return atomic_word(peer, op, target, 4, operand, compare, result, completion);
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "a 4-byte atomic's operand and reply are the low bytes of 8-byte buffers");

Status UcxTransport::atomic_word(int peer, AtomicOp op, RemoteAddress target, std::size_t width,
                                 std::uint64_t operand, std::uint64_t compare, void *result,
                                 Completion *completion) {
    Status status = resolve(peer, target, width);
    if (is_error(status)) return status;
    if (pieces_.size() != 1) return Status::err_range;  // a word across two regions: not one rkey
    const std::uint64_t remote = pieces_[0].remote;
    ucp_rkey_h rkey = pieces_[0].rkey;
    if (remote % width != 0) return Status::err_arg;
    const bool bitwise =
        op == AtomicOp::fetch_and || op == AtomicOp::fetch_or || op == AtomicOp::fetch_xor;
    if (bitwise && (peer == rank_ || (result && peers_[peer].shared)))
        return bitwise_by_cswap(peer, op, width, remote, rkey, operand, result);
    const bool cswap = op == AtomicOp::compare_swap;
    Operation *operation =
        operation_start(completion, cswap ? compare : operand, cswap ? operand : 0, result,
                        static_cast<std::uint8_t>(width));
    ucp_request_param_t param = callback_param(operation, on_done);
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = ucp_dt_make_contig(width);
    // Swaps always fetch (UCX requires the reply buffer); others only when asked.
    if (result || op == AtomicOp::compare_swap || op == AtomicOp::swap) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.reply_buffer = &operation->reply;
    }
    return posted(ucp_atomic_op_nbx(peers_[peer].ep, ucp_opcode(op), &operation->operand, 1, remote,
                                    rkey, &param),
                  operation);
}

// UCX 1.13's shared-memory atomics (the self transport's, and sysv's and posix's on
// memory UCX allocated) compute and/or/xor wrongly (the word is left unchanged, or
// cleared; fetching ones toward another process), so those run as a compare-and-swap
// loop through UCX — still one path for every atomic on that memory. Completes inline.
Status UcxTransport::bitwise_by_cswap(int peer, AtomicOp op, std::size_t width,
                                      std::uint64_t remote, ucp_rkey_h rkey, std::uint64_t operand,
                                      void *result) {
    ucp_ep_h ep = peers_[peer].ep;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype = ucp_dt_make_contig(width);
    const std::uint64_t mask = width == 8 ? ~0ull : (1ull << (8 * width)) - 1;
    operand &= mask;
    std::uint64_t zero = 0, current = 0;
    param.reply_buffer = &current;
    Status status =
        worker_.wait(ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_ADD, &zero, 1, remote, rkey, &param));
    for (;;) {
        if (is_error(status)) return status;
        std::uint64_t swapped = op == AtomicOp::fetch_and  ? current & operand
                                : op == AtomicOp::fetch_or ? current | operand
                                                           : current ^ operand;
        std::uint64_t expected = current;
        param.reply_buffer = &swapped;  // in: the new value; out: the previous one
        status = worker_.wait(
            ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_CSWAP, &expected, 1, remote, rkey, &param));
        if (!is_error(status) && (swapped & mask) == (expected & mask)) break;
        current = swapped & mask;
    }
    if (result) std::memcpy(result, &current, width);
    return Status::ok;
}

Status UcxTransport::fence(int peer) {
    if (peer < 0 || peer >= size()) return Status::err_rank;
    const Peer &p = peers_[peer];
    if (!p.ep || p.fence_orders) return status_from_ucs(ucp_worker_fence(worker_.worker()));
    // An endpoint whose lanes UCX's fence does not order (UCX before 1.14, several
    // network lanes): everything posted to the peer completes there first.
    ucp_request_param_t param{};
    return worker_.wait(ucp_ep_flush_nbx(p.ep, &param));
}

Status UcxTransport::flush(int peer, Completion *completion) {
    if (peer < 0 || peer >= size() || !peers_[peer].ep) return Status::err_rank;
    Operation *operation = operation_start(completion, 0, 0, nullptr, 0);
    ucp_request_param_t param = callback_param(operation, on_done);
    return posted(ucp_ep_flush_nbx(peers_[peer].ep, &param), operation);
}

int UcxTransport::poll() {
    for (int round = 0; round < 16 && worker_.progress() > 0; ++round) {
    }
    int ran = 0;
    while (!ready_.empty()) {
        auto [completion, status] = ready_.front();
        ready_.pop_front();
        completion->on_complete(status);
        ++ran;
    }
    return ran;
}

// ---------------------------------------------------------------- dynamic windows

Status UcxTransport::attach(const void *base, std::uint64_t size) {
    if (!directory_) return Status::err_unsupported;
    const std::uint64_t address = reinterpret_cast<std::uintptr_t>(base);
    // refused (wrap-around, overlap) before any memory is registered
    if (Status status = directory_->admits(address, size); is_error(status)) return status;
    std::unique_ptr<UcxRegistration> registration;
    if (size > 0) {
        Status status = worker_.map(const_cast<void *>(base), size, &registration);
        if (is_error(status)) return status;
        if (registration->rkey().size() > directory_rkey_bytes) {
            log(0, "ucx: packed rkey of %zu bytes exceeds the directory slot",
                registration->rkey().size());
            return Status::err_no_memory;
        }
    }
    Status status =
        directory_->add(address, size, registration ? registration->rkey().data() : nullptr,
                        registration ? registration->rkey().size() : 0);
    if (is_error(status)) return status;  // the registration goes with it
    if (registration) attached_[address] = std::move(registration);
    return Status::ok;
}

Status UcxTransport::detach(const void *base) {
    if (!directory_) return Status::err_unsupported;
    const std::uint64_t address = reinterpret_cast<std::uintptr_t>(base);
    Status status = directory_->remove(address);  // withdrawn first, then unmapped
    if (is_error(status)) return status;
    attached_.erase(address);
    return Status::ok;
}

}  // namespace nbrma::transport::ucx
