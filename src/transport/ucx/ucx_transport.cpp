#include "transport/ucx/ucx_transport.hpp"

#include <cstring>

#include "common/log.hpp"

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
    std::uint64_t *result;
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
        destroy(peer.directory);
        for (CachedRegion &region : peer.regions) destroy(region.remote);
    }
    for (ucp_rkey_h rkey : retired_) ucp_rkey_destroy(rkey);
    for (ucs_status_ptr_t request : connecting_)
        if (request && !UCS_PTR_IS_ERR(request)) (void)worker_.wait(request);
    for (Operation *operation : free_operations_) delete operation;
}

UcxTransport::DirectoryHeader *UcxTransport::directory_header(int slot) {
    return reinterpret_cast<DirectoryHeader *>(directory_.data()) + slot;
}

// ---------------------------------------------------------------- setup

Status UcxTransport::expose_window(void *base, std::size_t size) {
    if (!control_registration_) {
        Status status = worker_.map(control_, control_size_, &control_registration_);
        if (is_error(status)) return status;
    }
    return worker_.map(base, size, &window_registration_);
}

Status UcxTransport::expose_dynamic() {
    dynamic_ = true;
    directory_.assign(directory_bytes / sizeof(std::uint64_t), 0);
    attached_.resize(directory_capacity);
    Status status = worker_.map(directory_.data(), directory_bytes, &directory_registration_);
    if (is_error(status)) return status;
    return expose_window(nullptr, 0);
}

std::vector<std::uint8_t> UcxTransport::exposure() const {
    RecordWriter out;
    out.bytes(worker_.address());
    for (const UcxRegistration *registration :
         {control_registration_.get(), window_registration_.get(), directory_registration_.get()}) {
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
    Status status = worker_.connect(address, address_length, &p.ep);
    if (is_error(status)) return status;
    for (Remote *remote : {&p.control, &p.window, &p.directory}) {
        const std::uint8_t *rkey = nullptr;
        std::size_t rkey_length = 0;
        if (!in.word(&remote->base) || !in.word(&remote->length) || !in.bytes(&rkey, &rkey_length))
            return Status::err_arg;
        status = unpack(p.ep, rkey, rkey_length, &remote->rkey);
        if (is_error(status)) return status;
    }
    std::uint64_t dynamic = 0;
    if (!in.word(&dynamic)) return Status::err_arg;
    p.dynamic = dynamic != 0;
    if (p.dynamic) p.regions.resize(directory_capacity);
    return Status::ok;
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

Status UcxTransport::fetch(Peer &peer, void *destination, std::size_t length,
                           std::uint64_t offset) {
    ucp_request_param_t param{};
    return worker_.wait(ucp_get_nbx(peer.ep, destination, length, peer.directory.base + offset,
                                    peer.directory.rkey, &param));
}

Status UcxTransport::resolve_dynamic(Peer &peer, std::uint64_t address, std::size_t length,
                                     ucp_rkey_h *rkey) {
    if (!peer.directory.rkey) return Status::err_range;
    auto covers = [&](std::uint64_t base, std::uint64_t size) {
        return size > 0 && address >= base && address - base <= size &&
               length <= size - (address - base);
    };
    // Cached: valid while the slot's generation is unchanged.
    for (std::size_t slot = 0; slot < peer.regions.size(); ++slot) {
        CachedRegion &region = peer.regions[slot];
        if (!region.remote.rkey || !covers(region.remote.base, region.remote.length)) continue;
        DirectoryHeader header;
        Status status = fetch(peer, &header, sizeof header, slot * sizeof header);
        if (is_error(status)) return status;
        if (header.generation == region.generation) {
            *rkey = region.remote.rkey;
            return Status::ok;
        }
        retired_.push_back(region.remote.rkey);  // in-flight operations may still use it
        region.remote.rkey = nullptr;
        break;
    }
    DirectoryHeader headers[directory_capacity];
    Status status = fetch(peer, headers, sizeof headers, 0);
    if (is_error(status)) return status;
    for (int slot = 0; slot < directory_capacity; ++slot) {
        const DirectoryHeader &header = headers[slot];
        if (!covers(header.base, header.length)) continue;
        if (header.rkey_length == 0 || header.rkey_length > directory_rkey_bytes)
            return Status::err_transport;
        std::uint8_t packed[directory_rkey_bytes];
        status =
            fetch(peer, packed, header.rkey_length, directory_rkeys + slot * directory_rkey_bytes);
        if (is_error(status)) return status;
        CachedRegion &region = peer.regions[slot];
        if (region.remote.rkey) retired_.push_back(region.remote.rkey);
        region.remote.rkey = nullptr;
        status = unpack(peer.ep, packed, header.rkey_length, &region.remote.rkey);
        if (is_error(status)) return status;
        region.remote.base = header.base;
        region.remote.length = header.length;
        region.generation = header.generation;
        *rkey = region.remote.rkey;
        return Status::ok;
    }
    return Status::err_range;  // not attached (or detached since)
}

Status UcxTransport::resolve(int peer, RemoteAddress address, std::size_t length,
                             std::uint64_t *remote, ucp_rkey_h *rkey) {
    if (peer < 0 || peer >= size() || !peers_[peer].ep) return Status::err_rank;
    Peer &p = peers_[peer];
    if (address.region == Region::window && p.dynamic) {
        *remote = address.offset;
        return resolve_dynamic(p, address.offset, length, rkey);
    }
    const Remote &target = address.region == Region::control ? p.control : p.window;
    if (!target.rkey || address.offset > target.length || length > target.length - address.offset)
        return Status::err_range;
    *remote = target.base + address.offset;
    *rkey = target.rkey;
    return Status::ok;
}

// ---------------------------------------------------------------- operations

void UcxTransport::on_done(void *request, ucs_status_t status, void *user_data) {
    auto *operation = static_cast<Operation *>(user_data);
    UcxTransport *owner = operation->owner;
    if (operation->result && status == UCS_OK) *operation->result = operation->reply;
    if (operation->completion)
        owner->ready_.emplace_back(operation->completion, status_from_ucs(status));
    owner->free_operations_.push_back(operation);
    ucp_request_free(request);
}

Status UcxTransport::posted(ucs_status_ptr_t request, Operation *operation) {
    if (request != nullptr && !UCS_PTR_IS_ERR(request)) return Status::in_progress;
    Status status = Status::ok;
    if (UCS_PTR_IS_ERR(request)) {
        status = status_from_ucs(UCS_PTR_STATUS(request));
        log(1, "ucx: operation failed: %s", ucs_status_string(UCS_PTR_STATUS(request)));
    } else if (operation->result) {
        *operation->result = operation->reply;
    }
    free_operations_.push_back(operation);
    return status;
}

UcxTransport::Operation *UcxTransport::operation_start(Completion *completion,
                                                       std::uint64_t operand, std::uint64_t reply,
                                                       std::uint64_t *result) {
    Operation *operation = nullptr;
    if (free_operations_.empty()) {
        operation = new Operation;
    } else {
        operation = free_operations_.back();
        free_operations_.pop_back();
    }
    *operation = Operation{this, completion, operand, reply, result};
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

Status UcxTransport::put(int peer, const void *source, std::size_t length, RemoteAddress target,
                         Completion *completion) {
    std::uint64_t remote = 0;
    ucp_rkey_h rkey = nullptr;
    if (length > 0 && !source) return Status::err_arg;
    Status status = resolve(peer, target, length, &remote, &rkey);
    if (is_error(status) || length == 0) return status;
    Operation *operation = operation_start(completion, 0, 0, nullptr);
    ucp_request_param_t param = callback_param(operation, on_done);
    return posted(ucp_put_nbx(peers_[peer].ep, source, length, remote, rkey, &param), operation);
}

Status UcxTransport::get(int peer, void *destination, std::size_t length, RemoteAddress source,
                         Completion *completion) {
    std::uint64_t remote = 0;
    ucp_rkey_h rkey = nullptr;
    if (length > 0 && !destination) return Status::err_arg;
    Status status = resolve(peer, source, length, &remote, &rkey);
    if (is_error(status) || length == 0) return status;
    Operation *operation = operation_start(completion, 0, 0, nullptr);
    ucp_request_param_t param = callback_param(operation, on_done);
    return posted(ucp_get_nbx(peers_[peer].ep, destination, length, remote, rkey, &param),
                  operation);
}

Status UcxTransport::atomic(int peer, AtomicOp op, RemoteAddress target, std::uint64_t operand,
                            std::uint64_t compare, std::uint64_t *result, Completion *completion) {
    std::uint64_t remote = 0;
    ucp_rkey_h rkey = nullptr;
    Status status = resolve(peer, target, 8, &remote, &rkey);
    if (is_error(status)) return status;
    if (remote % 8 != 0) return Status::err_arg;
    const bool bitwise =
        op == AtomicOp::fetch_and || op == AtomicOp::fetch_or || op == AtomicOp::fetch_xor;
    if (bitwise && peer == rank_) return bitwise_by_cswap(op, remote, rkey, operand, result);
    const bool cswap = op == AtomicOp::compare_swap;
    Operation *operation =
        operation_start(completion, cswap ? compare : operand, cswap ? operand : 0, result);
    ucp_request_param_t param = callback_param(operation, on_done);
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = ucp_dt_make_contig(8);
    // Swaps always fetch (UCX requires the reply buffer); others only when asked.
    if (result || op == AtomicOp::compare_swap || op == AtomicOp::swap) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.reply_buffer = &operation->reply;
    }
    return posted(ucp_atomic_op_nbx(peers_[peer].ep, ucp_opcode(op), &operation->operand, 1, remote,
                                    rkey, &param),
                  operation);
}

// UCX 1.13's self transport computes fetching and/or/xor wrongly (the word is left
// unchanged, or cleared), so toward ourselves they run as a compare-and-swap loop
// through UCX — still one path for every atomic on our memory. Completes inline.
Status UcxTransport::bitwise_by_cswap(AtomicOp op, std::uint64_t remote, ucp_rkey_h rkey,
                                      std::uint64_t operand, std::uint64_t *result) {
    ucp_ep_h ep = peers_[rank_].ep;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype = ucp_dt_make_contig(8);
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
        if (!is_error(status) && swapped == expected) break;
        current = swapped;
    }
    if (result) *result = current;
    return Status::ok;
}

Status UcxTransport::fence(int peer) {
    if (peer < 0 || peer >= size()) return Status::err_rank;
    return status_from_ucs(ucp_worker_fence(worker_.worker()));
}

Status UcxTransport::flush(int peer, Completion *completion) {
    if (peer < 0 || peer >= size() || !peers_[peer].ep) return Status::err_rank;
    Operation *operation = operation_start(completion, 0, 0, nullptr);
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
    if (!dynamic_) return Status::ok;
    int slot = 0;
    while (slot < directory_capacity && attached_[slot]) ++slot;
    if (slot == directory_capacity) return Status::err_no_memory;
    std::unique_ptr<UcxRegistration> registration;
    Status status = worker_.map(const_cast<void *>(base), size, &registration);
    if (is_error(status)) return status;
    if (registration->rkey().size() > directory_rkey_bytes) {
        log(0, "ucx: packed rkey of %zu bytes exceeds the directory slot",
            registration->rkey().size());
        return Status::err_no_memory;
    }
    auto *rkey = reinterpret_cast<std::uint8_t *>(directory_.data()) + directory_rkeys +
                 slot * directory_rkey_bytes;
    std::memcpy(rkey, registration->rkey().data(), registration->rkey().size());
    DirectoryHeader *header = directory_header(slot);
    header->base = reinterpret_cast<std::uintptr_t>(base);
    header->length = size;
    header->rkey_length = registration->rkey().size();
    __atomic_store_n(&header->generation, ++generation_, __ATOMIC_RELEASE);
    attached_[slot] = std::move(registration);
    return Status::ok;
}

Status UcxTransport::detach(const void *base) {
    if (!dynamic_) return Status::ok;
    for (int slot = 0; slot < directory_capacity; ++slot) {
        DirectoryHeader *header = directory_header(slot);
        if (!attached_[slot] || header->base != reinterpret_cast<std::uintptr_t>(base)) continue;
        header->length = 0;
        header->rkey_length = 0;
        __atomic_store_n(&header->generation, ++generation_, __ATOMIC_RELEASE);
        attached_[slot].reset();
        return Status::ok;
    }
    return Status::err_arg;
}

}  // namespace nbrma::transport::ucx
