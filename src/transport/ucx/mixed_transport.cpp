#include "transport/ucx/mixed_transport.hpp"

#include "common/yield.hpp"

namespace nbrma::transport::ucx {

namespace {
class Flushed final : public Completion {
  public:
    void on_complete(Status status) override {
        done = true;
        result = status;
    }
    bool done = false;
    Status result = Status::ok;
};
}  // namespace

MixedTransport::MixedTransport(std::unique_ptr<shm::ShmTransport> shm,
                               std::unique_ptr<UcxTransport> ucx, std::vector<bool> local)
    : shm_(std::move(shm)),
      ucx_(std::move(ucx)),
      local_(std::move(local)),
      fenced_(local_.size(), false) {}

bool MixedTransport::over_shm(int peer, Status *status) {
    *status = Status::ok;
    if (peer < 0 || peer >= size() || !local_[peer]) return false;
    if (fenced_[peer]) {
        fenced_[peer] = false;
        Flushed flushed;
        Status posted = ucx_->flush(peer, &flushed);
        if (posted == Status::in_progress) {
            Backoff backoff;
            // poll() may run other completions too: that is what it is for.
            while (!flushed.done)
                if (ucx_->poll() == 0 && !flushed.done) backoff.pause();
            posted = flushed.result;
        }
        *status = posted;
    }
    return true;
}

Status MixedTransport::put(int peer, const void *source, std::size_t length, RemoteAddress target,
                           Completion *completion) {
    Status status;
    if (!over_shm(peer, &status)) return ucx_->put(peer, source, length, target, completion);
    if (is_error(status)) return status;
    return shm_->put(peer, source, length, target, completion);
}

Status MixedTransport::get(int peer, void *destination, std::size_t length, RemoteAddress source,
                           Completion *completion) {
    Status status;
    if (!over_shm(peer, &status)) return ucx_->get(peer, destination, length, source, completion);
    if (is_error(status)) return status;
    return shm_->get(peer, destination, length, source, completion);
}

Status MixedTransport::fence(int peer) {
    if (peer >= 0 && peer < size() && local_[peer]) {
        fenced_[peer] = true;
        (void)shm_->fence(peer);
    }
    return ucx_->fence(peer);
}

}  // namespace nbrma::transport::ucx
