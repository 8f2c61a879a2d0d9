// copy_bytes: the engine's copies of RMA data (puts into and gets from mapped memory,
// datatype packing). memcpy, except where glibc's memcpy is pathologically slow.
//
// glibc (2.36) copies 2 KiB and more with `rep movsb`. On AMD Zen cores `rep movsb` runs
// 15-20x slower when the destination lies 1 to 63 bytes past the source modulo 4 KiB
// (1.8 GB/s against 35 GB/s on this project's EPYC test machine). That is the common case
// of a get into a malloc'ed buffer (16 bytes into its page) from a page-aligned window:
// those copies take a vector loop instead, as fast as memcpy elsewhere.
#ifndef NBRMA_COMMON_COPY_HPP
#define NBRMA_COMMON_COPY_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace nbrma {

namespace copy_detail {
// glibc's x86 `rep movsb` threshold is 2 KiB and more; the vector loop serves from there.
constexpr std::size_t loop_from = 2048;
void copy_loop(void *to, const void *from, std::size_t bytes);
}  // namespace copy_detail

// memcpy(to, from, bytes): the regions must not overlap.
inline void copy_bytes(void *to, const void *from, std::size_t bytes) {
#if defined(__x86_64__)
    const std::uintptr_t distance =
        (reinterpret_cast<std::uintptr_t>(to) - reinterpret_cast<std::uintptr_t>(from)) & 4095;
    if (bytes >= copy_detail::loop_from && distance != 0 && distance < 64) {
        copy_detail::copy_loop(to, from, bytes);
        return;
    }
#endif
    std::memcpy(to, from, bytes);
}

}  // namespace nbrma

#endif
