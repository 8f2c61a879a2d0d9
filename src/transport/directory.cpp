#include "transport/directory.hpp"

#include <algorithm>
#include <cstring>

#include "common/yield.hpp"

namespace nbrma::transport {

namespace {
constexpr std::size_t words(std::size_t bytes) { return (bytes + 7) / 8; }
constexpr std::uint64_t max_slots = std::uint64_t{1} << 26;  // 2 GiB of slots
}  // namespace

// ---------------------------------------------------------------- owner side

DirectoryWriter::DirectoryWriter(void *header, std::size_t header_bytes, std::size_t key_stride,
                                 Publish publish)
    : header_(static_cast<DirectoryHeader *>(header)),
      header_bytes_(header_bytes),
      key_stride_(key_stride),
      publish_(std::move(publish)) {}

std::uint8_t *DirectoryWriter::key_area(std::size_t slot) {
    return reinterpret_cast<std::uint8_t *>(array_.get()) + slots_ * sizeof(DirectorySlot) +
           slot * key_stride_;
}

void DirectoryWriter::begin_change() {
    __atomic_store_n(&header_->generation, header_->generation + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);  // odd before any change is visible
}

void DirectoryWriter::end_change() {
    __atomic_store_n(&header_->generation, header_->generation + 1, __ATOMIC_RELEASE);
}

Status DirectoryWriter::grow() {
    const std::size_t slots = slots_ == 0 ? first_slots : 2 * slots_;
    const std::size_t bytes = slots * (sizeof(DirectorySlot) + key_stride_);
    std::unique_ptr<std::uint64_t[]> array(new (std::nothrow) std::uint64_t[words(bytes)]());
    if (!array) return Status::err_no_memory;
    auto *fresh = reinterpret_cast<DirectorySlot *>(array.get());
    std::uint8_t *fresh_keys =
        reinterpret_cast<std::uint8_t *>(array.get()) + slots * sizeof *fresh;
    for (std::size_t slot = 0; slot < used_slots_; ++slot) {
        fresh[slot] = slot_array()[slot];
        std::memcpy(fresh_keys + slot * key_stride_, key_area(slot), key_stride_);
    }
    std::vector<std::uint8_t> key;
    if (publish_) {
        Status status = publish_(array.get(), bytes, &key);
        if (is_error(status)) return status;
    }
    if (key.size() > header_bytes_ - sizeof *header_) return Status::err_no_memory;
    begin_change();
    header_->address = reinterpret_cast<std::uintptr_t>(array.get());
    header_->slots = slots;
    header_->key_stride = key_stride_;
    header_->key_length = key.size();
    if (!key.empty()) std::memcpy(header_ + 1, key.data(), key.size());
    end_change();
    if (array_) retired_.push_back(std::move(array_));  // readers may still hold its address
    array_ = std::move(array);
    slots_ = slots;
    return Status::ok;
}

Status DirectoryWriter::admits(std::uint64_t base, std::uint64_t length) const {
    std::uint64_t end = 0;
    if (__builtin_add_overflow(base, length, &end)) return Status::err_arg;
    auto next = index_.lower_bound(base);
    if (next != index_.end() && (next->first == base || next->first < end))
        return Status::err_range;
    if (next != index_.begin()) {
        auto previous = std::prev(next);
        if (previous->first + previous->second.length > base) return Status::err_range;
    }
    return Status::ok;
}

Status DirectoryWriter::add(std::uint64_t base, std::uint64_t length, const std::uint8_t *key,
                            std::size_t key_length) {
    if (key_length > key_stride_) return Status::err_no_memory;
    if (Status status = admits(base, length); is_error(status)) return status;
    auto next = index_.lower_bound(base);
    if (length == 0) {  // nothing a peer can reach: not published
        index_.emplace_hint(next, base, Attached{0, npos});
        return Status::ok;
    }
    std::size_t slot = 0;
    if (!free_slots_.empty()) {
        slot = free_slots_.back();
    } else {
        if (used_slots_ == slots_) {
            Status status = grow();
            if (is_error(status)) return status;
        }
        slot = used_slots_;
    }
    index_.emplace_hint(next, base, Attached{length, slot});  // may throw: before any change
    if (!free_slots_.empty())
        free_slots_.pop_back();
    else
        ++used_slots_;
    begin_change();
    if (key_length > 0) std::memcpy(key_area(slot), key, key_length);
    slot_array()[slot] = DirectorySlot{base, length, header_->generation + 1, key_length};
    end_change();
    return Status::ok;
}

Status DirectoryWriter::remove(std::uint64_t base) {
    auto found = index_.find(base);
    if (found == index_.end()) return Status::err_arg;
    const std::size_t slot = found->second.slot;
    index_.erase(found);
    if (slot == npos) return Status::ok;
    begin_change();
    slot_array()[slot] = DirectorySlot{0, 0, header_->generation + 1, 0};
    end_change();
    free_slots_.push_back(slot);
    return Status::ok;
}

// ---------------------------------------------------------------- origin side

Status DirectoryCache::refresh(Source &source) {
    Backoff backoff;
    for (;;) {
        std::uint64_t before = 0;
        Status status = source.read_header(0, &before, sizeof before);
        if (is_error(status)) return status;
        if (before == header_.generation) return Status::ok;  // unchanged
        if (before % 2 == 1) {                                // the owner is changing it
            backoff.pause();
            continue;
        }
        DirectoryHeader header;
        status = source.read_header(0, &header, sizeof header);
        if (is_error(status)) return status;
        if (header.generation != before) continue;
        if (header.slots > max_slots) return Status::err_transport;  // not a directory
        scratch_.resize(header.slots);
        if (header.slots > 0)
            status = source.read_array(header, header.address, scratch_.data(),
                                       header.slots * sizeof(DirectorySlot));
        std::uint64_t after = 0;
        Status again = source.read_header(0, &after, sizeof after);
        if (is_error(again)) return again;
        if (after != before) continue;  // changed meanwhile: what we read may be torn
        if (is_error(status)) return status;
        regions_.clear();
        for (std::size_t slot = 0; slot < scratch_.size(); ++slot) {
            const DirectorySlot &s = scratch_[slot];
            if (s.length > 0)
                regions_.push_back(Region{s.base, s.length, s.generation, slot, s.key_length});
        }
        std::sort(regions_.begin(), regions_.end(),
                  [](const Region &a, const Region &b) { return a.base < b.base; });
        header_ = header;
        return Status::ok;
    }
}

Status DirectoryCache::cover(std::uint64_t low, std::uint64_t high, std::size_t *first,
                             std::size_t *count) const {
    *first = 0;
    *count = 0;
    if (low >= high) return low == high ? Status::ok : Status::err_range;
    // The last region starting at or below low.
    auto it =
        std::upper_bound(regions_.begin(), regions_.end(), low,
                         [](std::uint64_t address, const Region &r) { return address < r.base; });
    if (it == regions_.begin()) return Status::err_range;
    std::size_t index = static_cast<std::size_t>(it - regions_.begin()) - 1;
    *first = index;
    std::uint64_t reach = 0;
    if (__builtin_add_overflow(regions_[index].base, regions_[index].length, &reach))
        reach = ~std::uint64_t{0};
    if (reach <= low) return Status::err_range;
    while (reach < high) {  // continue into the region that starts where this one ends
        ++index;
        if (index == regions_.size() || regions_[index].base != reach) return Status::err_range;
        if (__builtin_add_overflow(reach, regions_[index].length, &reach))
            reach = ~std::uint64_t{0};
    }
    *count = index - *first + 1;
    return Status::ok;
}

}  // namespace nbrma::transport
