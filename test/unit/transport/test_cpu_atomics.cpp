// The CPU atomics of mapped memory and their plain twins (transport/cpu_atomics.hpp):
// apply_plain_of_width, which the at-once path runs under an accumulate stripe, leaves the
// word and returns the previous value exactly as apply_atomic_of_width does, at every
// width and op, and touches no byte beside the word; at an unaligned address too.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>

#include "transport/cpu_atomics.hpp"

namespace nbrma::transport {
namespace {

TEST(CpuAtomics, PlainOpsEqualTheAtomicOnes) {
    std::mt19937_64 random(11);
    for (AtomicOp op : {AtomicOp::fetch_add, AtomicOp::compare_swap, AtomicOp::swap,
                        AtomicOp::fetch_and, AtomicOp::fetch_or, AtomicOp::fetch_xor})
        for (std::size_t width : {1u, 2u, 4u, 8u})
            for (int round = 0; round < 200; ++round) {
                alignas(16) std::array<std::uint8_t, 24> atomic, plain;
                for (auto &byte : atomic) byte = static_cast<std::uint8_t>(random());
                plain = atomic;
                const std::array<std::uint8_t, 24> unchanged = atomic;
                const std::uint64_t operand = random();
                // half the compare-and-swaps find the word they compare with
                std::uint64_t compare = random();
                if (round % 2) compare = load_of_width(atomic.data() + 8, width);
                const std::uint64_t before_atomic =
                    apply_atomic_of_width(atomic.data() + 8, width, op, operand, compare);
                const std::uint64_t before_plain =
                    apply_plain_of_width(plain.data() + 8, width, op, operand, compare);
                EXPECT_EQ(before_plain, before_atomic) << int(op) << " width " << width;
                EXPECT_EQ(std::memcmp(plain.data(), atomic.data(), plain.size()), 0)
                    << int(op) << " width " << width;
                // the same word three bytes further on (not aligned): the same result
                alignas(16) std::array<std::uint8_t, 24> shifted{};
                std::memcpy(shifted.data() + 11, unchanged.data() + 8, width);
                EXPECT_EQ(apply_plain_of_width(shifted.data() + 11, width, op, operand, compare),
                          before_atomic);
                EXPECT_EQ(std::memcmp(shifted.data() + 11, atomic.data() + 8, width), 0);
            }
}

TEST(CpuAtomics, PlainSumWrapsAroundItsWidth) {
    alignas(8) std::uint8_t bytes[8] = {0xff, 0x7f, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(apply_plain_of_width(bytes, 1, AtomicOp::fetch_add, 1, 0), 0xffu);
    EXPECT_EQ(bytes[0], 0);
    EXPECT_EQ(bytes[1], 0x7f);  // no carry into the next byte
    EXPECT_EQ(apply_plain_of_width(bytes, 2, AtomicOp::fetch_add, 0x8101, 0), 0x7f00u);
    EXPECT_EQ(load_of_width(bytes, 2), 0x0001u);
    EXPECT_EQ(bytes[2], 0);
}

}  // namespace
}  // namespace nbrma::transport
