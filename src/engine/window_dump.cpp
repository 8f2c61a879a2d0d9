// The window's debug dump (nbrma_debug_dump, which test/rma/runtests calls from gdb when
// a test hangs): its epochs, their per-target state, pending operations and flushes, the
// lock word and queue nodes of its control region.
#include "engine/window.hpp"

namespace nbrma::engine {

void Window::dump(std::FILE *out) const {
    static const char *const phases[] = {"none",     "acquiring", "held",
                                         "flushing", "releasing", "released"};
    std::fprintf(out,
                 "  window rank %d of %d: %zu epochs queued, %zu open, %zu flushes, %d "
                 "transport flushes, runs %llu\n",
                 rank_, size_, epochs_.size(), open_.size(), flushes_.size(), transport_flushes_,
                 static_cast<unsigned long long>(runs_));
    // The at-once epoch first (it is not in the queue), then the queue in order.
    std::vector<const Epoch *> epochs;
    if (at_once_) epochs.push_back(at_once_);
    for (const auto &epoch : epochs_) epochs.push_back(epoch.get());
    for (const Epoch *epoch : epochs) {
        std::fprintf(out, "    epoch %llu %s %s %s%s failure %d\n",
                     static_cast<unsigned long long>(epoch->id()), epoch_kind_name(epoch->kind()),
                     epoch_path_name(epoch->path()), engine_state_name(epoch->state()),
                     epoch->open() ? " open" : " closed", static_cast<int>(epoch->failure()));
        for (int rank = 0; rank < size_; ++rank) {
            const TargetState *state = epoch->find(rank);
            if (!state) continue;
            char lock[160];
            if (state->polling)
                std::snprintf(lock, sizeof lock, "polled %u times, not queued", state->polls);
            else
                state->operation.describe(lock, sizeof lock);
            std::fprintf(out, "      target %d: %s, %zu pending, lock %s\n", rank,
                         phases[static_cast<int>(state->phase)], state->pending.size(), lock);
        }
    }
    for (int peer = 0; peer < size_; ++peer) {
        const PeerFlush &flush = peer_flushes_[peer];
        if (flush.last_run == 0) continue;
        std::fprintf(out, "    peer %d: last run %llu, flushed %llu, flush in flight %d\n", peer,
                     static_cast<unsigned long long>(flush.last_run),
                     static_cast<unsigned long long>(flush.flushed), flush.in_flight ? 1 : 0);
    }
    const sync::LockWord word =
        sync::LockWord::decode(control_word(layout::ControlLayout::lock_word));
    std::fprintf(out,
                 "    lock word: active %u waiting %u tail %u head %d, head rank word %#llx, "
                 "doorway tail %llu\n",
                 word.active, word.waiting, word.tail, word.head ? 1 : 0,
                 static_cast<unsigned long long>(control_word(layout::ControlLayout::head_rank)),
                 static_cast<unsigned long long>(control_word(layout::ControlLayout::door_tail)));
    for (int target = 0; target < size_; ++target) {
        const std::uint64_t grant = control_word(layout_.node_grant(target));
        const std::uint64_t next = control_word(layout_.node_next(target));
        const std::uint64_t top = control_word(layout_.node_top(target));
        const std::uint64_t count = control_word(layout_.node_count(target));
        const std::uint64_t below = control_word(layout_.node_below(target));
        const std::uint64_t door_next = control_word(layout_.node_door_next(target));
        if (grant || next || top || count || below || door_next)
            std::fprintf(out,
                         "    node for target %d: grant %llu next %#llx readers top %llu count "
                         "%llu below %llu doorway next %llu\n",
                         target, static_cast<unsigned long long>(grant),
                         static_cast<unsigned long long>(next),
                         static_cast<unsigned long long>(top),
                         static_cast<unsigned long long>(count),
                         static_cast<unsigned long long>(below),
                         static_cast<unsigned long long>(door_next));
    }
}

}  // namespace nbrma::engine
