#include "engine/progress.hpp"

#include <algorithm>
#include <vector>

#include "common/yield.hpp"
#include "engine/window.hpp"

namespace nbrma::engine {

namespace {
std::vector<Window *> &windows() {
    static std::vector<Window *> list;
    return list;
}
void (*external_poke)() = nullptr;
bool sweeping = false;
int serving = 0;  // registered windows whose transport needs our poll to serve peers
}  // namespace

void progress_register(Window *window) {
    windows().push_back(window);
    if (window->transport().needs_target_progress()) ++serving;
}

void progress_unregister(Window *window) {
    auto &list = windows();
    const auto end = std::remove(list.begin(), list.end(), window);
    if (end == list.end()) return;
    list.erase(end, list.end());
    if (window->transport().needs_target_progress()) --serving;
}

bool progress_sweep() {
    if (sweeping) return false;  // a completion hook re-entered progress
    sweeping = true;
    bool moved = false;
    for (std::size_t i = 0; i < windows().size(); ++i) moved |= windows()[i]->progress();
    sweeping = false;
    return moved;
}

bool progress_pending() {
    for (Window *window : windows())
        if (!window->idle()) return true;
    return false;
}

bool progress_wanted() { return serving > 0 || progress_pending(); }

void progress_set_external(void (*poke)()) { external_poke = poke; }

Status wait_request(Request *request) {
    Backoff backoff;
    unsigned idle = 0;
    while (!request->complete()) {
        if (progress_sweep()) {
            idle = 0;
            continue;
        }
        if (++idle % 16 == 0 && external_poke) external_poke();
        if (!request->complete()) backoff.pause();
    }
    return request->status();
}

}  // namespace nbrma::engine
