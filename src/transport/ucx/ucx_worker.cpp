#include "transport/ucx/ucx_worker.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/log.hpp"
#include "common/settings.hpp"
#include "common/yield.hpp"

namespace nbrma::transport::ucx {

Status status_from_ucs(ucs_status_t status) {
    switch (status) {
        case UCS_OK:
            return Status::ok;
        case UCS_INPROGRESS:
            return Status::in_progress;
        case UCS_ERR_NO_MEMORY:
            return Status::err_no_memory;
        case UCS_ERR_INVALID_PARAM:
            return Status::err_arg;
        case UCS_ERR_UNSUPPORTED:
            return Status::err_unsupported;
        case UCS_ERR_OUT_OF_RANGE:
            return Status::err_range;
        default:
            return Status::err_transport;
    }
}

bool fence_orders(bool strong, const char *endpoint_info) {
    if (strong) return true;
    // Lines "#   lane[0]:  1:rc_mlx5/mlx5_0:1.0 md[0] -> md[0]/ib/sysdev[0] rma_bw#0 amo#0"
    static const char *const in_call[] = {"self", "sysv", "posix", "xpmem", "cma", "knem"};
    int lanes = 0, network = 0;
    for (const char *line = endpoint_info; line && *line;) {
        const char *end = std::strchr(line, '\n');
        const std::size_t length = end ? static_cast<std::size_t>(end - line) : std::strlen(line);
        const std::string text(line, length);
        line = end ? end + 1 : nullptr;
        const std::size_t lane = text.find("lane[");
        if (lane == std::string::npos) continue;
        ++lanes;
        // the transport: between the resource index's ':' and the '/' before the device
        const std::size_t colon = text.find(':', text.find("]:", lane) + 2);
        const std::size_t slash = text.find('/', colon);
        const std::size_t arrow = text.find("->", slash);
        if (colon == std::string::npos || slash == std::string::npos || arrow == std::string::npos)
            return false;
        const std::string transport = text.substr(colon + 1, slash - colon - 1);
        bool copies = false;
        for (const char *name : in_call) copies = copies || transport == name;
        // its uses: the words past the remote md/transport, "am", "am_bw#0", "rma_bw#1", "amo#0"...
        bool moves = false;
        std::size_t word = text.find(' ', arrow + 3);
        while (word != std::string::npos) {
            while (word < text.size() && text[word] == ' ') ++word;
            if (text.compare(word, 2, "am") == 0 || text.compare(word, 3, "rma") == 0) moves = true;
            word = text.find(' ', word);
        }
        if (moves && !copies) ++network;
    }
    return lanes > 0 && network <= 1;
}

namespace {
// What ucp_ep_print_info prints for `ep` (empty if it cannot be captured).
std::string endpoint_info(ucp_ep_h ep) {
    char *text = nullptr;
    std::size_t length = 0;
    std::FILE *stream = open_memstream(&text, &length);
    if (!stream) return {};
    ucp_ep_print_info(ep, stream);
    std::fclose(stream);
    std::string info(text, length);
    std::free(text);
    return info;
}
}  // namespace

UcxRegistration::~UcxRegistration() {
    if (memh_) ucp_mem_unmap(context_, memh_);
}

Status UcxWorker::create(const char *tls, std::unique_ptr<UcxWorker> *out, bool wakeup) {
    std::unique_ptr<UcxWorker> self(new UcxWorker());
    ucp_config_t *config = nullptr;
    ucs_status_t status = ucp_config_read("NBRMA", nullptr, &config);
    if (status != UCS_OK) {
        log(0, "ucx: cannot read the UCX configuration: %s", ucs_status_string(status));
        return status_from_ucs(status);
    }
    if (tls) status = ucp_config_modify(config, "TLS", tls);
    // Memory UCX allocates for windows (allocate()): not through its posix memory domain
    // unless asked for, which fills a /dev/shm file at allocation (every page resident,
    // and a window larger than the machine brings the OOM killer where it should fail);
    // sysv's segments, and mmap's, are touched only where the application touches. Nor
    // from the heap (UCX's thp and heap methods, posix_memalign): a size mmap refuses is
    // one malloc refuses too (or, under AddressSanitizer, aborts on).
    if (status == UCS_OK && !settings::ucx_setting("ALLOC_PRIO"))
        status = ucp_config_modify(config, "ALLOC_PRIO", "md:sysv,huge,mmap");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
    params.features =
        UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AMO32 | (wakeup ? UCP_FEATURE_WAKEUP : 0);
    params.name = "nbrma";
    if (status == UCS_OK) status = ucp_init(&params, config, &self->context_);
    ucp_config_release(config);
    if (status != UCS_OK) {
        log(0, "ucx: ucp_init failed: %s", ucs_status_string(status));
        return status_from_ucs(status);
    }
    ucp_worker_params_t worker_params{};
    worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    status = ucp_worker_create(self->context_, &worker_params, &self->worker_);
    if (status != UCS_OK) {
        log(0, "ucx: ucp_worker_create failed: %s", ucs_status_string(status));
        return status_from_ucs(status);
    }
    if (wakeup && ucp_worker_get_efd(self->worker_, &self->event_fd_) != UCS_OK) {
        log(1, "ucx: no event descriptor for the worker: interrupt progress polls UCX peers");
        self->event_fd_ = -1;
    }
    ucp_address_t *address = nullptr;
    std::size_t length = 0;
    status = ucp_worker_get_address(self->worker_, &address, &length);
    if (status != UCS_OK) return status_from_ucs(status);
    auto *bytes = reinterpret_cast<const std::uint8_t *>(address);
    self->address_.assign(bytes, bytes + length);
    ucp_worker_release_address(self->worker_, address);
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    self->strong_fence_ = major > 1 || (major == 1 && minor >= 14);
    *out = std::move(self);
    return Status::ok;
}

UcxWorker::~UcxWorker() {
    for (auto &entry : endpoints_) {
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags = UCP_EP_CLOSE_FLAG_FORCE;
        (void)wait(ucp_ep_close_nbx(entry.second.ep, &param));
    }
    if (worker_) ucp_worker_destroy(worker_);
    if (context_) ucp_cleanup(context_);
}

Status UcxWorker::connect(const std::uint8_t *address, std::size_t length, ucp_ep_h *ep,
                          bool *fence_orders) {
    std::string key(reinterpret_cast<const char *>(address), length);
    auto found = endpoints_.find(key);
    if (found != endpoints_.end()) {
        *ep = found->second.ep;
        if (fence_orders) *fence_orders = found->second.fence_orders;
        return Status::ok;
    }
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = reinterpret_cast<const ucp_address_t *>(address);
    ucp_ep_h created = nullptr;
    ucs_status_t status = ucp_ep_create(worker_, &params, &created);
    if (status != UCS_OK) {
        log(1, "ucx: ucp_ep_create failed: %s", ucs_status_string(status));
        return Status::err_transport;
    }
    // What its fence orders: its lanes are chosen at creation, from the peer's address.
    const char *test_fence = settings::env(settings::Id::test_ucx_fence);
    bool ordered = !(test_fence && std::strcmp(test_fence, "flush") == 0) &&
                   (strong_fence_ || ucx::fence_orders(false, endpoint_info(created).c_str()));
    if (!ordered && !test_fence)
        log(1,
            "ucx: UCX %s fences each transport interface alone and an endpoint uses several "
            "network lanes: fences toward its peer are flushes",
            ucp_get_version_string());
    endpoints_.emplace(std::move(key), Endpoint{created, ordered});
    *ep = created;
    if (fence_orders) *fence_orders = ordered;
    return Status::ok;
}

Status UcxWorker::map(void *base, std::size_t length, std::unique_ptr<UcxRegistration> *out) {
    return register_memory(base, length, false, out);
}

Status UcxWorker::allocate(std::size_t length, std::unique_ptr<UcxRegistration> *out) {
    if (length == 0) return Status::err_arg;
    return register_memory(nullptr, length, true, out);
}

Status UcxWorker::register_memory(void *base, std::size_t length, bool allocate,
                                  std::unique_ptr<UcxRegistration> *out) {
    auto registration = std::make_unique<UcxRegistration>();
    registration->context_ = context_;
    registration->base_ = reinterpret_cast<std::uintptr_t>(base);
    registration->length_ = length;
    if (length > 0) {
        ucp_mem_map_params_t params{};
        params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                            UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        params.address = base;
        params.length = length;
        params.flags = allocate ? UCP_MEM_MAP_ALLOCATE : 0;
        ucs_status_t status = ucp_mem_map(context_, &params, &registration->memh_);
        if (status != UCS_OK) {
            log(1, "ucx: ucp_mem_map of %zu bytes failed: %s", length, ucs_status_string(status));
            return status_from_ucs(status);
        }
        if (allocate) {
            ucp_mem_attr_t attributes{};
            attributes.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
            status = ucp_mem_query(registration->memh_, &attributes);
            if (status != UCS_OK) return status_from_ucs(status);
            if (attributes.length < length) return Status::err_no_memory;
            registration->base_ = reinterpret_cast<std::uintptr_t>(attributes.address);
        }
        void *packed = nullptr;
        std::size_t packed_size = 0;
        status = ucp_rkey_pack(context_, registration->memh_, &packed, &packed_size);
        if (status != UCS_OK) return status_from_ucs(status);
        auto *bytes = static_cast<const std::uint8_t *>(packed);
        registration->rkey_.assign(bytes, bytes + packed_size);
        ucp_rkey_buffer_release(packed);
    }
    *out = std::move(registration);
    return Status::ok;
}

Status UcxWorker::wait(ucs_status_ptr_t request) {
    if (request == nullptr) return Status::ok;
    if (UCS_PTR_IS_ERR(request)) return status_from_ucs(UCS_PTR_STATUS(request));
    Backoff backoff;
    ucs_status_t status;
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS)
        if (progress() == 0) backoff.pause();
    ucp_request_free(request);
    return status_from_ucs(status);
}

}  // namespace nbrma::transport::ucx
