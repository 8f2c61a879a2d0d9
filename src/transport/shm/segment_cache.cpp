#include "transport/shm/segment_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <utility>

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

bool segment_offers_agree(const std::vector<SegmentOffer> &offers, std::int64_t control_bytes) {
    // per node: its ranks here, and the first one's offer
    std::unordered_map<std::uint64_t, std::pair<std::int64_t, std::uint64_t>> nodes;
    for (const SegmentOffer &offer : offers) {
        auto it = nodes.try_emplace(offer.node, 0, offer.id).first;
        ++it->second.first;
        if (offer.id == 0 || offer.id != it->second.second) return false;
    }
    for (const SegmentOffer &offer : offers) {
        const std::int64_t node_ranks = nodes[offer.node].first;
        if (offer.ranks != node_ranks || offer.bytes != control_bytes * node_ranks) return false;
    }
    return !offers.empty();
}

std::size_t segment_cache_size() {
    std::lock_guard<std::mutex> hold(cache_mutex);
    return cache.size();
}

}  // namespace nbrma::transport::shm
