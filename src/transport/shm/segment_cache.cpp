#include "transport/shm/segment_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <deque>
#include <mutex>

namespace nbrma::transport::shm {

namespace {
std::mutex cache_mutex;
std::deque<CachedSegment> cache;  // oldest first
std::atomic<std::uint32_t> created{0};
}  // namespace

std::uint64_t new_segment_id() {
    const std::uint32_t serial = created.fetch_add(1, std::memory_order_relaxed) + 1;
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(getpid())) << 32 | serial;
}

CachedSegment segment_cache_take() {
    std::lock_guard<std::mutex> hold(cache_mutex);
    if (cache.empty()) return {};
    CachedSegment entry = std::move(cache.back());
    cache.pop_back();
    return entry;
}

void segment_cache_put(CachedSegment entry) {
    if (!entry) return;
    CachedSegment dropped;  // unmapped outside the mutex
    {
        std::lock_guard<std::mutex> hold(cache_mutex);
        cache.push_back(std::move(entry));
        if (cache.size() > segment_cache_limit) {
            dropped = std::move(cache.front());
            cache.pop_front();
        }
    }
}

std::size_t segment_cache_size() {
    std::lock_guard<std::mutex> hold(cache_mutex);
    return cache.size();
}

}  // namespace nbrma::transport::shm
