// Shared fixture of the engine unit tests over the sim transport: the DataNow
// transport decorator (window-region data moves at once, control-region traffic stays
// under the test's control), SimRanks (n windows over one SimWorld wired through it,
// with the matching counters readable), and small helpers for calls and requests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "engine/window.hpp"
#include "layout/control_region.hpp"
#include "rma_calls.hpp"
#include "transport/sim/sim_transport.hpp"

namespace nbrma {
// gtest prints statuses by name.
inline void PrintTo(Status status, std::ostream *os) {
    *os << status_string(status) << " (" << static_cast<int>(status) << ")";
}
}  // namespace nbrma

namespace nbrma::engine::simtest {

// A transport that hands every required call, and peek_control, to `inner`: test
// transports derive from it and override only what they observe or change.
class Forwarding : public transport::Transport {
  public:
    explicit Forwarding(transport::Transport &inner) : inner_(inner) {}
    int size() const override { return inner_.size(); }
    int rank() const override { return inner_.rank(); }
    void *local_control() override { return inner_.local_control(); }
    Status put(int peer, const void *source, std::size_t length, transport::RemoteAddress target,
               transport::Completion *completion) override {
        return inner_.put(peer, source, length, target, completion);
    }
    Status get(int peer, void *destination, std::size_t length, transport::RemoteAddress source,
               transport::Completion *completion) override {
        return inner_.get(peer, destination, length, source, completion);
    }
    Status atomic(int peer, transport::AtomicOp op, transport::RemoteAddress target,
                  std::uint64_t operand, std::uint64_t compare, std::uint64_t *result,
                  transport::Completion *completion) override {
        return inner_.atomic(peer, op, target, operand, compare, result, completion);
    }
    bool supports_atomics(int peer, transport::Region region) const override {
        return inner_.supports_atomics(peer, region);
    }
    bool peek_control(int peer, std::uint64_t offset, std::uint64_t *value) override {
        return inner_.peek_control(peer, offset, value);
    }
    Status fence(int peer) override { return inner_.fence(peer); }
    Status flush(int peer, transport::Completion *completion) override {
        return inner_.flush(peer, completion);
    }
    int poll() override { return inner_.poll(); }

  protected:
    transport::Transport &inner_;
};

// Delivers window-region transfers at once (the engine waits for them inline). A
// transfer the sim holds behind an earlier, fenced operation toward the same peer
// (a notice of ours still in flight) gets that operation delivered first, as an
// ordered network would; every other control-region operation stays in flight. With
// hold_puts (and the sim's early local completion) window puts stay in flight too:
// complete at the origin, not yet at the target.
class DataNow final : public transport::Transport {
  public:
    DataNow(transport::sim::SimWorld &world, int rank)
        : world_(world), inner_(world.endpoint(rank)) {}
    int size() const override { return inner_.size(); }
    int rank() const override { return inner_.rank(); }
    void *local_control() override { return inner_.local_control(); }
    Status put(int peer, const void *source, std::size_t length, transport::RemoteAddress target,
               transport::Completion *completion) override {
        return now(target, inner_.put(peer, source, length, target, completion));
    }
    Status get(int peer, void *destination, std::size_t length, transport::RemoteAddress source,
               transport::Completion *completion) override {
        return now(source, inner_.get(peer, destination, length, source, completion));
    }
    Status atomic(int peer, transport::AtomicOp op, transport::RemoteAddress target,
                  std::uint64_t operand, std::uint64_t compare, std::uint64_t *result,
                  transport::Completion *completion) override {
        return now(target, inner_.atomic(peer, op, target, operand, compare, result, completion));
    }
    bool supports_atomics(int peer, transport::Region region) const override {
        return inner_.supports_atomics(peer, region);
    }
    bool peek_control(int peer, std::uint64_t offset, std::uint64_t *value) override {
        return inner_.peek_control(peer, offset, value);
    }
    Status fence(int peer) override { return inner_.fence(peer); }
    Status flush(int peer, transport::Completion *completion) override {
        return inner_.flush(peer, completion);
    }
    int poll() override { return inner_.poll(); }
    transport::Capabilities capabilities() const override { return inner_.capabilities(); }

    // How many earlier operations were delivered ahead of their turn to unblock a
    // window transfer.
    std::uint64_t forced() const { return forced_; }
    bool hold_puts = false;

  private:
    Status now(transport::RemoteAddress address, Status posted) {
        if (address.region == transport::Region::window) deliver_window_ops();
        return posted;
    }
    void deliver_window_ops() {
        using transport::sim::SimWorld;
        for (;;) {
            std::size_t i = 0;
            while (i < world_.in_flight() && !delivered_now(world_.op(i))) ++i;
            if (i == world_.in_flight()) return;
            if (world_.deliverable(i)) {
                world_.deliver(i);
                continue;
            }
            // The earliest operation of the same origin toward the same target is
            // never held back: deliver it and look again.
            const SimWorld::Op &op = world_.op(i);
            std::size_t j = 0;
            while (world_.op(j).origin != op.origin || world_.op(j).target != op.target) ++j;
            world_.deliver(j);
            ++forced_;
        }
    }
    bool delivered_now(const transport::sim::SimWorld::Op &op) const {
        return op.region == transport::Region::window &&
               !(hold_puts && op.kind == transport::sim::SimWorld::OpKind::put);
    }
    transport::sim::SimWorld &world_;
    transport::Transport &inner_;
    std::uint64_t forced_ = 0;
};

// n ranks, each with an allocate-flavor window of `window_bytes` bytes (disp_unit 1)
// over a DataNow transport on one SimWorld; `notify_capacity` notification counters in
// every control region (none unless a test of notified RMA asks).
struct SimRanks {
    static constexpr std::size_t default_window_bytes = 4096;
    explicit SimRanks(int n, std::size_t window_bytes = default_window_bytes,
                      std::uint32_t notify_capacity = 0)
        : layout(n, notify_capacity), world(n, layout.size(), window_bytes) {
        WindowConfig config;
        config.flavor = Flavor::allocate;
        config.sizes.assign(n, window_bytes);
        config.disp_units.assign(n, 1);
        for (int r = 0; r < n; ++r) {
            transports.push_back(std::make_unique<DataNow>(world, r));
            windows.push_back(std::make_unique<Window>(*transports[r], layout, config));
        }
    }
    // Window puts complete at the origin when posted and reach their target only when
    // delivered (a network's local and remote completion; see DataNow).
    void hold_puts() {
        world.set_early_local_completion(true);
        for (auto &transport : transports) transport->hold_puts = true;
    }
    bool progress_all() {
        bool moved = false;
        for (auto &window : windows) moved |= window->progress();
        return moved;
    }
    // Progress everybody and deliver everything (FIFO) until nothing moves. `check`
    // runs after every progress call and every delivery.
    void settle(const std::function<void()> &check = {}) {
        for (int round = 0; round < 100000; ++round) {
            bool moved = false;
            for (auto &window : windows) {
                moved |= window->progress();
                if (check) check();
            }
            while (world.in_flight() > 0) {
                std::size_t i = 0;
                while (!world.deliverable(i)) ++i;
                world.deliver(i);
                moved = true;
                if (check) check();
            }
            if (!moved) return;
        }
        ADD_FAILURE() << "settle: still moving after 100000 rounds";
    }
    Window &w(int rank) { return *windows[rank]; }
    // The matching counters in `rank`'s control region written by `peer`.
    std::uint64_t grants(int rank, int peer) const {
        return world.load64(rank, transport::Region::control, layout.grant_count(peer));
    }
    std::uint64_t dones(int rank, int peer) const {
        return world.load64(rank, transport::Region::control, layout.done_count(peer));
    }
    // The fence notices `rank` has had from `peer`: the slot of the barrier round in
    // which peer notifies rank (peer = rank - j k^round mod n), 0 if it never does.
    std::uint64_t fences(int rank, int peer) const {
        const int n = static_cast<int>(windows.size()), radix = layout.fence_radix();
        const std::int64_t distance = ((rank - peer) % n + n) % n;
        std::int64_t reach = 1;
        for (int round = 0; round < layout.fence_rounds(); ++round, reach *= radix)
            for (int j = 1; j < radix; ++j)
                if (j * reach == distance)
                    return world.load64(
                        rank, transport::Region::control,
                        layout::ControlLayout::fence_slot(layout.fence_slot_of(round, j)));
        return 0;
    }
    // The int64 at `offset` of `rank`'s window memory.
    std::int64_t at(int rank, std::size_t offset) const {
        std::int64_t value;
        std::memcpy(&value, world.memory(rank, transport::Region::window) + offset, sizeof value);
        return value;
    }
    layout::ControlLayout layout;
    transport::sim::SimWorld world;
    std::vector<std::unique_ptr<DataNow>> transports;
    std::vector<std::unique_ptr<Window>> windows;
};

// Our references of the requests a test obtained; dropped at the end.
struct Requests {
    std::vector<Request *> all;
    Request *operator()(Request *request) {
        if (request) all.push_back(request);
        return request;
    }
    bool all_complete_ok() const {
        for (Request *request : all)
            if (!request->complete() || request->status() != Status::ok) return false;
        return true;
    }
    ~Requests() {
        for (Request *request : all) request->release();
    }
};

// Records the order in which watched requests complete ("a b c").
struct CompletionOrder {
    std::vector<std::pair<std::string, Request *>> watched;
    std::vector<std::string> order;
    void watch(const std::string &name, Request *request) { watched.emplace_back(name, request); }
    void poll() {
        for (auto &[name, request] : watched) {
            if (!request || !request->complete()) continue;
            if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
        }
    }
    std::string str() const {
        std::string s;
        for (const std::string &name : order) s += (s.empty() ? "" : " ") + name;
        return s;
    }
};

// Closing calls that must succeed; each returns the call's request.
inline Request *icomplete(Window &window) {
    Request *request = nullptr;
    EXPECT_EQ(window.complete(&request), Status::ok);
    return request;
}
inline Request *iwait(Window &window) {
    Request *request = nullptr;
    EXPECT_EQ(window.wait(&request), Status::ok);
    return request;
}
inline Request *ifence(Window &window, int assert) {
    Request *request = nullptr;
    EXPECT_EQ(window.fence(assert, &request), Status::ok);
    return request;
}
inline Request *iflush(Window &window, int target) {  // target -1: flush_all
    Request *request = nullptr;
    EXPECT_EQ(window.flush(target, &request), Status::ok);
    return request;
}
inline Request *iunlock(Window &window, int target) {
    Request *request = nullptr;
    EXPECT_EQ(window.unlock(target, &request), Status::ok);
    return request;
}
inline Request *iunlock_all(Window &window) {
    Request *request = nullptr;
    EXPECT_EQ(window.unlock_all(&request), Status::ok);
    return request;
}

}  // namespace nbrma::engine::simtest
