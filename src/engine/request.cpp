#include "engine/request.hpp"

namespace nbrma::engine {

namespace {
// Every closing call and R-call makes a request: reuse them rather than pay a heap
// round trip per epoch. Never destroyed, so kept requests stay reachable at exit.
Spares<Request> &spares() {
    static auto *list = new Spares<Request>();
    return *list;
}
}  // namespace

void Request::reset() {
    complete_.store(false, std::memory_order_relaxed);
    status_ = Status::ok;
    cancelled_ = false;
    references_.store(2, std::memory_order_relaxed);
    hook_ = nullptr;
    user_ = nullptr;
}

Request *Request::create() {
    Request *request = spares().take();
    if (!request) return new Request();
    request->reset();
    return request;
}

void Request::finish(Status status) {
    if (complete()) return;
    status_ = status;
    if (hook_) hook_(this);
    complete_.store(true, std::memory_order_release);
    release();
}

void Request::release() {
    if (threads::release_reference(references_) == 0) spares().give(this);
}

}  // namespace nbrma::engine
