// copy_bytes: the engine's copies of RMA data (puts into and gets from mapped memory,
// datatype packing). memcpy, except for large copies and where glibc's memcpy is
// pathologically slow.
//
// From 1 MiB on, the destination is written with non-temporal (streaming) stores, then
// an sfence. glibc 2.36 streams only past 3/4 of the shared cache (192 MiB as it reads
// this project's EPYC VM), so a 1 MiB copy takes its vector loop, whose stores read every
// destination line first: 12 GB/s against 21 GB/s streamed, 32 messages of 1 MiB to
// distinct places (OSU's bandwidth loop). The price: a copy whose destination is read
// again soon from cache (the same 1 MiB rewritten in a loop) runs at 20 GB/s streamed
// against 32 GB/s cached.
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
// Copies of this many bytes and more stream past the caches (copy_stream).
constexpr std::size_t stream_from = std::size_t{1} << 20;
void copy_loop(void *to, const void *from, std::size_t bytes);
void copy_stream(void *to, const void *from, std::size_t bytes);
}  // namespace copy_detail

namespace copy_detail {
// copy_bytes past its inline sizes.
inline void copy_large(void *to, const void *from, std::size_t bytes) {
#if defined(__x86_64__)
    if (bytes >= stream_from) {
        copy_stream(to, from, bytes);
        return;
    }
    const std::uintptr_t distance =
        (reinterpret_cast<std::uintptr_t>(to) - reinterpret_cast<std::uintptr_t>(from)) & 4095;
    if (bytes >= loop_from && distance != 0 && distance < 64) {
        copy_loop(to, from, bytes);
        return;
    }
#endif
    std::memcpy(to, from, bytes);
}
}  // namespace copy_detail

// memcpy(to, from, bytes): the regions must not overlap. Up to 16 bytes (an RMA call's
// usual element or two) inline, as two loads and two stores of the widest size that fits
// (overlapping where bytes is not a power of two), not a call into memcpy.
[[gnu::always_inline]] inline void copy_bytes(void *to, const void *from, std::size_t bytes) {
    if (bytes > 16) {
        copy_detail::copy_large(to, from, bytes);
        return;
    }
    auto *d = static_cast<unsigned char *>(to);
    const auto *s = static_cast<const unsigned char *>(from);
    const auto two = [&](auto word) {
        constexpr std::size_t w = sizeof word;
        decltype(word) head, tail;
        std::memcpy(&head, s, w);
        std::memcpy(&tail, s + bytes - w, w);
        std::memcpy(d, &head, w);
        std::memcpy(d + bytes - w, &tail, w);
    };
    if (bytes >= 8)
        two(std::uint64_t{});
    else if (bytes >= 4)
        two(std::uint32_t{});
    else if (bytes >= 2)
        two(std::uint16_t{});
    else if (bytes == 1)
        *d = *s;
}

}  // namespace nbrma

#endif
