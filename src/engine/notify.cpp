#include "engine/notify.hpp"

#include <algorithm>

namespace nbrma::engine {

Status NotifyCounters::set_count(int n) {
    if (n < 0 || static_cast<std::uint64_t>(n) > capacity_) return Status::err_notification;
    const auto wanted = static_cast<std::uint32_t>(n);
    if (wanted < count_) {
        // Shrink: origins learn the new count from the published word; thresholds on the
        // counters that go away can never be met.
        __atomic_store_n(published_, std::uint64_t{wanted}, __ATOMIC_RELEASE);
        auto gone = [wanted](const Threshold &t) { return t.index >= wanted; };
        std::vector<Request *> failed;
        for (const Threshold &t : waiting_)
            if (gone(t)) failed.push_back(t.request);
        waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), gone), waiting_.end());
        for (Request *request : failed) request->finish(Status::err_notification);
    } else if (wanted > count_) {
        // Grow: counters once in use may hold old values (or a notification that arrived
        // after a shrink, from an origin that checked the index before it): clear them
        // before origins may use them.
        const std::uint32_t dirty_end = std::min(wanted, used_);
        for (std::uint32_t i = count_; i < dirty_end; ++i)
            __atomic_store_n(&words_[i], std::uint64_t{0}, __ATOMIC_RELAXED);
        __atomic_store_n(published_, std::uint64_t{wanted}, __ATOMIC_RELEASE);
    }
    count_ = wanted;
    used_ = std::max(used_, wanted);
    return Status::ok;
}

Status NotifyCounters::value(int index, std::uint64_t *out) const {
    if (index < 0 || static_cast<std::uint32_t>(index) >= count_) return Status::err_notification;
    *out = load(static_cast<std::uint32_t>(index));
    return Status::ok;
}

Status NotifyCounters::set_value(int index, std::uint64_t value) {
    if (index < 0 || static_cast<std::uint32_t>(index) >= count_) return Status::err_notification;
    __atomic_store_n(&words_[index], value, __ATOMIC_RELEASE);
    return Status::ok;
}

Status NotifyCounters::threshold(int index, std::uint64_t expected, Request **request) {
    if (index < 0 || static_cast<std::uint32_t>(index) >= count_) return Status::err_notification;
    *request = Request::create();
    const auto at = static_cast<std::uint32_t>(index);
    if (load(at) >= expected) {
        (*request)->finish(Status::ok);
    } else {
        waiting_.push_back(Threshold{at, expected, *request});
        if (hook_) hook_(hook_arg_);
    }
    return Status::ok;
}

bool NotifyCounters::cancel(Request *request) {
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
        if (it->request != request) continue;
        waiting_.erase(it);
        request->cancel();
        return true;
    }
    return false;
}

bool NotifyCounters::check() {
    bool moved = false;
    for (std::size_t i = 0; i < waiting_.size();) {
        Threshold &t = waiting_[i];
        if (load(t.index) < t.expected) {
            ++i;
            continue;
        }
        Request *request = t.request;
        t = waiting_.back();  // order among thresholds does not matter
        waiting_.pop_back();
        request->finish(Status::ok);
        moved = true;
    }
    return moved;
}

void NotifyCounters::fail_all(Status status) {
    std::vector<Threshold> failed;
    failed.swap(waiting_);
    for (const Threshold &t : failed) t.request->finish(status);
}

}  // namespace nbrma::engine
