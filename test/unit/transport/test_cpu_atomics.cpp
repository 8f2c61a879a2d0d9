// The CPU atomics of mapped windows (transport/cpu_atomics.hpp): accumulate_elements
// against one plain reduction per element, at every alignment, width, length and op,
// with the bytes around the elements left as they were; and its lane-wise words against
// single-element atomics on the same bytes from another thread.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>

#include "transport/cpu_atomics.hpp"

namespace nbrma::transport {
namespace {

// What op does to one element of `width` bytes, without atomics.
std::uint64_t reduce(AtomicOp op, std::uint64_t target, std::uint64_t operand) {
    switch (op) {
        case AtomicOp::fetch_add:
            return target + operand;
        case AtomicOp::fetch_and:
            return target & operand;
        case AtomicOp::fetch_or:
            return target | operand;
        case AtomicOp::fetch_xor:
            return target ^ operand;
        default:
            return operand;
    }
}

TEST(CpuAtomics, AccumulateElementsEqualsOneReductionPerElement) {
    constexpr std::size_t span = 128;
    std::mt19937_64 random(7);
    alignas(64) std::array<std::uint8_t, span> memory, expected, origin;
    for (AtomicOp op : {AtomicOp::fetch_add, AtomicOp::fetch_and, AtomicOp::fetch_or,
                        AtomicOp::fetch_xor, AtomicOp::swap})
        for (std::size_t width : {1u, 2u, 4u})
            for (std::size_t start = 0; start < 16; start += width)
                for (std::size_t elements = 1; elements <= 24; ++elements) {
                    for (std::size_t i = 0; i < span; ++i) {
                        memory[i] = expected[i] = static_cast<std::uint8_t>(random());
                        origin[i] = static_cast<std::uint8_t>(random());
                    }
                    for (std::size_t e = 0; e < elements; ++e) {
                        std::uint8_t *at = expected.data() + start + width * e;
                        store_of_width(at, width,
                                       reduce(op, load_of_width(at, width),
                                              load_of_width(origin.data() + width * e, width)));
                    }
                    accumulate_elements(memory.data() + start, origin.data(), width, elements, op);
                    ASSERT_EQ(0, std::memcmp(memory.data(), expected.data(), span))
                        << "op " << static_cast<int>(op) << ", width " << width << ", start "
                        << start << ", " << elements << " elements";
                }
}

// Sums of 8 chars into one word against byte atomics on one of its lanes: every lane
// counts exactly (a sum carried into a neighbour lane, or an update lost between the
// word's read and its write, shows).
TEST(CpuAtomics, LaneSumsAreAtomicAgainstSingleElementAtomics) {
    constexpr int rounds = 200000;
    alignas(8) std::uint8_t word[8] = {};
    const std::uint8_t ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    std::thread single([&] {
        for (int i = 0; i < rounds; ++i)
            apply_atomic_of_width(word + 3, 1, AtomicOp::fetch_add, 1, 0);
    });
    for (int i = 0; i < rounds; ++i) accumulate_elements(word, ones, 1, 8, AtomicOp::fetch_add);
    single.join();
    for (int lane = 0; lane < 8; ++lane)
        EXPECT_EQ(static_cast<std::uint8_t>(lane == 3 ? 2 * rounds : rounds), word[lane])
            << "lane " << lane;
}

}  // namespace
}  // namespace nbrma::transport
