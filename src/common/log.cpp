#include "common/log.hpp"
#include "common/settings.hpp"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace nbrma {

namespace {
std::atomic<int> log_rank{-1};  // set by window creation, on any thread
}

int detail::read_verbose_level() {
    static const int level = [] {
        const char *value = settings::env(settings::Id::verbose);
        return value ? std::atoi(value) : 0;
    }();
    verbose_cache.store(level, std::memory_order_relaxed);
    return level;
}

void set_log_rank(int rank) { log_rank = rank; }

void log(int level, const char *format, ...) {
    if (verbose_level() < level) return;
    char line[512];
    va_list args;
    va_start(args, format);
    std::vsnprintf(line, sizeof line, format, args);
    va_end(args);
    std::fprintf(stderr, "nbrma[%d]: %s\n", log_rank.load(std::memory_order_relaxed), line);
}

}  // namespace nbrma
