// The vector loop of copy_bytes (copy.hpp): four vectors loaded, then four stored, a
// step; 32-byte vectors where the CPU has AVX2, 16-byte ones otherwise.
#include "common/copy.hpp"

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

}  // namespace

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
