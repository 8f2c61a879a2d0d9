// A 128-bit hash of explored states, shared by the unit tests that enumerate
// interleavings exhaustively (the lock protocol's and the active-target engine's
// depth-first searches): a state reached twice is expanded once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace nbrma::unittest {

struct Hash128 {
    std::uint64_t a, b;
    bool operator==(const Hash128 &o) const { return a == o.a && b == o.b; }
};
struct Hash128Hasher {
    std::size_t operator()(const Hash128 &h) const { return h.a ^ (h.b * 0x9e3779b97f4a7c15ull); }
};

class Hasher {
  public:
    void bytes(const void *p, std::size_t n) {
        const auto *c = static_cast<const std::uint8_t *>(p);
        std::size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            std::uint64_t w;
            std::memcpy(&w, c + i, 8);
            word(w);
        }
        std::uint64_t tail = n;
        for (; i < n; ++i) tail = tail << 8 | c[i];
        word(tail);
    }
    void word(std::uint64_t w) {
        a_ = mix(a_ ^ w);
        b_ = mix(b_ + w * 0xff51afd7ed558ccdull + 0x2545F4914F6CDD1Dull);
    }
    Hash128 result() const { return {mix(a_ ^ 0x1234), mix(b_ ^ 0x5678)}; }

  private:
    static std::uint64_t mix(std::uint64_t z) {
        z += 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    std::uint64_t a_ = 0x6a09e667f3bcc908ull, b_ = 0xbb67ae8584caa73bull;
};

}  // namespace nbrma::unittest
