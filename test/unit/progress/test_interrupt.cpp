// The rank's side of NBRMA_PROGRESS=interrupt (progress/interrupt.hpp) on a help table
// made in this process (no helper): help wanted is counted once per rank, a wake-up
// ends the progress thread's futex sleep, and a sleep whose ticket moved on does not
// start. The helper program and the whole mode run in test/rma (progress_thread
// interrupt, helper_lifecycle).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "progress/interrupt.hpp"

using namespace nbrma;
using namespace nbrma::engine;

namespace {

class InterruptTable : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string name;
        std::size_t bytes = 0;
        ASSERT_EQ(interrupt::create_table(3, 2, &name, &bytes), Status::ok);
        EXPECT_EQ(bytes, helper::table_bytes(3));
        EXPECT_EQ(interrupt::table_bytes(), bytes);
        interrupt::join(1);  // slot 1: served by helper 1 of 2
        ASSERT_TRUE(interrupt::attached());
        slot_ = interrupt::my_slot();
        header_ = interrupt::table_header();
    }
    void TearDown() override {
        interrupt::leave();
        EXPECT_FALSE(interrupt::attached());
        EXPECT_EQ(slot_->presence.load(), helper::slot_left);
    }
    helper::RankSlot *slot_ = nullptr;
    helper::HelpHeader *header_ = nullptr;
};

TEST_F(InterruptTable, SlotsAreOneCacheLineEachAfterTheHeader) {
    EXPECT_EQ(header_->magic, helper::table_magic);
    EXPECT_EQ(header_->slots, 3u);
    EXPECT_EQ(header_->helpers, 2u);
    EXPECT_EQ(slot_, helper::table_slot(header_, 1));
    EXPECT_EQ(slot_->pid.load(), static_cast<std::int32_t>(getpid()));
    EXPECT_EQ(interrupt::bell(1), &slot_->bell);
    EXPECT_EQ(interrupt::bell(3), nullptr);
    EXPECT_EQ(interrupt::bell(-1), nullptr);
}

TEST_F(InterruptTable, HelpWantedIsCountedOncePerRank) {
    std::atomic<std::uint32_t> &wanted = header_->wanted[1];
    EXPECT_EQ(wanted.load(), 0u);
    interrupt::want(5);
    EXPECT_EQ(slot_->watch.load(), 6u);  // wake me when the bell passes 5
    EXPECT_EQ(wanted.load(), 1u);
    interrupt::want(9);  // a later sweep: the watch moves, the count stays
    EXPECT_EQ(slot_->watch.load(), 10u);
    EXPECT_EQ(wanted.load(), 1u);
    EXPECT_EQ(header_->wanted[0].load(), 0u);  // the other helper's share is untouched
    interrupt::unwant();
    EXPECT_EQ(slot_->watch.load(), 0u);
    EXPECT_EQ(wanted.load(), 0u);
    interrupt::unwant();  // twice: no underflow
    EXPECT_EQ(wanted.load(), 0u);
}

TEST_F(InterruptTable, WaitsInsideNbrmaAreCounted) {
    EXPECT_TRUE(interrupt::enter_wait());  // the first in
    EXPECT_FALSE(interrupt::enter_wait());
    EXPECT_EQ(slot_->inside.load(), 2u);
    EXPECT_FALSE(interrupt::leave_wait());
    EXPECT_TRUE(interrupt::leave_wait());  // the last out
    EXPECT_EQ(slot_->inside.load(), 0u);
}

TEST_F(InterruptTable, AWakeUpEndsTheSleep) {
    const std::uint32_t ticket = slot_->futex.load();
    std::atomic<bool> woke{false};
    std::thread sleeper([&] {
        helper::futex_wait(&slot_->futex, ticket);  // no timeout
        woke = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(woke.load());
    helper::wake_slot(slot_);
    sleeper.join();
    EXPECT_TRUE(woke.load());
    EXPECT_EQ(slot_->futex.load(), ticket + 1);
}

TEST_F(InterruptTable, AStaleTicketDoesNotSleep) {
    const std::uint32_t ticket = slot_->futex.load();
    helper::wake_slot(slot_);  // the wake-up came before the sleep
    const auto t0 = std::chrono::steady_clock::now();
    helper::futex_wait(&slot_->futex, ticket);  // returns at once: the ticket moved on
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST_F(InterruptTable, ATimedSleepEnds) {
    const auto t0 = std::chrono::steady_clock::now();
    helper::futex_wait(&slot_->futex, slot_->futex.load(), 2000000);  // 2 ms
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1));
}

TEST(InterruptHelper, FoundThroughNbrmaHelper) {
    setenv("NBRMA_HELPER", "/some/where/nbrma-helper", 1);
    EXPECT_EQ(interrupt::find_helper(), "/some/where/nbrma-helper");
    unsetenv("NBRMA_HELPER");
}

}  // namespace
