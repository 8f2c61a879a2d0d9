// The shared-memory segment behind every window (doc/design.md §2): an anonymous memfd,
// 0600, zero-filled, shared by every mapping, opened by other processes through the
// name its creator publishes (/proc/<pid>/fd/<n>) until the creator withdraws it, and
// never listed in /dev/shm, so nothing is left there whoever dies when.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "transport/shm/shm_segment.hpp"

namespace nbrma::transport::shm {
namespace {

// Entries of /dev/shm whose name mentions our pid (the old named segments did).
int listed_in_dev_shm() {
    DIR *dir = opendir("/dev/shm");
    if (!dir) return 0;
    const std::string pid = "-" + std::to_string(getpid()) + "-";
    int count = 0;
    while (dirent *entry = readdir(dir))
        if (std::strstr(entry->d_name, pid.c_str())) ++count;
    closedir(dir);
    return count;
}

TEST(ShmSegment, CreatesPrivateZeroFilledSegmentsUnderFreshNames) {
    ShmSegment first, second;
    ASSERT_EQ(first.create(8192), Status::ok);
    ASSERT_EQ(second.create(8192), Status::ok);
    EXPECT_NE(first.name(), second.name());
    EXPECT_EQ(first.name().rfind("/proc/" + std::to_string(getpid()) + "/fd/", 0), 0u)
        << first.name();

    struct stat info;
    ASSERT_EQ(::stat(first.name().c_str(), &info), 0);  // follows the link to the memfd
    EXPECT_EQ(info.st_mode & 0777, 0600u);
    EXPECT_EQ(static_cast<std::size_t>(info.st_size), 8192u);
    EXPECT_EQ(listed_in_dev_shm(), 0);

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

TEST(ShmSegment, AnotherProcessOpensItByTheNameAlone) {
    ShmSegment creator;
    ASSERT_EQ(creator.create(4096), Status::ok);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // a sibling rank: has only the published name
        ShmSegment peer;
        if (peer.open(creator.name(), 4096) != Status::ok) _exit(2);
        static_cast<char *>(peer.address())[42] = 'p';
        _exit(0);
    }
    int wstatus = 0;
    ASSERT_EQ(waitpid(child, &wstatus, 0), child);
    ASSERT_TRUE(WIFEXITED(wstatus));
    EXPECT_EQ(WEXITSTATUS(wstatus), 0);
    EXPECT_EQ(static_cast<char *>(creator.address())[42], 'p');
}

TEST(ShmSegment, WithdrawEndsOpeningButKeepsTheMapping) {
    ShmSegment creator, peer;
    ASSERT_EQ(creator.create(4096), Status::ok);
    ASSERT_EQ(peer.open(creator.name(), 4096), Status::ok);
    creator.withdraw();
    static_cast<char *>(creator.address())[100] = 'x';
    EXPECT_EQ(static_cast<char *>(peer.address())[100], 'x');
    creator.withdraw();  // idempotent

    ShmSegment late;  // nobody can map it any more
    EXPECT_EQ(late.open(creator.name(), 4096), Status::err_transport);
    EXPECT_EQ(late.address(), nullptr);
}

// Window creation: the creator's memfd is published before anyone knows its size; a
// peer may open and size it before the creator does, and both map the same memory.
TEST(ShmSegment, PeerMaySizeThePreparedSegmentBeforeItsCreator) {
    ShmSegment creator, peer;
    ASSERT_EQ(creator.prepare(), Status::ok);
    ASSERT_GE(creator.descriptor(), 0);
    const std::string name = ShmSegment::name_of(getpid(), creator.descriptor());
    ASSERT_EQ(peer.open(name, 3 * 4096), Status::ok);
    ASSERT_EQ(creator.create(3 * 4096), Status::ok);
    EXPECT_EQ(creator.name(), name);
    auto *theirs = static_cast<char *>(peer.address());
    EXPECT_EQ(theirs[3 * 4096 - 1], 0);  // zero-filled to the end
    static_cast<char *>(creator.address())[3 * 4096 - 1] = 'c';
    EXPECT_EQ(theirs[3 * 4096 - 1], 'c');
}

// A file longer than the window's segment is not that segment (a reused number).
TEST(ShmSegment, OpeningSomethingLargerFails) {
    ShmSegment creator, peer;
    ASSERT_EQ(creator.create(8192), Status::ok);
    EXPECT_EQ(peer.open(creator.name(), 4096), Status::err_transport);
    EXPECT_EQ(peer.address(), nullptr);
}

TEST(ShmSegment, OpeningAMissingSegmentFails) {
    ShmSegment segment;
    EXPECT_EQ(segment.open("/proc/self/fd/99999", 4096), Status::err_transport);
    EXPECT_EQ(segment.address(), nullptr);
}

TEST(ShmSegment, EmptySegmentStillMaps) {
    ShmSegment segment;  // a window where every rank passes size 0
    ASSERT_EQ(segment.create(0), Status::ok);
    EXPECT_NE(segment.address(), nullptr);
}

}  // namespace
}  // namespace nbrma::transport::shm
