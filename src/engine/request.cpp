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

Request *Request::create() {
    Request *request = spares().take();
    if (!request) return new Request();
    *request = Request();
    return request;
}

void Request::finish(Status status) {
    if (complete_) return;
    complete_ = true;
    status_ = status;
    if (hook_) hook_(this);
    release();
}

void Request::release() {
    if (--references_ == 0) spares().give(this);
}

}  // namespace nbrma::engine
