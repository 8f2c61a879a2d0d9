// The directory of a dynamic window's attached regions (MPI_Win_attach), shared by
// the shm and ucx transports. One writer per rank (the owner, in MPI_Win_attach and
// MPI_Win_detach), read one-sidedly by every origin.
//
// Published form: layout/directory.hpp.
//
// Owner side: an ordered index (base -> slot) checks overlap in O(log n); an attach
// takes a free slot (amortized O(1), O(n) copy when the array doubles); a detach frees
// its slot in O(log n).
//
// Origin side (DirectoryCache): a copy of a peer's regions sorted by base, re-read only
// when the peer's generation word changed; cover() checks in O(log n + pieces) that an
// access [low, high) is covered by attached regions lying back to back.
#ifndef NBRMA_TRANSPORT_DIRECTORY_HPP
#define NBRMA_TRANSPORT_DIRECTORY_HPP

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "common/status.hpp"
#include "layout/directory.hpp"

namespace nbrma::transport {

using layout::DirectoryHeader;
using layout::DirectorySlot;

class DirectoryWriter {
  public:
    static constexpr std::size_t first_slots = 16;
    // Called with every new slot array: make it readable by peers and store in *key
    // the bytes they need for it (UCX: register it, the packed rkey). The default
    // (null) needs nothing.
    using Publish =
        std::function<Status(void *array, std::size_t bytes, std::vector<std::uint8_t> *key)>;

    // header: our header in our control region, header_bytes long (zeroed).
    DirectoryWriter(void *header, std::size_t header_bytes, std::size_t key_stride,
                    Publish publish = nullptr);
    DirectoryWriter(const DirectoryWriter &) = delete;
    DirectoryWriter &operator=(const DirectoryWriter &) = delete;

    // Whether [base, base + length) may be attached: err_arg if it wraps around the
    // address space, err_range if it overlaps an attached region (or a zero-size one at
    // the same base). A transport that registers memory asks before it does.
    Status admits(std::uint64_t base, std::uint64_t length) const;
    // admits(), then publishes the region; err_no_memory: key longer than the stride.
    // key may be null (key_length 0).
    Status add(std::uint64_t base, std::uint64_t length, const std::uint8_t *key,
               std::size_t key_length);
    // err_arg: nothing attached at base.
    Status remove(std::uint64_t base);
    std::size_t regions() const { return index_.size(); }
    std::size_t capacity() const { return slots_; }

  private:
    struct Attached {
        std::uint64_t length;
        std::size_t slot;  // npos for zero-size regions (not published)
    };
    static constexpr std::size_t npos = ~std::size_t{0};
    DirectorySlot *slot_array() { return reinterpret_cast<DirectorySlot *>(array_.get()); }
    std::uint8_t *key_area(std::size_t slot);
    Status grow();
    void begin_change();
    void end_change();

    DirectoryHeader *header_;
    std::size_t header_bytes_;
    std::size_t key_stride_;
    Publish publish_;
    std::map<std::uint64_t, Attached> index_;
    std::vector<std::size_t> free_slots_;
    std::unique_ptr<std::uint64_t[]> array_;
    std::size_t slots_ = 0;
    std::size_t used_slots_ = 0;  // slots ever filled in the current array
    std::vector<std::unique_ptr<std::uint64_t[]>> retired_;
};

class DirectoryCache {
  public:
    // How the cache reads a peer's bytes.
    class Source {
      public:
        // offset: from the start of the peer's directory header
        virtual Status read_header(std::size_t offset, void *destination, std::size_t length) = 0;
        // address in the peer's memory, inside the slot array the header named
        virtual Status read_array(const DirectoryHeader &header, std::uint64_t address,
                                  void *destination, std::size_t length) = 0;

      protected:
        ~Source() = default;
    };
    struct Region {
        std::uint64_t base;
        std::uint64_t length;
        std::uint64_t generation;
        std::uint64_t slot;
        std::uint64_t key_length;
    };

    // Re-reads the directory if the peer's generation changed since the last read.
    Status refresh(Source &source);
    // The regions that cover [low, high) back to back, in address order: regions
    // [*first, *first + *count); err_range if some byte is not attached. An empty
    // access (low == high) is covered.
    Status cover(std::uint64_t low, std::uint64_t high, std::size_t *first,
                 std::size_t *count) const;
    const Region &region(std::size_t index) const { return regions_[index]; }
    const DirectoryHeader &header() const { return header_; }
    std::uint64_t generation() const { return header_.generation; }
    // Address of a slot's key in the peer's memory (valid for the current header).
    std::uint64_t key_address(std::uint64_t slot) const {
        return header_.address + header_.slots * sizeof(DirectorySlot) + slot * header_.key_stride;
    }

  private:
    DirectoryHeader header_{};  // generation 0 and address 0: nothing attached
    std::vector<Region> regions_;
    std::vector<DirectorySlot> scratch_;
};

}  // namespace nbrma::transport

#endif
