// The target's accumulate stripes (layout/control_region.hpp) as one accumulate-family
// call holds them, in a window whose accumulates all apply under them
// (Capabilities::locked_accumulates, doc/design.md §3): taken in ascending order, each a
// compare-and-swap of its word from 0 to the origin's rank + 1, released by a store of 0.
// With the words mapped (mapped_control_word) they are CPU atomics (the at-once paths and
// the general path alike), else the transport's atomics on the target's control region.
#ifndef NBRMA_ENGINE_ACCUMULATE_STRIPES_HPP
#define NBRMA_ENGINE_ACCUMULATE_STRIPES_HPP

#include <cstdint>

#include "common/yield.hpp"
#include "layout/control_region.hpp"

namespace nbrma::engine {

// Words between two stripes' words (a cache line each).
constexpr std::uint64_t stripe_stride_words =
    (layout::ControlLayout::accumulate_stripe(1) - layout::ControlLayout::accumulate_stripe(0)) / 8;

// Waits for the stripe word another call holds, politely (Backoff: yielding where ranks
// outnumber cores), and takes it.
[[gnu::noinline]] inline void stripe_wait(std::uint64_t *word, std::uint64_t me) {
    Backoff backoff;
    std::uint64_t expected;
    do {
        while (__atomic_load_n(word, __ATOMIC_RELAXED) != 0) backoff.pause();
        expected = 0;
    } while (!__atomic_compare_exchange_n(word, &expected, me, false, __ATOMIC_ACQUIRE,
                                          __ATOMIC_RELAXED));
}

// Takes one stripe word: a compare-and-swap from 0, else stripe_wait.
inline void stripe_take(std::uint64_t *word, std::uint64_t me) {
    std::uint64_t expected = 0;
    if (__builtin_expect(!__atomic_compare_exchange_n(word, &expected, me, false,
                                                      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED),
                         0))
        stripe_wait(word, me);
}

// Takes every stripe of `mask` among the mapped words from `first` (stripe 0's word),
// lowest first.
inline void stripes_lock(std::uint64_t *first, std::uint32_t mask, std::uint64_t me) {
    if ((mask & (mask - 1)) == 0) {  // one stripe: the commonest call, without the loop
        stripe_take(first + stripe_stride_words * __builtin_ctz(mask), me);
        return;
    }
    for (std::uint32_t left = mask; left != 0; left &= left - 1)
        stripe_take(first + stripe_stride_words * __builtin_ctz(left), me);
}

// Releases them: what the call wrote is visible to the next holder (release stores).
inline void stripes_unlock(std::uint64_t *first, std::uint32_t mask) {
    if ((mask & (mask - 1)) == 0) {
        __atomic_store_n(first + stripe_stride_words * __builtin_ctz(mask), 0, __ATOMIC_RELEASE);
        return;
    }
    for (std::uint32_t left = mask; left != 0; left &= left - 1)
        __atomic_store_n(first + stripe_stride_words * __builtin_ctz(left), 0, __ATOMIC_RELEASE);
}

}  // namespace nbrma::engine

#endif  // NBRMA_ENGINE_ACCUMULATE_STRIPES_HPP
