// n ranks' windows of one process over real ShmTransports that map each other's control
// and window memory, as the ranks of a node do (test_lock_at_once.cpp, test_threads.cpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "common/threads.hpp"
#include "engine/window.hpp"
#include "layout/control_region.hpp"
#include "progress/progress.hpp"
#include "transport/shm/shm_transport.hpp"

namespace nbrma::engine {

struct ShmRanks {
    // `threaded`: under MPI_THREAD_MULTIPLE (threads enabled, the windows made under the
    // progress lock and registered for sweeps, so that queued epochs move without the
    // test progressing them).
    ShmRanks(int n, std::size_t window_bytes, bool threaded)
        : layout(n), control(n), memory(n), threaded_(threaded) {
        if (threaded) threads::enable();
        std::vector<transport::shm::ShmPeer> peers(n);
        for (int r = 0; r < n; ++r) {
            control[r].assign(layout.size(), 0);
            memory[r].assign(window_bytes, 0);
            peers[r].control = control[r].data();
            peers[r].window = memory[r].data();
            peers[r].window_size = window_bytes;
        }
        WindowConfig config;
        config.sizes.assign(n, window_bytes);
        config.disp_units.assign(n, 1);
        threads::Guard guard;
        for (int r = 0; r < n; ++r) {
            transports.push_back(
                std::make_unique<transport::shm::ShmTransport>(r, layout.size(), peers));
            windows.push_back(std::make_unique<Window>(*transports[r], layout, config));
            if (threaded) progress_register(windows.back().get());
        }
    }
    ~ShmRanks() {
        if (!threaded_) return;
        threads::Guard guard;
        for (auto &window : windows) progress_unregister(window.get());
    }
    ShmRanks(const ShmRanks &) = delete;
    ShmRanks &operator=(const ShmRanks &) = delete;

    // The 8 bytes at `offset` of `rank`'s window memory.
    std::int64_t at(int rank, std::size_t offset) const {
        std::int64_t value;
        std::memcpy(&value, memory[rank].data() + offset, sizeof value);
        return value;
    }

    layout::ControlLayout layout;  // (first: the others are made from it)
    std::vector<std::vector<std::uint8_t>> control, memory;
    std::vector<std::unique_ptr<transport::shm::ShmTransport>> transports;
    std::vector<std::unique_ptr<Window>> windows;

  private:
    bool threaded_;
};

}  // namespace nbrma::engine
