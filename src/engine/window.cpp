#include "engine/window.hpp"

#include <mpi.h>

#include "common/log.hpp"

namespace nbrma::engine {

using sync::LockMode;
using transport::Region;
using transport::RemoteAddress;

Window::Window(transport::Transport &transport, const sync::ControlLayout &layout,
               WindowConfig config)
    : transport_(transport),
      layout_(layout),
      config_(std::move(config)),
      open_locks_(transport.size(), nullptr) {}

Window::~Window() = default;

bool Window::has_open_epoch() const {
    if (open_lock_all_) return true;
    for (Epoch *epoch : open_locks_)
        if (epoch) return true;
    return false;
}

Epoch *Window::covering_epoch(int target) const {
    if (open_lock_all_) return open_lock_all_;
    return open_locks_[target];
}

// ---------------------------------------------------------------- passive target

Status Window::lock(int lock_type, int target, int assert) {
    if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED)
        return Status::err_lock_type;
    if (target < 0 || target >= size()) return Status::err_rank;
    if (assert & ~MPI_MODE_NOCHECK) return Status::err_assert;
    if (config_.no_locks) return Status::err_sync;
    if (open_lock_all_ || open_locks_[target]) return Status::err_sync;  // already locked
    LockMode mode = lock_type == MPI_LOCK_EXCLUSIVE ? LockMode::exclusive : LockMode::shared;
    epochs_.push_back(std::make_unique<Epoch>(next_epoch_id_++, EpochKind::lock, size(), target,
                                              mode, (assert & MPI_MODE_NOCHECK) != 0));
    open_locks_[target] = epochs_.back().get();
    progress();  // acquisition starts now, not lazily at unlock
    return Status::ok;
}

Status Window::unlock(int target, Request **request) {
    if (target < 0 || target >= size()) return Status::err_rank;
    Epoch *epoch = open_locks_[target];
    if (!epoch) return Status::err_sync;
    open_locks_[target] = nullptr;
    *request = Request::create();
    epoch->close(*request);
    progress();
    return Status::ok;
}

Status Window::lock_all(int assert) {
    if (assert & ~MPI_MODE_NOCHECK) return Status::err_assert;
    if (config_.no_locks) return Status::err_sync;
    if (has_open_epoch()) return Status::err_sync;
    epochs_.push_back(std::make_unique<Epoch>(next_epoch_id_++, EpochKind::lock_all, size(), -1,
                                              LockMode::shared,
                                              (assert & MPI_MODE_NOCHECK) != 0));
    open_lock_all_ = epochs_.back().get();
    progress();
    return Status::ok;
}

Status Window::unlock_all(Request **request) {
    if (!open_lock_all_) return Status::err_sync;
    Epoch *epoch = open_lock_all_;
    open_lock_all_ = nullptr;
    *request = Request::create();
    epoch->close(*request);
    progress();
    return Status::ok;
}

Status Window::flush(int target, Request **request) {
    if (target != -1) {
        if (target < 0 || target >= size()) return Status::err_rank;
        if (!covering_epoch(target)) return Status::err_sync;
    } else if (!has_open_epoch()) {
        return Status::err_sync;
    }
    *request = Request::create();
    flushes_.push_back(Flush{target, next_age_ - 1, *request});
    progress();
    return Status::ok;
}

// ---------------------------------------------------------------- communication

Status Window::check_range(const RmaCall &call, std::uint64_t *byte_offset) {
    const TypeLayout *target;
    if (is_error(type_layout_get(call.target_type, &target))) return Status::err_type;
    if (call.displacement < 0 && config_.flavor != Flavor::dynamic) return Status::err_range;
    const std::int64_t base =
        config_.flavor == Flavor::dynamic
            ? static_cast<std::int64_t>(call.displacement)
            : static_cast<std::int64_t>(call.displacement) * config_.disp_units[call.target];
    *byte_offset = static_cast<std::uint64_t>(base);
    if (call.target_count == 0 || target->size == 0) return Status::ok;
    const std::int64_t low = base + target->true_lb;
    const std::int64_t high = base + target->true_lb +
                              static_cast<std::int64_t>(call.target_count - 1) * target->extent +
                              target->true_extent;
    if (config_.flavor != Flavor::dynamic)
        return low >= 0 && static_cast<std::uint64_t>(high) <= config_.sizes[call.target]
                   ? Status::ok
                   : Status::err_range;
    // Dynamic: the range must lie in one region the target has attached.
    std::uint64_t table[1 + 2 * sync::ControlLayout::attach_capacity];
    const std::size_t bytes = sizeof table[0] * (1 + 2 * sync::ControlLayout::attach_capacity);
    int pending = 0;
    struct Counter final : transport::Completion {
        int *count;
        void on_complete(Status) override { --*count; }
    } done;
    done.count = &pending;
    std::uint64_t count = 0;
    Status status = transport_.get(call.target, &count, 8,
                                   RemoteAddress{Region::control, sync::ControlLayout::attach_count},
                                   &done);
    if (status == Status::in_progress) ++pending;
    status = transport_.get(call.target, &table[1], bytes - 8,
                            RemoteAddress{Region::control, sync::ControlLayout::attach_table},
                            &done);
    if (status == Status::in_progress) ++pending;
    while (pending > 0) transport_.poll();
    for (std::uint64_t i = 0; i < count && i < sync::ControlLayout::attach_capacity; ++i) {
        std::uint64_t region_base = table[1 + 2 * i], region_size = table[2 + 2 * i];
        if (static_cast<std::uint64_t>(low) >= region_base &&
            static_cast<std::uint64_t>(high) <= region_base + region_size)
            return Status::ok;
    }
    return Status::err_range;
}

Status Window::rma(const RmaCall &call, Request **request) {
    if (call.target < 0 || call.target >= size()) return Status::err_rank;
    Epoch *epoch = covering_epoch(call.target);
    if (!epoch) return Status::err_sync;
    Status status = Operation::check(call);
    if (is_error(status)) return status;
    std::uint64_t byte_offset;
    status = check_range(call, &byte_offset);
    if (is_error(status)) return status;
    if (request) *request = Request::create();
    auto operation =
        std::make_unique<Operation>(call, next_age_++, request ? *request : nullptr);
    TargetState &state = epoch->at(call.target);
    if (epoch->state() == EngineState::active && state.lock == TargetLock::none)
        start_target(*epoch, call.target, state);
    if (epoch->state() == EngineState::active && state.lock == TargetLock::held &&
        state.pending.empty()) {
        TargetView view{&transport_, byte_offset, config_.hardware_atomics};
        status = operation->execute(view);
        if (is_error(status)) epoch->fail(status);
        if (operation->request()) operation->request()->finish(status);
        return Status::ok;
    }
    operation->retain_types();  // recorded: replayed when the target is ready
    state.pending.push_back(std::move(operation));
    return Status::ok;
}

// ---------------------------------------------------------------- dynamic windows

Status Window::attach(const void *base, std::uint64_t size) {
    auto *control = static_cast<std::uint8_t *>(transport_.local_control());
    auto *count = reinterpret_cast<std::uint64_t *>(control + sync::ControlLayout::attach_count);
    auto *table = reinterpret_cast<std::uint64_t *>(control + sync::ControlLayout::attach_table);
    const std::uint64_t address = reinterpret_cast<std::uintptr_t>(base);
    for (std::uint64_t i = 0; i < *count; ++i) {
        std::uint64_t region_base = table[2 * i], region_size = table[2 * i + 1];
        if (address < region_base + region_size && region_base < address + size)
            return Status::err_range;  // overlaps an attached region
    }
    if (*count >= sync::ControlLayout::attach_capacity) return Status::err_no_memory;
    table[2 * *count] = address;
    table[2 * *count + 1] = size;
    __atomic_store_n(count, *count + 1, __ATOMIC_RELEASE);
    return Status::ok;
}

Status Window::detach(const void *base) {
    auto *control = static_cast<std::uint8_t *>(transport_.local_control());
    auto *count = reinterpret_cast<std::uint64_t *>(control + sync::ControlLayout::attach_count);
    auto *table = reinterpret_cast<std::uint64_t *>(control + sync::ControlLayout::attach_table);
    const std::uint64_t address = reinterpret_cast<std::uintptr_t>(base);
    for (std::uint64_t i = 0; i < *count; ++i) {
        if (table[2 * i] != address) continue;
        const std::uint64_t last = *count - 1;
        table[2 * i] = table[2 * last];
        table[2 * i + 1] = table[2 * last + 1];
        __atomic_store_n(count, last, __ATOMIC_RELEASE);
        return Status::ok;
    }
    return Status::err_arg;
}

// ---------------------------------------------------------------- progress

// The activation predicate (SC14 §VI-A). Called in queue order, so every earlier
// epoch is already active or completed (rule 4: no skipping).
bool Window::may_activate(std::size_t index) const {
    const Epoch &candidate = *epochs_[index];
    for (std::size_t i = 0; i < index; ++i) {
        const Epoch &earlier = *epochs_[i];
        if (earlier.state() == EngineState::completed) continue;
        // Default serial activation: E_k+1 after E_k completes (SC14 §VI-B) ...
        // ... except that MPI lets an application hold locks on several targets at
        // once (lock(0); lock(1); unlock(1); unlock(0)). A later lock epoch may join
        // an earlier one that is still open, granted, and toward another target.
        // Without this, serial activation would deadlock such programs.
        const bool concurrent_lock =
            candidate.kind() == EpochKind::lock && earlier.kind() == EpochKind::lock &&
            earlier.open() && earlier.target() != candidate.target() &&
            earlier.find(earlier.target()) &&
            earlier.find(earlier.target())->lock == TargetLock::held;
        if (!concurrent_lock) return false;
    }
    return true;
}

void Window::activate(Epoch &epoch) {
    epoch.activate();
    log(2, "epoch %llu (%s) active", static_cast<unsigned long long>(epoch.id()),
        epoch_kind_name(epoch.kind()));
    if (epoch.kind() == EpochKind::lock) {
        start_target(epoch, epoch.target(), epoch.at(epoch.target()));
        return;
    }
    // lock_all takes its shared locks on demand, per target, at the first call.
    for (int rank = 0; rank < size(); ++rank) {
        TargetState *state = epoch.find(rank);
        if (state && state->lock == TargetLock::none) start_target(epoch, rank, *state);
    }
}

void Window::start_target(Epoch &epoch, int rank, TargetState &state) {
    if (epoch.nocheck()) {
        state.lock = TargetLock::held;
        return;
    }
    state.operation.acquire(transport_, layout_, rank, epoch.mode());
    state.lock = TargetLock::acquiring;
}

bool Window::run_pending(Epoch &epoch, int rank, TargetState &state) {
    bool moved = false;
    while (!state.pending.empty()) {
        std::unique_ptr<Operation> operation = std::move(state.pending.front());
        state.pending.pop_front();
        std::uint64_t byte_offset = 0;
        Status status = check_range(operation->call(), &byte_offset);
        if (!is_error(status)) {
            TargetView view{&transport_, byte_offset, config_.hardware_atomics};
            status = operation->execute(view);
        }
        if (is_error(status)) epoch.fail(status);
        if (operation->request()) operation->request()->finish(status);
        moved = true;
    }
    return moved;
}

bool Window::advance(Epoch &epoch) {
    bool moved = false;
    bool busy = false;  // some target still acquiring, holding work, or releasing
    for (int rank = 0; rank < size(); ++rank) {
        TargetState *state = epoch.find(rank);
        if (!state) continue;
        if (state->lock == TargetLock::acquiring) {
            Status status = state->operation.advance();
            if (status == Status::ok) {
                state->lock = TargetLock::held;
                ++counters().lock_grants;
                log(2, "lock on %d granted (epoch %llu)", rank,
                    static_cast<unsigned long long>(epoch.id()));
                moved = true;
            } else if (is_error(status)) {
                epoch.fail(status);
                state->lock = TargetLock::released;
                state->pending.clear();
                moved = true;
            }
        }
        if (state->lock == TargetLock::held) moved |= run_pending(epoch, rank, *state);
        if (epoch.open()) {
            busy = true;
            continue;
        }
        if (state->lock == TargetLock::held) {
            if (epoch.nocheck()) {
                state->lock = TargetLock::released;
            } else {
                state->operation.release(transport_, layout_, rank, epoch.mode());
                state->lock = TargetLock::releasing;
            }
            moved = true;
        }
        if (state->lock == TargetLock::releasing) {
            Status status = state->operation.advance();
            if (status == Status::ok || is_error(status)) {
                if (is_error(status)) epoch.fail(status);
                state->lock = TargetLock::released;
                moved = true;
            }
        }
        if (state->lock != TargetLock::released) busy = true;
    }
    if (!busy && !epoch.open()) {
        epoch.complete();
        moved = true;
    }
    return moved;
}

bool Window::flush_done(const Flush &flush) const {
    for (const auto &epoch : epochs_) {
        if (epoch->state() == EngineState::completed) continue;
        for (int rank = 0; rank < size(); ++rank) {
            if (flush.target != -1 && rank != flush.target) continue;
            const TargetState *state = epoch->find(rank);
            if (state && !state->pending.empty() && state->pending.front()->age() <= flush.age)
                return false;
        }
    }
    return true;
}

bool Window::progress() {
    bool moved = transport_.poll() > 0;
    for (bool again = true; again;) {
        again = false;
        for (std::size_t i = 0; i < epochs_.size(); ++i) {
            Epoch &epoch = *epochs_[i];
            if (epoch.state() == EngineState::deferred) {
                if (!may_activate(i)) break;  // rule 4: no skipping
                activate(epoch);
                again = true;
            }
            if (epoch.state() == EngineState::active && advance(epoch)) again = true;
        }
        // Completed epochs leave the queue (anywhere: concurrent lock epochs may
        // complete out of order), which may let deferred ones activate.
        for (auto it = epochs_.begin(); it != epochs_.end();) {
            if ((*it)->state() == EngineState::completed) {
                it = epochs_.erase(it);
                again = true;
            } else {
                ++it;
            }
        }
        moved |= again;
    }
    for (auto it = flushes_.begin(); it != flushes_.end();) {
        if (flush_done(*it)) {
            it->request->finish(Status::ok);
            it = flushes_.erase(it);
            moved = true;
        } else {
            ++it;
        }
    }
    return moved;
}

}  // namespace nbrma::engine
