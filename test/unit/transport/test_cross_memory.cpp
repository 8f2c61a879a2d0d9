// Cross-memory attach permission (src/transport/shm/cross_memory.hpp): Yama's
// ptrace_scope as read, NBRMA_CMA=0, the probe a peer reads at window creation, and
// the reference-counted PR_SET_PTRACER consent (given only where Yama's scope is 1 and
// nobody else consented; withdrawn with the last share).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "transport/shm/cross_memory.hpp"

namespace nbrma::transport::shm {
namespace {

std::string scope_file(const char *contents) {
    char path[] = "/tmp/nbrma-scope-XXXXXX";
    int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    FILE *file = fdopen(fd, "w");
    std::fputs(contents, file);
    std::fclose(file);
    return path;
}

TEST(CrossMemory, ReadsYamaPtraceScope) {
    for (const char *text : {"0\n", "1\n", "2\n", "3"}) {
        std::string path = scope_file(text);
        EXPECT_EQ(yama_ptrace_scope(path.c_str()), text[0] - '0') << text;
        std::remove(path.c_str());
    }
    std::string junk = scope_file("junk");
    EXPECT_EQ(yama_ptrace_scope(junk.c_str()), -1);
    std::remove(junk.c_str());
    EXPECT_EQ(yama_ptrace_scope("/nonexistent/ptrace_scope"), -1);  // no Yama
}

TEST(CrossMemory, NbrmaCmaZeroForbidsIt) {
    unsetenv("NBRMA_CMA");
    EXPECT_FALSE(cross_memory_forbidden());
    setenv("NBRMA_CMA", "1", 1);
    EXPECT_FALSE(cross_memory_forbidden());
    setenv("NBRMA_CMA", "0", 1);
    EXPECT_TRUE(cross_memory_forbidden());
    unsetenv("NBRMA_CMA");
}

TEST(CrossMemory, ProbeReadsTheProbeWordOnly) {
    EXPECT_EQ(probe_peer(getpid(), probe_address()), cma_ok);
    // another word of ours is not the probe word; no mapping there; no such process
    static const std::uint64_t other = 42;
    EXPECT_EQ(probe_peer(getpid(), reinterpret_cast<std::uintptr_t>(&other)), cma_unreachable);
    EXPECT_EQ(probe_peer(getpid(), 8), cma_unreachable);
    EXPECT_EQ(probe_peer(0x3fffffff, probe_address()), cma_unreachable);
}

TEST(CrossMemory, ConsentOnlyWhereYamaAsksAndNobodyElseGaveIt) {
    ASSERT_EQ(PtracerGrant::shares(), 0);
    {
        PtracerGrant none, readable, scope2;
        none.acquire(-1, false);    // no Yama
        readable.acquire(1, true);  // someone else consented already
        scope2.acquire(2, false);   // consent cannot help
        EXPECT_FALSE(none.held());
        EXPECT_FALSE(readable.held());
        EXPECT_FALSE(scope2.held());
        EXPECT_EQ(PtracerGrant::shares(), 0);
    }
    PtracerGrant first, second, third;
    first.acquire(1, false);
    EXPECT_TRUE(first.held());
    first.acquire(1, false);  // one share per window
    EXPECT_EQ(PtracerGrant::shares(), 1);
    second.acquire(1, true);  // readable through our own consent: still a share
    EXPECT_TRUE(second.held());
    EXPECT_EQ(PtracerGrant::shares(), 2);
    first.release();
    first.release();  // idempotent
    EXPECT_EQ(PtracerGrant::shares(), 1);
    {
        PtracerGrant scoped;
        scoped.acquire(1, false);
        EXPECT_EQ(PtracerGrant::shares(), 2);
    }  // the destructor gives the share back
    EXPECT_EQ(PtracerGrant::shares(), 1);
    second.release();
    EXPECT_EQ(PtracerGrant::shares(), 0);
    third.acquire(0, false);
    EXPECT_FALSE(third.held());
}

// Whether a child process (which needs our consent under Yama 1) can read our probe.
bool child_can_read_us() {
    const pid_t parent = getpid();
    pid_t child = fork();
    if (child == 0) _exit(probe_peer(parent, probe_address()) == cma_ok ? 0 : 1);
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(CrossMemory, ConsentIsWithdrawnWithTheLastShare) {
    const int scope = yama_ptrace_scope();
    if (scope != 1)
        GTEST_SKIP() << "Yama ptrace_scope is " << scope
                     << " (-1: no Yama): consent is never given here, nothing to withdraw";
    if (child_can_read_us())
        GTEST_SKIP() << "this process is traceable already (someone else consented)";
    PtracerGrant first, second;
    first.acquire(scope, false);
    second.acquire(scope, true);
    EXPECT_TRUE(child_can_read_us());
    first.release();
    EXPECT_TRUE(child_can_read_us());  // a window still holds a share
    second.release();
    EXPECT_FALSE(child_can_read_us());
}

}  // namespace
}  // namespace nbrma::transport::shm
