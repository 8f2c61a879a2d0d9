// MPI_Win_create memory moved into shared pages (transport/shm/user_memory.hpp): the
// user's addresses keep their content before, during and after; a second mapping (what a
// node-local peer maps) sees the same bytes while the window lives and no longer after;
// no store another thread makes while the pages move is lost; a forked child gets
// private pages; file and shared mappings, read-only memory, the caller's stack and
// pages another window exposes stay where they are.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "transport/shm/peer_memory.hpp"
#include "transport/shm/user_memory.hpp"

namespace nbrma::transport::shm {
namespace {

constexpr std::size_t page = 4096;

// Every test starts and ends with no moved range kept from an earlier window.
class UserMemory : public ::testing::Test {
  protected:
    void SetUp() override { user_memory_uncache(); }
    void TearDown() override { user_memory_uncache(); }
};

// Page-aligned heap memory, pages pages, filled with a pattern.
struct HeapPages {
    explicit HeapPages(std::size_t pages) : size(pages * page) {
        bytes = static_cast<std::uint8_t *>(std::aligned_alloc(page, size));
        for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 + 3);
    }
    ~HeapPages() { std::free(bytes); }
    bool pattern_intact(std::size_t from, std::size_t to) const {
        for (std::size_t i = from; i < to; ++i)
            if (bytes[i] != static_cast<std::uint8_t>(i * 7 + 3)) return false;
        return true;
    }
    std::uint8_t *bytes;
    std::size_t size;
};

TEST_F(UserMemory, HeapPagesMoveIntoAMemfdPeersMapAndComeBack) {
    HeapPages heap(3);
    {
        UserMemoryClaim claim;
        claim.claim(heap.bytes + 100, 5000, true, true);
        ASSERT_GE(claim.descriptor(), 0);
        EXPECT_EQ(claim.offset(), 100u);
        ASSERT_EQ(claim.share(), Status::ok);
        EXPECT_TRUE(claim.shared());
        EXPECT_EQ(user_memory_moved(), 1u);
        EXPECT_TRUE(heap.pattern_intact(0, heap.size));

        // What a peer maps: the same bytes, both ways.
        PeerMemoryMap peer;
        ASSERT_EQ(peer.open(getpid(), claim.descriptor(), claim.offset(), 5000), Status::ok);
        EXPECT_EQ(std::memcmp(peer.address(), heap.bytes + 100, 5000), 0);
        peer.address()[0] = 0xAB;
        heap.bytes[4999 + 100] = 0xCD;
        EXPECT_EQ(heap.bytes[100], 0xAB);
        EXPECT_EQ(peer.address()[4999], 0xCD);
        // an atomic through the peer's mapping is one on the user's word
        auto *word = reinterpret_cast<std::uint64_t *>(peer.address() + 4);
        __atomic_fetch_add(word, 5, __ATOMIC_SEQ_CST);
        std::uint64_t seen;
        std::memcpy(&seen, heap.bytes + 104, 8);
        EXPECT_EQ(seen, *word);

        claim.release();
        EXPECT_EQ(user_memory_moved(), 1u);  // kept moved for the next window
        user_memory_uncache();
        EXPECT_EQ(user_memory_ranges(), 0u);
        EXPECT_EQ(user_memory_moved(), 0u);
        // the content the window left stays; the pages are private again
        EXPECT_EQ(heap.bytes[100], 0xAB);
        EXPECT_EQ(heap.bytes[5099], 0xCD);
        heap.bytes[200] = 0x11;
        EXPECT_NE(peer.address()[100], 0x11);
        peer.address()[101] = 0x22;
        EXPECT_NE(heap.bytes[201], 0x22);
    }
    EXPECT_TRUE(heap.pattern_intact(0, 100));
    EXPECT_TRUE(heap.pattern_intact(5100 + 1, heap.size));
}

// Another thread increments a counter in the window's page (outside the window, as a
// neighbouring heap object would be) while the pages move in and out again and again.
TEST_F(UserMemory, NoStoreIsLostWhileThePagesMove) {
    HeapPages heap(2);
    auto *counter = reinterpret_cast<std::atomic<std::uint64_t> *>(heap.bytes + page + 64);
    counter->store(0);
    std::atomic<bool> stop{false};
    std::uint64_t done = 0;
    std::thread writer([&] {
        while (!stop.load(std::memory_order_relaxed)) {
            counter->fetch_add(1, std::memory_order_relaxed);
            ++done;
        }
    });
    int moves = 0;
    for (int i = 0; i < 300; ++i) {
        UserMemoryClaim claim;
        claim.claim(heap.bytes + 8, page + 8, true, true);
        if (claim.descriptor() >= 0 && claim.share() == Status::ok) ++moves;
        claim.release();
        user_memory_uncache();  // back every time, not kept for the next claim
    }
    stop = true;
    writer.join();
    EXPECT_EQ(moves, 300);
    EXPECT_EQ(counter->load(), done);
    EXPECT_GT(done, 0u);
    EXPECT_EQ(user_memory_ranges(), 0u);
}

TEST_F(UserMemory, AForkedChildGetsPrivatePages) {
    HeapPages heap(1);
    UserMemoryClaim claim;
    claim.claim(heap.bytes, page, true, true);
    ASSERT_EQ(claim.share(), Status::ok);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        heap.bytes[10] = 0x5A;
        _exit(heap.bytes[10] == 0x5A ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT_TRUE(heap.pattern_intact(0, page)) << "the child's store reached the parent";
    // and the parent's pages are still the shared ones
    PeerMemoryMap peer;
    ASSERT_EQ(peer.open(getpid(), claim.descriptor(), claim.offset(), page), Status::ok);
    heap.bytes[20] = 0x77;
    EXPECT_EQ(peer.address()[20], 0x77);
}

TEST_F(UserMemory, SharedOrReadOnlyMappingsAndTheCallersStackStayWhereTheyAre) {
    void *shared = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(shared, MAP_FAILED);
    {
        UserMemoryClaim claim;
        claim.claim(shared, 64, true, true);
        EXPECT_LT(claim.descriptor(), 0);
        EXPECT_NE(claim.share(), Status::ok);
        EXPECT_EQ(user_memory_ranges(), 1u);  // registered all the same
    }
    munmap(shared, page);

    // read-only memory would become writable: it stays where it is, read-only
    void *read_only = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(read_only, MAP_FAILED);
    {
        UserMemoryClaim claim;
        claim.claim(read_only, 64, true, true);
        EXPECT_LT(claim.descriptor(), 0);
    }
    munmap(read_only, page);

    volatile std::uint8_t on_stack[256];
    on_stack[0] = 1;
    UserMemoryClaim claim;
    claim.claim(const_cast<std::uint8_t *>(on_stack), sizeof on_stack, true, true);
    EXPECT_LT(claim.descriptor(), 0);
    claim.release();
    EXPECT_EQ(user_memory_ranges(), 0u);
}

TEST_F(UserMemory, WindowsOverMovedPagesShareThemAndExposedPagesNeverMove) {
    HeapPages heap(4);
    UserMemoryClaim first, inside, across;
    first.claim(heap.bytes, 2 * page, true, true);
    ASSERT_EQ(first.share(), Status::ok);
    inside.claim(heap.bytes + 500, 1000, true, true);  // within the moved pages: the same memfd
    EXPECT_EQ(inside.descriptor(), first.descriptor());
    EXPECT_EQ(inside.offset(), 500u);
    EXPECT_EQ(inside.share(), Status::ok);
    across.claim(heap.bytes + page, 2 * page, true, true);  // half in, half out: stays put
    EXPECT_LT(across.descriptor(), 0);
    EXPECT_EQ(user_memory_ranges(), 2u);

    // The moved pages stay moved while a window exposes any of them.
    first.release();
    inside.release();
    EXPECT_EQ(user_memory_moved(), 1u);
    across.release();
    EXPECT_EQ(user_memory_moved(), 1u);  // kept moved for the next window
    user_memory_uncache();
    EXPECT_EQ(user_memory_moved(), 0u);
    EXPECT_EQ(user_memory_ranges(), 0u);
    EXPECT_TRUE(heap.pattern_intact(0, heap.size));

    // Pages exposed where they are (a dynamic window's attached region) never move.
    UserMemoryClaim attached, later;
    attached.claim(heap.bytes + page, 16, false, false);
    EXPECT_LT(attached.descriptor(), 0);
    later.claim(heap.bytes, 2 * page, true, true);
    EXPECT_LT(later.descriptor(), 0);
}

// Whether the mapping at exactly [low, low + length) is one of nbrma's memfds.
bool mapped_from_memfd(const void *low, std::size_t length) {
    char path[80], target[128];
    std::snprintf(path, sizeof path, "/proc/self/map_files/%lx-%lx",
                  reinterpret_cast<unsigned long>(low),
                  reinterpret_cast<unsigned long>(low) + length);
    const ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) return false;
    target[n] = '\0';
    return std::strncmp(target, "/memfd:nbrma-user-", 18) == 0;
}

// A create/free loop over one buffer moves it once: a freed window's moved pages are
// taken again (same memfd, nothing moves) while they are still mapped there.
TEST_F(UserMemory, FreedWindowsPagesAreTakenAgain) {
    HeapPages heap(2);
    int first_fd = -1;
    for (int round = 0; round < 3; ++round) {
        UserMemoryClaim claim;
        claim.claim(heap.bytes, 2 * page, true, true);
        ASSERT_GE(claim.descriptor(), 0);
        if (round == 0) first_fd = claim.descriptor();
        EXPECT_EQ(claim.descriptor(), first_fd);
        ASSERT_EQ(claim.share(), Status::ok);
        heap.bytes[round] = static_cast<std::uint8_t>(0xE0 + round);
    }
    EXPECT_EQ(user_memory_moved(), 1u);
    EXPECT_TRUE(mapped_from_memfd(heap.bytes, 2 * page));
    user_memory_uncache();
    EXPECT_FALSE(mapped_from_memfd(heap.bytes, 2 * page));
    EXPECT_EQ(heap.bytes[2], 0xE2);
    EXPECT_TRUE(heap.pattern_intact(3, heap.size));
}

// The user unmapped a freed window's memory and mapped other memory there: the next
// window over it must not take the old memfd; half unmapped, what is left of the old
// mapping goes back to private memory.
TEST_F(UserMemory, MemoryRemappedSinceIsNotTakenForTheOldPages) {
    auto *memory = static_cast<std::uint8_t *>(
        mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(memory, MAP_FAILED);
    memory[0] = 1;
    int old_fd = -1;
    {
        UserMemoryClaim claim;
        claim.claim(memory, 2 * page, true, true);
        ASSERT_EQ(claim.share(), Status::ok);
        old_fd = claim.descriptor();
    }
    ASSERT_TRUE(mapped_from_memfd(memory, 2 * page));
    // new memory at the same address
    ASSERT_EQ(mmap(memory, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                   -1, 0),
              memory);
    memory[5] = 9;
    {
        UserMemoryClaim claim;
        claim.claim(memory, 2 * page, true, true);
        ASSERT_GE(claim.descriptor(), 0);
        EXPECT_EQ(user_memory_ranges(), 1u) << "the stale range was not dropped";
        ASSERT_EQ(claim.share(), Status::ok);
        EXPECT_EQ(memory[0], 0);
        EXPECT_EQ(memory[5], 9);
    }
    // half of it unmapped: the other half goes back to private memory at the next use
    ASSERT_EQ(munmap(memory + page, page), 0);
    ASSERT_TRUE(mapped_from_memfd(memory, page));
    user_memory_uncache();
    EXPECT_FALSE(mapped_from_memfd(memory, page));
    EXPECT_EQ(memory[5], 9);
    EXPECT_EQ(user_memory_ranges(), 0u);
    munmap(memory, page);
    (void)old_fd;
}

TEST_F(UserMemory, DeclinedOffersLeaveThePagesAlone) {
    HeapPages heap(1);
    UserMemoryClaim claim;
    claim.claim(heap.bytes, 100, true, true);
    ASSERT_GE(claim.descriptor(), 0);
    claim.decline();
    EXPECT_LT(claim.descriptor(), 0);
    EXPECT_EQ(user_memory_moved(), 0u);
    EXPECT_EQ(user_memory_ranges(), 1u);
    EXPECT_NE(claim.share(), Status::ok);
}

// Windows created and freed over one buffer map the peer's memfd once: the same memfd
// (identity) is the cached mapping, of the whole memfd whatever part a window covers; a
// snapshot taken before (what a creation publishes) still finds it once the cache has
// dropped it.
TEST_F(UserMemory, PeerMappingsAreCachedByIdentity) {
    HeapPages heap(2);
    UserMemoryClaim claim;
    claim.claim(heap.bytes, 2 * page, true, true);
    EXPECT_FALSE(claim.moved());
    ASSERT_EQ(claim.share(), Status::ok);
    EXPECT_TRUE(claim.moved());
    ASSERT_NE(claim.identity(), 0u);
    const std::vector<HeldPeerMemory> none;
    Status status = Status::err_arg;
    auto first = peer_memory_map(none, getpid(), claim.descriptor(), claim.identity(), &status);
    ASSERT_EQ(status, Status::ok);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->length(), 2 * page);
    EXPECT_EQ(first->at(page, page + 1), nullptr);  // beyond the memfd
    EXPECT_EQ(first->at(3 * page, 1), nullptr);
    ASSERT_NE(first->at(page, page), nullptr);
    heap.bytes[page + 7] = 0x42;
    EXPECT_EQ(first->at(page, 8)[7], 0x42);
    auto again = peer_memory_map(none, getpid(), claim.descriptor(), claim.identity(), &status);
    EXPECT_EQ(again.get(), first.get());
    const std::vector<HeldPeerMemory> held = peer_memory_held();
    ASSERT_FALSE(held.empty());
    EXPECT_EQ(held.back().identity, claim.identity());
    // the cache keeps 8: after 8 other identities the first is mapped anew, but for a
    // snapshot taken before
    for (std::uint64_t i = 1; i < 9; ++i)
        peer_memory_map(none, getpid(), claim.descriptor(), claim.identity() + i, &status);
    EXPECT_EQ(peer_memory_map(held, getpid(), claim.descriptor(), claim.identity(), &status).get(),
              first.get());
    auto later = peer_memory_map(none, getpid(), claim.descriptor(), claim.identity(), &status);
    EXPECT_NE(later.get(), first.get());
    EXPECT_EQ(first->at(page, 8)[7], 0x42);  // still valid while held
    EXPECT_EQ(peer_memory_map(none, getpid(), 1 << 20, 99, &status), nullptr);
    EXPECT_EQ(status, Status::err_transport);
}

TEST_F(UserMemory, PeerMapsRefuseBadDescriptorsAndSizes) {
    PeerMemoryMap peer;
    EXPECT_EQ(peer.open(getpid(), 1 << 20, 0, 8), Status::err_transport);
    EXPECT_EQ(peer.open(getpid(), 0, 0, 0), Status::err_arg);
    EXPECT_EQ(peer.open(getpid(), 0, ~0ull - 4, 8), Status::err_arg);
    EXPECT_EQ(peer.address(), nullptr);
}

TEST_F(UserMemory, SharingIsOnlyAnOptIn) {
    unsetenv("NBRMA_SHARE_USER_MEMORY");
    EXPECT_FALSE(user_memory_sharing_requested());
    setenv("NBRMA_SHARE_USER_MEMORY", "0", 1);
    EXPECT_FALSE(user_memory_sharing_requested());
    setenv("NBRMA_SHARE_USER_MEMORY", "yes", 1);
    EXPECT_FALSE(user_memory_sharing_requested());
    setenv("NBRMA_SHARE_USER_MEMORY", "1", 1);
    EXPECT_TRUE(user_memory_sharing_requested());
    unsetenv("NBRMA_SHARE_USER_MEMORY");
}

}  // namespace
}  // namespace nbrma::transport::shm
