// The shm transport's own checks: mapped_window pointers stay inside the mapped window,
// and a window of absolute addresses refuses wrap-around and the null page; the bell of
// NBRMA_PROGRESS=interrupt; dynamic windows with regions moved into shared pages. Bounds
// of mapped and cross-memory windows are checked for every transport in
// test_transport_conformance.cpp. The "peers" are this process: process_vm_readv/writev
// on our own pid works.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "layout/control_region.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/shm/user_memory.hpp"

namespace nbrma::transport::shm {
namespace {

constexpr std::size_t control_bytes = 256;
constexpr std::size_t window_bytes = 256;
constexpr std::size_t margin = 512;  // canary bytes on each side of every region
constexpr std::uint8_t canary = 0xa5;

// A region with canaries on both sides.
struct Guarded {
    alignas(64) std::array<std::uint8_t, margin + window_bytes + margin> bytes;
    Guarded() { bytes.fill(canary); }
    std::uint8_t *region() { return bytes.data() + margin; }
    bool canaries_intact() const {
        for (std::size_t i = 0; i < bytes.size(); ++i)
            if ((i < margin || i >= margin + window_bytes) && bytes[i] != canary) return false;
        return true;
    }
};

// Peer 0: control and window mapped (an allocated window). Peer 1: window reached by
// cross-memory attach (MPI_Win_create). Peer 2: a dynamic window (absolute addresses).
class ShmTransportBounds : public ::testing::Test {
  protected:
    void SetUp() override {
        std::vector<ShmPeer> peers(3);
        peers[0].control = control_.region();
        peers[0].window = mapped_.region();
        peers[0].window_size = window_bytes;
        peers[1].control = control_.region();
        peers[1].remote_base = reinterpret_cast<std::uintptr_t>(created_.region());
        peers[1].window_size = window_bytes;
        peers[1].pid = getpid();
        peers[2].control = control_.region();
        peers[2].remote_base = 0;
        peers[2].window_size = ~0ull;
        peers[2].pid = getpid();
        // Seen from rank 0, peers 1 and 2 are other processes (process_vm_*); seen from
        // rank 1 resp. 2, the same memory is our own (the direct copy path).
        for (int rank = 0; rank < 3; ++rank)
            transports_[rank] = std::make_unique<ShmTransport>(rank, control_bytes, peers);
    }

    bool intact() const {
        return control_.canaries_intact() && mapped_.canaries_intact() &&
               created_.canaries_intact();
    }

    Guarded control_, mapped_, created_;
    std::unique_ptr<ShmTransport> transports_[3];
};

// The engine's contiguous fast path copies through mapped_window: the same bounds.
TEST_F(ShmTransportBounds, DirectWindowPointersStayInsideTheMappedWindow) {
    ShmTransport &t = *transports_[1];
    EXPECT_EQ(t.mapped_window(0, 8, 8), mapped_.region() + 8);
    EXPECT_EQ(t.mapped_window(0, window_bytes - 8, 8), mapped_.region() + window_bytes - 8);
    EXPECT_EQ(t.mapped_window(0, window_bytes - 8, 16), nullptr);
    EXPECT_EQ(t.mapped_window(0, window_bytes + 1, 0), nullptr);
    EXPECT_EQ(t.mapped_window(0, ~0ull - 3, 8), nullptr);
    EXPECT_EQ(t.mapped_window(0, 8, ~std::size_t{0}), nullptr);
    EXPECT_EQ(t.mapped_window(1, 8, 8), nullptr);  // cross-memory attach: no pointer
    EXPECT_EQ(t.mapped_window(2, 8, 8), nullptr);  // dynamic
    // The whole map the engine remembers: the same window, the same length.
    std::uint64_t length = 1;
    EXPECT_EQ(t.mapped_window_whole(0, &length), mapped_.region());
    EXPECT_EQ(length, window_bytes);
    for (int peer : {1, 2, 3, -1}) {
        length = 1;
        EXPECT_EQ(t.mapped_window_whole(peer, &length), nullptr);
        EXPECT_EQ(length, 0u);
    }
}

TEST_F(ShmTransportBounds, DynamicWindowsRefuseWrapAroundAndTheNullPage) {
    for (int origin : {0, 2}) {  // through process_vm_*, then ourselves (direct copy)
        SCOPED_TRACE(origin);
        ShmTransport &t = *transports_[origin];
        std::uint64_t value = 7, back = 0;
        EXPECT_EQ(t.put(2, &value, 8, {Region::window, 0}, nullptr), Status::err_range);
        EXPECT_EQ(t.put(2, &value, 8, {Region::window, 64}, nullptr), Status::err_range);
        EXPECT_EQ(t.get(2, &back, 8, {Region::window, 4088}, nullptr), Status::err_range);
        EXPECT_EQ(t.put(2, &value, 8, {Region::window, ~0ull - 3}, nullptr), Status::err_range);
        EXPECT_EQ(t.get(2, &back, 8, {Region::window, ~0ull - 3}, nullptr), Status::err_range);
        EXPECT_EQ(back, 0u);
        // A real address works.
        const auto address = reinterpret_cast<std::uintptr_t>(created_.region());
        EXPECT_EQ(t.put(2, &value, 8, {Region::window, address + 8}, nullptr), Status::ok);
        EXPECT_EQ(t.get(2, &back, 8, {Region::window, address + 8}, nullptr), Status::ok);
        EXPECT_EQ(back, 7u);
        EXPECT_TRUE(intact());
    }
}

}  // namespace
}  // namespace nbrma::transport::shm


namespace nbrma::transport::shm {
namespace {

// NBRMA_PROGRESS=interrupt: writes into the part of a peer's control region that its
// pending epochs wait on (counters, lock-queue nodes) ring the peer's bell; the lock
// word, the accumulate stripes, the directory header and window memory do not.
TEST(ShmTransportBell, RingsForWatchedControlWordsOnly) {
    constexpr std::size_t size = 4096;
    static_assert(nbrma::layout::ControlLayout::watched + 64 <= size, "room for a watched word");
    alignas(64) static std::uint8_t control[size];
    alignas(64) static std::uint8_t window[64];
    std::atomic<std::uint64_t> bell{0};
    std::vector<ShmPeer> peers(1);
    peers[0].control = control;
    peers[0].window = window;
    peers[0].window_size = sizeof window;
    peers[0].bell = &bell;
    ShmTransport shm(0, size, peers);
    std::uint64_t value = 7, old = 0;
    const RemoteAddress lock_word{Region::control, 0};
    const RemoteAddress counter{Region::control, nbrma::layout::ControlLayout::watched};
    const RemoteAddress node{Region::control, nbrma::layout::ControlLayout::watched + 40};
    const RemoteAddress data{Region::window, 0};
    ASSERT_EQ(shm.atomic(0, AtomicOp::fetch_add, lock_word, 1, 0, &old, nullptr), Status::ok);
    ASSERT_EQ(shm.put(0, &value, 8, data, nullptr), Status::ok);
    const RemoteAddress stripe{Region::control, nbrma::layout::ControlLayout::accumulate_stripe(3)};
    ASSERT_EQ(shm.atomic(0, AtomicOp::compare_swap, stripe, 1, 0, &old, nullptr), Status::ok);
    EXPECT_EQ(bell.load(), 0u);
    ASSERT_EQ(shm.atomic(0, AtomicOp::fetch_add, counter, 1, 0, &old, nullptr), Status::ok);
    EXPECT_EQ(bell.load(), 1u);
    ASSERT_EQ(shm.put(0, &value, 8, node, nullptr), Status::ok);
    EXPECT_EQ(bell.load(), 2u);
    // a refused access rings nothing
    const RemoteAddress outside{Region::control, size};
    EXPECT_EQ(shm.put(0, &value, 8, outside, nullptr), Status::err_range);
    EXPECT_EQ(bell.load(), 2u);
    EXPECT_TRUE(shm.capabilities().completes_inline);
}

// Puts and gets to a peer reached by cross-memory attach (this process, as rank 1 of
// two, its window a heap buffer) that put_deferrable and get_deferrable hold: nothing
// moves before settle(), then every byte (more copies than one batch holds: batches go
// out as they fill); a refused access is refused at once and held copies stay; a held
// copy whose local buffer is unmapped fails settle() with err_range, and the next work.
TEST(ShmTransport, HeldCrossMemoryCopiesLandAtSettle) {
    alignas(64) static std::uint8_t control[2][4096];
    static std::uint8_t target[64 * 1024];
    std::vector<ShmPeer> peers(2);
    for (int r = 0; r < 2; ++r) peers[r].control = control[r];
    peers[1].window_size = sizeof target;
    peers[1].remote_base = reinterpret_cast<std::uintptr_t>(target);
    peers[1].pid = getpid();
    ShmTransport shm(0, sizeof control[0], peers);
    std::vector<std::uint8_t> source(200 * 256), back(200 * 256, 0);
    for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<std::uint8_t>(i * 7 + 1);
    std::memset(target, 0, sizeof target);
    for (int k = 0; k < 200; ++k)
        ASSERT_EQ(shm.put_deferrable(1, &source[k * 256], 256, {Region::window, k * 300ull}),
                  Status::ok);
    // 200 copies: three batches of 64 went out as they filled, the last 8 are held
    EXPECT_EQ(target[199 * 300], 0);
    EXPECT_EQ(target[191 * 300], source[191 * 256]);
    EXPECT_EQ(shm.put_deferrable(1, source.data(), 8, {Region::window, sizeof target - 4}),
              Status::err_range);
    ASSERT_EQ(shm.settle(), Status::ok);
    for (int k = 0; k < 200; ++k)
        ASSERT_EQ(std::memcmp(&target[k * 300], &source[k * 256], 256), 0) << "put " << k;
    for (int k = 0; k < 200; ++k)
        ASSERT_EQ(shm.get_deferrable(1, &back[k * 256], 256, {Region::window, k * 300ull}),
                  Status::ok);
    ASSERT_EQ(shm.flush(1, nullptr), Status::ok);  // a flush settles too
    EXPECT_EQ(back, source);

    void *gone = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(gone, MAP_FAILED);
    munmap(gone, 4096);
    ASSERT_EQ(shm.put_deferrable(1, gone, 64, {Region::window, 0}), Status::ok);
    EXPECT_EQ(shm.settle(), Status::err_range);
    const std::uint64_t seven = 7;
    ASSERT_EQ(shm.put_deferrable(1, &seven, 8, {Region::window, 64}), Status::ok);
    ASSERT_EQ(shm.settle(), Status::ok);
    std::uint64_t got = 0;
    std::memcpy(&got, &target[64], 8);
    EXPECT_EQ(got, 7u);
}

}  // namespace
}  // namespace nbrma::transport::shm

namespace nbrma::transport::shm {
namespace {

// Two ranks of one process over shm with a dynamic window whose regions may move: rank 0
// the origin, rank 1 the target.
class ShmTransportMovedRegions : public ::testing::Test {
  protected:
    ShmTransportMovedRegions() {
        origin.enable_dynamic(true);
        target.enable_dynamic(true);
    }
    std::vector<ShmPeer> two_peers() {
        std::vector<ShmPeer> result(2);
        for (int r = 0; r < 2; ++r) {
            result[r].control =
                reinterpret_cast<std::uint8_t *>(control.data()) + r * layout.size();
            result[r].window_size = ~0ull;
            result[r].pid = getpid();
        }
        return result;
    }
    const layout::ControlLayout layout{2};
    std::vector<std::uint64_t> control = std::vector<std::uint64_t>(2 * layout.size() / 8 + 2, 0);
    const std::vector<ShmPeer> peers = two_peers();
    ShmTransport origin{0, layout.size(), peers};
    ShmTransport target{1, layout.size(), peers};
};

// Dynamic windows over shm with moved regions (user_memory.hpp): an origin maps a region
// the target attached in moved pages, at its first access; after the target detaches it
// and attaches the same memory again (another memfd), the origin maps the new one - a
// stale mapping would put into memory the user no longer sees.
TEST_F(ShmTransportMovedRegions, OriginsMapAttachedRegionsAndFollowReattaches) {

    auto *memory = static_cast<std::uint64_t *>(std::aligned_alloc(4096, 8192));
    std::memset(memory, 0, 8192);
    const auto address = reinterpret_cast<std::uintptr_t>(memory);
    for (std::uint64_t round = 1; round <= 3; ++round) {
        SCOPED_TRACE(round);
        UserMemoryClaim claim;
        claim.claim(memory, 8192, true, true);
        ASSERT_EQ(claim.share(), Status::ok);
        ASSERT_EQ(target.attach(memory, 8192), Status::ok);
        const std::uint64_t value = 100 + round;
        ASSERT_EQ(origin.put(1, &value, 8, {Region::window, address + 8 * round}, nullptr),
                  Status::ok);
        EXPECT_EQ(memory[round], value);
        memory[round + 100] = value * 2;  // the target's own store, read by the origin
        std::uint64_t back = 0;
        ASSERT_EQ(origin.get(1, &back, 8, {Region::window, address + 8 * (round + 100)}, nullptr),
                  Status::ok);
        EXPECT_EQ(back, value * 2);
        // outside the region: refused
        EXPECT_EQ(origin.put(1, &value, 8, {Region::window, address + 8192}, nullptr),
                  Status::err_range);
        ASSERT_EQ(target.detach(memory), Status::ok);
        claim.release();
        user_memory_uncache();  // the next attach moves the pages into a new memfd
    }
    EXPECT_EQ(user_memory_ranges(), 0u);
    std::free(memory);
}

// Atomics on dynamic windows: a word of a region moved into shared pages takes CPU
// atomics from every origin, the target itself included (the same pages); a word of a
// region that did not move takes none (the accumulate lock then, alike for every origin).
TEST_F(ShmTransportMovedRegions, MovedRegionsTakeCpuAtomicsFromEveryOrigin) {
    auto *moved = static_cast<std::uint64_t *>(std::aligned_alloc(4096, 4096));
    auto *still = static_cast<std::uint64_t *>(std::aligned_alloc(4096, 4096));
    std::memset(moved, 0, 4096);
    std::memset(still, 0, 4096);
    {
        UserMemoryClaim claim, stay;
        claim.claim(moved, 4096, true, true);
        ASSERT_EQ(claim.share(), Status::ok);
        stay.claim(still, 4096, false, false);
        ASSERT_EQ(target.attach(moved, 4096), Status::ok);
        ASSERT_EQ(target.attach(still, 4096), Status::ok);
        const RemoteAddress word{Region::window, reinterpret_cast<std::uintptr_t>(moved) + 16};
        const RemoteAddress other{Region::window, reinterpret_cast<std::uintptr_t>(still) + 16};
        EXPECT_TRUE(origin.supports_atomics(1, Region::window));
        EXPECT_TRUE(origin.supports_atomics32(1, Region::window));
        EXPECT_TRUE(origin.atomic_aligned(1, word, 8));
        EXPECT_TRUE(target.atomic_aligned(1, word, 8));
        EXPECT_FALSE(origin.atomic_aligned(1, {Region::window, word.offset + 4}, 8));
        EXPECT_TRUE(origin.atomic_aligned(1, {Region::window, word.offset + 4}, 4));
        EXPECT_FALSE(origin.atomic_aligned(1, {Region::window, word.offset + 2}, 4));
        EXPECT_FALSE(origin.atomic_aligned(1, other, 8));
        EXPECT_FALSE(origin.atomic_aligned(1, other, 4));
        EXPECT_FALSE(target.atomic_aligned(1, other, 8));
        std::uint64_t previous = 99;
        ASSERT_EQ(origin.atomic(1, AtomicOp::fetch_add, word, 5, 0, &previous, nullptr),
                  Status::ok);
        EXPECT_EQ(previous, 0u);
        ASSERT_EQ(target.atomic(1, AtomicOp::fetch_add, word, 7, 0, &previous, nullptr),
                  Status::ok);
        EXPECT_EQ(previous, 5u);
        ASSERT_EQ(origin.atomic(1, AtomicOp::compare_swap, word, 40, 12, &previous, nullptr),
                  Status::ok);
        EXPECT_EQ(previous, 12u);
        EXPECT_EQ(moved[2], 40u);
        {  // the upper half of the word as a 32-bit word of its own
            const RemoteAddress half{Region::window, word.offset + 4};
            std::uint32_t before = 99;
            ASSERT_EQ(origin.atomic32(1, AtomicOp::fetch_add, half, 3, 0, &before, nullptr),
                      Status::ok);
            EXPECT_EQ(before, 0u);
            EXPECT_EQ(moved[2], 40u + (3ull << 32));
            EXPECT_EQ(origin.atomic32(1, AtomicOp::fetch_add, other, 1, 0, &before, nullptr),
                      Status::err_unsupported);
            ASSERT_EQ(origin.atomic32(1, AtomicOp::swap, half, 0, 0, &before, nullptr), Status::ok);
            EXPECT_EQ(before, 3u);
            EXPECT_EQ(moved[2], 40u);
        }
        EXPECT_EQ(origin.atomic(1, AtomicOp::fetch_add, other, 1, 0, &previous, nullptr),
                  Status::err_unsupported);
        EXPECT_EQ(still[2], 0u);
        // An origin that cannot map the moved region (its descriptor now names /dev/null,
        // which cannot be mapped) fails the atomic rather than take the accumulate lock.
        {
            ShmTransport late(0, layout.size(), peers);
            late.enable_dynamic(true);
            const int saved = dup(claim.descriptor());
            const int null_device = ::open("/dev/null", O_RDWR | O_CLOEXEC);
            ASSERT_GE(saved, 0);
            ASSERT_GE(null_device, 0);
            ASSERT_EQ(dup2(null_device, claim.descriptor()), claim.descriptor());
            EXPECT_TRUE(late.atomic_aligned(1, word, 8));
            EXPECT_EQ(late.atomic(1, AtomicOp::fetch_add, word, 1, 0, &previous, nullptr),
                      Status::err_transport);
            ASSERT_EQ(dup3(saved, claim.descriptor(), O_CLOEXEC), claim.descriptor());
            close(saved);
            close(null_device);
            EXPECT_EQ(moved[2], 40u);
        }
        ASSERT_EQ(target.detach(moved), Status::ok);
        ASSERT_EQ(target.detach(still), Status::ok);
        // detached: no atomics there any more
        EXPECT_FALSE(origin.atomic_aligned(1, word, 8));
        EXPECT_FALSE(origin.atomic_aligned(1, word, 4));
    }
    user_memory_uncache();
    EXPECT_EQ(user_memory_ranges(), 0u);
    std::free(moved);
    std::free(still);
}

}  // namespace
}  // namespace nbrma::transport::shm
