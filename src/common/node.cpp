#include "common/node.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace nbrma {

std::uint64_t node_key() {
    static const std::uint64_t key = [] {
        std::uint64_t hash = 1469598103934665603ull;  // FNV-1a
        auto mix = [&](const char *text, std::size_t length) {
            for (std::size_t i = 0; i < length; ++i) {
                hash ^= static_cast<unsigned char>(text[i]);
                hash *= 1099511628211ull;
            }
        };
        char text[256] = {0};
        gethostname(text, sizeof text - 1);
        mix(text, std::strlen(text));
        std::memset(text, 0, sizeof text);
        if (FILE *file = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
            const std::size_t length = std::fread(text, 1, sizeof text - 1, file);
            std::fclose(file);
            mix(text, length);
        }
        return hash;
    }();
    return key;
}

}  // namespace nbrma
