// The vector loop and the streamed copy of copy_bytes (copy.hpp): four vectors loaded,
// then four stored, a step; 32-byte vectors where the CPU has AVX2, 16-byte ones
// otherwise.
#include "common/copy.hpp"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace nbrma::copy_detail {

namespace {

template <int Width>
inline void copy_vectors(std::uint8_t *to, const std::uint8_t *from, std::size_t bytes) {
    typedef std::uint8_t Vector __attribute__((vector_size(Width)));
    constexpr std::size_t step = 4 * Width;
    for (; bytes >= step; bytes -= step, from += step, to += step) {
        Vector v0, v1, v2, v3;  // (four registers: an array would go through the stack)
        __builtin_memcpy(&v0, from, Width);
        __builtin_memcpy(&v1, from + Width, Width);
        __builtin_memcpy(&v2, from + 2 * Width, Width);
        __builtin_memcpy(&v3, from + 3 * Width, Width);
        __builtin_memcpy(to, &v0, Width);
        __builtin_memcpy(to + Width, &v1, Width);
        __builtin_memcpy(to + 2 * Width, &v2, Width);
        __builtin_memcpy(to + 3 * Width, &v3, Width);
    }
    std::memcpy(to, from, bytes);  // under 4 vectors: glibc's short copy, no rep movsb
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) void copy_avx2(std::uint8_t *to, const std::uint8_t *from,
                                               std::size_t bytes) {
    copy_vectors<32>(to, from, bytes);
}

const bool has_avx2 = [] {
    __builtin_cpu_init();  // (before main: the CPU model may not be read yet)
    return __builtin_cpu_supports("avx2") != 0;
}();
#endif

#if defined(__x86_64__)
// Non-temporal stores of 4 vectors a step from a 64-byte aligned destination; what is
// left under a step is returned for memcpy.
__attribute__((target("avx2"))) std::size_t stream_avx2(std::uint8_t *to, const std::uint8_t *from,
                                                        std::size_t bytes) {
    std::size_t done = 0;
    for (; bytes - done >= 128; done += 128) {
        const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(from + done));
        const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(from + done + 32));
        const __m256i v2 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(from + done + 64));
        const __m256i v3 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(from + done + 96));
        _mm256_stream_si256(reinterpret_cast<__m256i *>(to + done), v0);
        _mm256_stream_si256(reinterpret_cast<__m256i *>(to + done + 32), v1);
        _mm256_stream_si256(reinterpret_cast<__m256i *>(to + done + 64), v2);
        _mm256_stream_si256(reinterpret_cast<__m256i *>(to + done + 96), v3);
    }
    return done;
}

std::size_t stream_sse2(std::uint8_t *to, const std::uint8_t *from, std::size_t bytes) {
    std::size_t done = 0;
    for (; bytes - done >= 64; done += 64) {
        const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(from + done));
        const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(from + done + 16));
        const __m128i v2 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(from + done + 32));
        const __m128i v3 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(from + done + 48));
        _mm_stream_si128(reinterpret_cast<__m128i *>(to + done), v0);
        _mm_stream_si128(reinterpret_cast<__m128i *>(to + done + 16), v1);
        _mm_stream_si128(reinterpret_cast<__m128i *>(to + done + 32), v2);
        _mm_stream_si128(reinterpret_cast<__m128i *>(to + done + 48), v3);
    }
    return done;
}
#endif

}  // namespace

void copy_stream(void *to, const void *from, std::size_t bytes) {
    auto *destination = static_cast<std::uint8_t *>(to);
    const auto *source = static_cast<const std::uint8_t *>(from);
#if defined(__x86_64__)
    // Up to the destination's next cache line with memcpy, then streamed, then the tail.
    const std::size_t head =
        std::min((64 - (reinterpret_cast<std::uintptr_t>(destination) & 63)) & 63, bytes);
    std::memcpy(destination, source, head);
    destination += head;
    source += head;
    bytes -= head;
    const std::size_t done = has_avx2 ? stream_avx2(destination, source, bytes)
                                      : stream_sse2(destination, source, bytes);
    std::memcpy(destination + done, source + done, bytes - done);
    _mm_sfence();  // streamed stores are weakly ordered: visible before any later store
#else
    std::memcpy(destination, source, bytes);
#endif
}

void copy_loop(void *to, const void *from, std::size_t bytes) {
    auto *destination = static_cast<std::uint8_t *>(to);
    const auto *source = static_cast<const std::uint8_t *>(from);
#if defined(__x86_64__)
    if (has_avx2) {
        copy_avx2(destination, source, bytes);
        return;
    }
#endif
    copy_vectors<16>(destination, source, bytes);
}

}  // namespace nbrma::copy_detail
