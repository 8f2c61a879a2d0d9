// Memory per rank per window as jobs grow: the control region (its layout,
// layout/control_region.hpp) plus what the engine allocates on the heap for the window
// object and for an epoch of each kind, measured with mallinfo2 for p = 2^10 ... 2^20
// over a transport that only says how many ranks there are (nothing is sent: the
// window is constructed and epochs are made, which is where per-peer state lives).
// The transports' own per-peer state (shm mappings, UCX endpoints and keys) is not
// counted here.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "engine/epoch.hpp"
#include "engine/window.hpp"
#include "layout/control_region.hpp"

namespace nbrma::engine {
namespace {

// p ranks, a control region, nothing else: every transfer is refused.
class CountOnly final : public transport::Transport {
  public:
    CountOnly(int size, std::size_t control_bytes) : size_(size), control_(control_bytes / 8 + 1) {}
    int size() const override { return size_; }
    int rank() const override { return 0; }
    void *local_control() override { return control_.data(); }
    Status put(int, const void *, std::size_t, transport::RemoteAddress,
               transport::Completion *) override {
        return Status::err_unsupported;
    }
    Status get(int, void *, std::size_t, transport::RemoteAddress, transport::Completion *) override {
        return Status::err_unsupported;
    }
    Status atomic(int, transport::AtomicOp, transport::RemoteAddress, std::uint64_t, std::uint64_t,
                  std::uint64_t *, transport::Completion *) override {
        return Status::err_unsupported;
    }
    bool supports_atomics(int, transport::Region) const override { return true; }
    Status fence(int) override { return Status::ok; }
    Status flush(int, transport::Completion *) override { return Status::ok; }
    int poll() override { return 0; }

  private:
    int size_;
    std::vector<std::uint64_t> control_;
};

// In use on the heap: small chunks plus the large ones malloc maps by themselves.
std::size_t heap_in_use() {
    const struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

}  // namespace

TEST(WindowMemory, BytesPerRankPerWindow) {
    std::printf("[ memory ] bytes per rank per window, by peer (p ranks): control region, the "
                "window object's heap, and one more epoch (lock / fence with a call)\n");
    std::printf("[ memory ] %9s %12s %12s %12s %12s %12s\n", "ranks", "control/p", "window/p",
                "lock epoch/p", "fence epoch/p", "total/p");
    for (int log = 10; log <= 20; log += 2) {
        const int p = 1 << log;
        const layout::ControlLayout layout(p);
        CountOnly transport(p, layout.size());
        const std::size_t before = heap_in_use();
        WindowConfig config;  // every rank's size and disp_unit: the window keeps them
        config.sizes.assign(p, 4096);
        config.disp_units.assign(p, 1);
        auto window = std::make_unique<Window>(transport, layout, std::move(config));
        const std::size_t with_window = heap_in_use();
        auto lock = std::make_unique<Epoch>(1, EpochKind::lock, p, 7, sync::LockMode::shared, 0);
        const std::size_t with_lock = heap_in_use();
        auto fence = std::make_unique<Epoch>(2, EpochKind::fence, p, -1, sync::LockMode::shared, 0);
        const std::size_t fence_untouched = heap_in_use();
        fence->at(p / 2);  // a call toward one target: the table by rank
        const std::size_t with_fence = heap_in_use();
        const double control = double(layout.size()) / p;
        const double heap = double(with_window - before) / p;
        const double lock_bytes = double(with_lock - with_window) / p;
        const double fence_bytes = double(with_fence - with_lock) / p;
        const double total = control + heap + lock_bytes + fence_bytes;
        std::printf("[ memory ] %9d %12.1f %12.1f %12.1f %12.1f %12.1f\n", p, control, heap,
                    lock_bytes, fence_bytes, total);
        EXPECT_LE(control, 66.5) << p;  // 64 a peer + 2.3 KiB (1 KiB of it accumulate stripes)
        // The window's per-peer vectors: sizes and disp_units of every rank (12 bytes),
        // remote-completion state (48: a flush completion of its own a peer; 24 with a
        // pool of completions cost 11 ns on every put + flush over shared memory), a bit
        // for lock_all targets taken at once (concurrent calls);
        // PSCW and notification state come with their first use. An epoch's table of
        // target states, 8 bytes a peer, comes with its first call (and never for a
        // lock epoch).
        EXPECT_LE(heap, 64) << p;
        EXPECT_LE(lock_bytes, 1) << p;  // a lock epoch deals with one target
        EXPECT_LE(double(fence_untouched - with_lock) / p, 1) << p;  // nothing touched yet
        EXPECT_LE(fence_bytes, 9) << p;
    }
}

}  // namespace nbrma::engine
