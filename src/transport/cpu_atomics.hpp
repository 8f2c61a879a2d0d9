// CPU atomics on memory this process maps: what the shared-memory transport's atomics
// do; and the same ops as plain loads and stores, which the engine's at-once path does
// itself under the target's accumulate stripes where the transport maps a window
// (Transport::mapped_window).
#ifndef NBRMA_TRANSPORT_CPU_ATOMICS_HPP
#define NBRMA_TRANSPORT_CPU_ATOMICS_HPP

#include <cstddef>
#include <cstdint>

#include "transport/transport.hpp"

namespace nbrma::transport {

// One CPU atomic on a word of T; returns the previous value.
template <typename T>
T apply_atomic(T *word, AtomicOp op, T operand, T compare) {
    T previous = 0;
    switch (op) {
        case AtomicOp::fetch_add:
            previous = __atomic_fetch_add(word, operand, __ATOMIC_SEQ_CST);
            break;
        case AtomicOp::compare_swap:
            previous = compare;
            __atomic_compare_exchange_n(word, &previous, operand, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST);
            break;
        case AtomicOp::swap:
            previous = __atomic_exchange_n(word, operand, __ATOMIC_SEQ_CST);
            break;
        case AtomicOp::fetch_and:
            previous = __atomic_fetch_and(word, operand, __ATOMIC_SEQ_CST);
            break;
        case AtomicOp::fetch_or:
            previous = __atomic_fetch_or(word, operand, __ATOMIC_SEQ_CST);
            break;
        case AtomicOp::fetch_xor:
            previous = __atomic_fetch_xor(word, operand, __ATOMIC_SEQ_CST);
            break;
    }
    return previous;
}

// The same on the word of `width` bytes (8, 4, 2 or 1) at `word`, aligned to its width:
// operand and compare in their low bytes, the previous value in the low bytes returned.
inline std::uint64_t apply_atomic_of_width(void *word, std::size_t width, AtomicOp op,
                                           std::uint64_t operand, std::uint64_t compare) {
    switch (width) {
        case 8:
            return apply_atomic(static_cast<std::uint64_t *>(word), op, operand, compare);
        case 4:
            return apply_atomic(static_cast<std::uint32_t *>(word), op,
                                static_cast<std::uint32_t>(operand),
                                static_cast<std::uint32_t>(compare));
        case 2:
            return apply_atomic(static_cast<std::uint16_t *>(word), op,
                                static_cast<std::uint16_t>(operand),
                                static_cast<std::uint16_t>(compare));
        default:
            return apply_atomic(static_cast<std::uint8_t *>(word), op,
                                static_cast<std::uint8_t>(operand),
                                static_cast<std::uint8_t>(compare));
    }
}

// What apply_atomic_of_width does, as plain loads and stores: for a word no other
// thread or process touches meanwhile (held under an accumulate stripe), at any alignment
// (MPI lets a window start and a displacement fall anywhere).
template <typename T>
T apply_plain(void *word, AtomicOp op, T operand, T compare) {
    T previous;
    __builtin_memcpy(&previous, word, sizeof previous);
    T next = previous;
    switch (op) {
        case AtomicOp::fetch_add: next = static_cast<T>(previous + operand); break;
        case AtomicOp::compare_swap:
            if (previous != compare) return previous;
            next = operand;
            break;
        case AtomicOp::swap: next = operand; break;
        case AtomicOp::fetch_and: next = previous & operand; break;
        case AtomicOp::fetch_or: next = previous | operand; break;
        case AtomicOp::fetch_xor: next = previous ^ operand; break;
    }
    __builtin_memcpy(word, &next, sizeof next);
    return previous;
}
inline std::uint64_t apply_plain_of_width(void *word, std::size_t width, AtomicOp op,
                                          std::uint64_t operand, std::uint64_t compare) {
    switch (width) {
        case 8:
            return apply_plain<std::uint64_t>(word, op, operand, compare);
        case 4:
            return apply_plain<std::uint32_t>(word, op, static_cast<std::uint32_t>(operand),
                                              static_cast<std::uint32_t>(compare));
        case 2:
            return apply_plain<std::uint16_t>(word, op, static_cast<std::uint16_t>(operand),
                                              static_cast<std::uint16_t>(compare));
        default:
            return apply_plain<std::uint8_t>(word, op, static_cast<std::uint8_t>(operand),
                                             static_cast<std::uint8_t>(compare));
    }
}

// The `width` bytes (8, 4, 2 or 1) at `bytes` as the low bytes of a word, and back: the
// operands and results of the atomics above (fixed-size copies, no library call).
inline std::uint64_t load_of_width(const void *bytes, std::size_t width) {
    switch (width) {
        case 8: {
            std::uint64_t value;
            __builtin_memcpy(&value, bytes, 8);
            return value;
        }
        case 4: {
            std::uint32_t value;
            __builtin_memcpy(&value, bytes, 4);
            return value;
        }
        case 2: {
            std::uint16_t value;
            __builtin_memcpy(&value, bytes, 2);
            return value;
        }
        default:
            return *static_cast<const std::uint8_t *>(bytes);
    }
}
inline void store_of_width(void *bytes, std::size_t width, std::uint64_t value) {
    switch (width) {
        case 8:
            __builtin_memcpy(bytes, &value, 8);
            break;
        case 4: {
            const auto word = static_cast<std::uint32_t>(value);
            __builtin_memcpy(bytes, &word, 4);
            break;
        }
        case 2: {
            const auto word = static_cast<std::uint16_t>(value);
            __builtin_memcpy(bytes, &word, 2);
            break;
        }
        default:
            *static_cast<std::uint8_t *>(bytes) = static_cast<std::uint8_t>(value);
    }
}

}  // namespace nbrma::transport

#endif  // NBRMA_TRANSPORT_CPU_ATOMICS_HPP
