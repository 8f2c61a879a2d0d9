#include "engine/request.hpp"

namespace nbrma::engine {

Request *Request::create() { return new Request(); }

void Request::finish(Status status) {
    if (complete_) return;
    complete_ = true;
    status_ = status;
    if (hook_) hook_(this);
    release();
}

void Request::release() {
    if (--references_ == 0) delete this;
}

}  // namespace nbrma::engine
