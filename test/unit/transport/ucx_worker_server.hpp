// A UCX worker progressed on a thread of its own while it lives, as its process would,
// so that a test's other rank may block inside a call (the dynamic-window rkey lookup)
// whose completion needs the peer's worker to run. Shared by the UCX transport tests.
#ifndef NBRMA_TEST_UNIT_TRANSPORT_UCX_WORKER_SERVER_HPP
#define NBRMA_TEST_UNIT_TRANSPORT_UCX_WORKER_SERVER_HPP

#include <atomic>
#include <thread>

#include "transport/ucx/ucx_worker.hpp"

namespace nbrma::transport::ucx {

class WorkerServer {
  public:
    explicit WorkerServer(UcxWorker &worker)
        : thread_([this, &worker] {
              while (!stop_.load()) worker.progress();
          }) {}
    ~WorkerServer() {
        stop_ = true;
        thread_.join();
    }

  private:
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace nbrma::transport::ucx

#endif
