// The POSIX shared-memory segment behind every window (DESIGN §2): created 0600
// under a fresh unguessable name, zero-filled, shared by every mapping, and gone from
// /dev/shm once unlinked (or once its creator is destroyed) while mappings stay valid.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "transport/shm/shm_segment.hpp"

namespace nbrma::transport::shm {
namespace {

bool listed(const std::string &name) {
    struct stat info;
    return ::stat(("/dev/shm" + name).c_str(), &info) == 0;
}

TEST(ShmSegment, CreatesPrivateZeroFilledSegmentsUnderFreshNames) {
    ShmSegment first, second;
    ASSERT_EQ(first.create(8192), Status::ok);
    ASSERT_EQ(second.create(8192), Status::ok);
    EXPECT_NE(first.name(), second.name());
    EXPECT_EQ(first.name().rfind("/nbrma-", 0), 0u);

    struct stat info;
    ASSERT_EQ(::stat(("/dev/shm" + first.name()).c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);
    EXPECT_EQ(static_cast<std::size_t>(info.st_size), 8192u);

    ASSERT_NE(first.address(), nullptr);
    EXPECT_EQ(first.size(), 8192u);
    const auto *bytes = static_cast<const unsigned char *>(first.address());
    for (std::size_t i = 0; i < first.size(); ++i) ASSERT_EQ(bytes[i], 0) << "byte " << i;
}

TEST(ShmSegment, SecondMappingSeesTheSameMemory) {
    ShmSegment creator, peer;
    ASSERT_EQ(creator.create(4096), Status::ok);
    ASSERT_EQ(peer.open(creator.name(), 4096), Status::ok);
    EXPECT_NE(peer.address(), creator.address());  // two mappings, one memory

    auto *mine = static_cast<std::uint64_t *>(creator.address());
    auto *theirs = static_cast<std::uint64_t *>(peer.address());
    mine[7] = 0x1122334455667788ull;
    EXPECT_EQ(theirs[7], 0x1122334455667788ull);
    __atomic_fetch_add(&theirs[8], 5, __ATOMIC_SEQ_CST);
    EXPECT_EQ(__atomic_load_n(&mine[8], __ATOMIC_SEQ_CST), 5u);
}

TEST(ShmSegment, UnlinkRemovesTheNameButKeepsTheMapping) {
    ShmSegment creator, peer;
    ASSERT_EQ(creator.create(4096), Status::ok);
    ASSERT_EQ(peer.open(creator.name(), 4096), Status::ok);
    ASSERT_TRUE(listed(creator.name()));
    creator.unlink();
    EXPECT_FALSE(listed(creator.name()));
    static_cast<char *>(creator.address())[100] = 'x';
    EXPECT_EQ(static_cast<char *>(peer.address())[100], 'x');
    creator.unlink();  // idempotent

    ShmSegment late;  // nobody can map it any more
    EXPECT_EQ(late.open(creator.name(), 4096), Status::err_transport);
}

TEST(ShmSegment, CreatorLeavesNothingBehind) {
    std::string name;
    {
        ShmSegment creator;
        ASSERT_EQ(creator.create(4096), Status::ok);
        name = creator.name();
        ASSERT_TRUE(listed(name));
    }
    EXPECT_FALSE(listed(name));
}

TEST(ShmSegment, OpeningAMissingSegmentFails) {
    ShmSegment segment;
    EXPECT_EQ(segment.open("/nbrma-does-not-exist-0000", 4096), Status::err_transport);
    EXPECT_EQ(segment.address(), nullptr);
}

TEST(ShmSegment, EmptySegmentStillMaps) {
    ShmSegment segment;  // a window where every rank passes size 0
    ASSERT_EQ(segment.create(0), Status::ok);
    EXPECT_NE(segment.address(), nullptr);
}

}  // namespace
}  // namespace nbrma::transport::shm
