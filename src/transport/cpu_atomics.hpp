// CPU atomics on memory this process maps: what the shared-memory transport's atomics
// do, and what the engine's at-once path does itself where the transport maps a window
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

// An accumulate (nothing fetched) of `elements` elements of `width` bytes (4, 2 or 1),
// contiguous at `target` and aligned to their width, by `op` (anything but
// compare_swap) with the operands at `origin`. On x86-64, every aligned 8-byte word the
// elements cover whole is one 64-bit atomic on its lanes: a locked and/or/xor, a store
// for swap, a compare-and-swap loop of a lane-wise sum for fetch_add. x86 keeps locked
// operations of different sizes on one aligned word atomic toward each other, so each
// element is still updated atomically against origins that update it alone. The
// elements of a partly covered word (and every element elsewhere) are one atomic each:
// no word outside the elements is written, not even with its own value.
inline void accumulate_elements(std::uint8_t *target, const std::uint8_t *origin, std::size_t width,
                                std::size_t elements, AtomicOp op) {
    std::size_t done = 0;
#if defined(__x86_64__)
    const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(target);
    const std::uintptr_t first = (start + 7) & ~std::uintptr_t{7};
    const std::uintptr_t end = start + width * elements;
    const std::size_t head = (first - start) / width;  // elements before the first whole word
    for (; done < head && done < elements; ++done)
        apply_atomic_of_width(target + width * done, width, op,
                              load_of_width(origin + width * done, width), 0);
    const std::uint64_t high = width == 1   ? 0x8080808080808080ull
                               : width == 2 ? 0x8000800080008000ull
                                            : 0x8000000080000000ull;
    for (std::uintptr_t word = first; word + 8 <= end; word += 8, done += 8 / width) {
        auto *lanes = reinterpret_cast<std::uint64_t *>(word);
        std::uint64_t operand;
        __builtin_memcpy(&operand, origin + (word - start), 8);
        switch (op) {
            case AtomicOp::fetch_and:
                __atomic_fetch_and(lanes, operand, __ATOMIC_SEQ_CST);
                break;
            case AtomicOp::fetch_or:
                __atomic_fetch_or(lanes, operand, __ATOMIC_SEQ_CST);
                break;
            case AtomicOp::fetch_xor:
                __atomic_fetch_xor(lanes, operand, __ATOMIC_SEQ_CST);
                break;
            case AtomicOp::swap:
                __atomic_store_n(lanes, operand, __ATOMIC_SEQ_CST);
                break;
            default: {  // fetch_add: each lane's sum modulo its width, no carry across lanes
                std::uint64_t old = __atomic_load_n(lanes, __ATOMIC_RELAXED), sum;
                do {
                    sum = ((old & ~high) + (operand & ~high)) ^ ((old ^ operand) & high);
                } while (!__atomic_compare_exchange_n(lanes, &old, sum, false, __ATOMIC_SEQ_CST,
                                                      __ATOMIC_RELAXED));
            }
        }
    }
#endif
    for (; done < elements; ++done)
        apply_atomic_of_width(target + width * done, width, op,
                              load_of_width(origin + width * done, width), 0);
}

}  // namespace nbrma::transport

#endif  // NBRMA_TRANSPORT_CPU_ATOMICS_HPP
