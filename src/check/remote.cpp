// The race checker's UCX reach (remote.hpp).
#include "check/remote.hpp"

#include "common/yield.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace nbrma::check::remote {

namespace {

// One 32-bit compare-and-swap: *previous (in: the value to store) gets the word's value.
Status compare_swap(transport::ucx::UcxWorker &worker, const Remote &region, std::uint32_t expected,
                    std::uint32_t *previous) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype = ucp_dt_make_contig(4);
    param.reply_buffer = previous;
    return worker.wait(ucp_atomic_op_nbx(region.ep, UCP_ATOMIC_OP_CSWAP, &expected, 1,
                                         region.address, region.rkey, &param));
}

Status flush(transport::ucx::UcxWorker &worker, const Remote &region) {
    ucp_request_param_t param{};
    return worker.wait(ucp_ep_flush_nbx(region.ep, &param));
}

}  // namespace

Status get(transport::ucx::UcxWorker &worker, const Remote &region, std::uint64_t offset, void *to,
           std::size_t bytes) {
    if (bytes == 0) return Status::ok;
    ucp_request_param_t param{};
    return worker.wait(
        ucp_get_nbx(region.ep, to, bytes, region.address + offset, region.rkey, &param));
}

Status get_start(const Remote &region, std::uint64_t offset, void *to, std::size_t bytes,
                 void **request) {
    ucp_request_param_t param{};
    ucs_status_ptr_t started =
        ucp_get_nbx(region.ep, to, bytes, region.address + offset, region.rkey, &param);
    *request = nullptr;
    if (UCS_PTR_IS_ERR(started)) return transport::ucx::status_from_ucs(UCS_PTR_STATUS(started));
    *request = started;
    return Status::ok;
}

Status test(void *request) {
    const ucs_status_t status = ucp_request_check_status(request);
    if (status == UCS_INPROGRESS) return Status::in_progress;
    ucp_request_free(request);
    return transport::ucx::status_from_ucs(status);
}

Status put(transport::ucx::UcxWorker &worker, const Remote &region, std::uint64_t offset,
           const void *from, std::size_t bytes) {
    if (bytes == 0) return Status::ok;
    ucp_request_param_t param{};
    Status status = worker.wait(
        ucp_put_nbx(region.ep, from, bytes, region.address + offset, region.rkey, &param));
    return is_error(status) ? status : flush(worker, region);
}

Status lock(transport::ucx::UcxWorker &worker, const Remote &region) {
    Backoff backoff;
    for (;;) {
        std::uint32_t previous = 1;
        const Status status = compare_swap(worker, region, 0, &previous);
        if (is_error(status) || previous == 0) return status;
        // Held: the holder (maybe this process's other window, or a peer waiting for our
        // service) needs our worker to move
        if (worker.progress() == 0) backoff.pause();
    }
}

Status unlock(transport::ucx::UcxWorker &worker, const Remote &region) {
    std::uint32_t previous = 0;
    return compare_swap(worker, region, 1, &previous);
}

}  // namespace nbrma::check::remote
