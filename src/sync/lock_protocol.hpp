// The passive-target lock protocol: FIFO reader/writer queue lock over the lock
// word of lock_word.hpp, driven only by transport atomics and puts. Waiting is
// always on the requester's own control region (no remote polling); the target's
// CPU never takes part.
//
// Acquire exclusive: CAS tail := me. If the queue was empty the lock is ours when
//   no shared holder is active; otherwise we become `head` and the last shared
//   holder grants us. If an exclusive requester T was tail, we write
//   next = (me, readers queued behind T) into T's node and T hands over at release.
// Acquire shared: CAS; with no exclusive tail, active += 1 and the lock is ours;
//   otherwise waiting += 1 and we register with the tail's node: swap ourselves onto
//   its reader stack (`top`), keep what we found there as our `below`, then count
//   ourselves in its `count`. That exclusive wakes us when it releases.
// Release exclusive: if still tail, CAS tail := 0 and turn `waiting` into `active`;
//   else wait locally for the successor's `next`, then either grant it (no readers
//   between us) or make it `head` behind those readers. Then wake our readers: wait
//   locally until `count` says all of them registered, then walk the stack from `top`,
//   reading each reader's `below` (a get) before granting it. Constant state per
//   request, whatever the number of ranks; one round trip per reader woken.
// Release shared: CAS active -= 1; the last holder out grants the head, whose rank it
//   meets at the target's head_rank word (lock_word.hpp: HeadRank): the head swaps its
//   rank in, the last holder CASes 0 to drained, and whoever comes second acts (the
//   holder clears the word and grants; the head clears it and holds the lock). An
//   exclusive that hands over to a successor behind readers puts the successor's rank
//   there itself before it wakes the readers.
// The doorway: an operation whose CAS of the lock word has failed doorway_after() times
//   (the first failure is mostly a wrong guess of the word) queues in the target's
//   doorway, an MCS queue of its own (swap the doorway tail, link into the predecessor's
//   door_next, wait locally for its grant), and retries the CAS only once through. It
//   leaves as soon as its CAS took (or an exclusive release found its successor): CAS
//   the doorway tail back to 0, or wait locally for the next one's link and grant it.
//   Only the one operation in the doorway and newcomers on their first attempts then
//   compete for the word, so a burst of p requests to one target costs each a constant
//   number of atomics instead of O(p) failed CASes. The doorway is held only across
//   CASes, never across a wait for the lock itself; like wait_successor, leaving it may
//   wait for the next operation's link, which that rank posts in its next advance.
#ifndef NBRMA_SYNC_LOCK_PROTOCOL_HPP
#define NBRMA_SYNC_LOCK_PROTOCOL_HPP

#include <cstdint>

#include "common/status.hpp"
#include "layout/control_region.hpp"
#include "sync/lock_word.hpp"
#include "transport/transport.hpp"

namespace nbrma::sync {

using layout::ControlLayout;

enum class LockMode : std::uint8_t { shared, exclusive };

// One lock acquisition or release in flight. Must keep its address until finished
// (the transport holds it as the Completion); reusable afterwards.
class LockOperation final : public transport::Completion {
  public:
    void acquire(transport::Transport &transport, const ControlLayout &layout, int target,
                 LockMode mode);
    void release(transport::Transport &transport, const ControlLayout &layout, int target,
                 LockMode mode);

    // Runs as far as possible without blocking: ok = finished (granted, or released),
    // in_progress = call again later, an error otherwise (the operation is abandoned).
    Status advance();

    bool finished() const { return phase_ == Phase::finished; }
    // For an acquisition: the request holds its place in the FIFO.
    bool enqueued() const { return enqueued_; }
    int target() const { return target_; }
    LockMode mode() const { return mode_; }

    void on_complete(Status status) override;

    // Failed CASes of the lock word before an operation queues in the doorway (default
    // 2; 0: never, the CAS retried alone however long it takes). Process-wide: the lock
    // protocol tests and the scale model set it to explore and to compare.
    static int doorway_after();
    static void set_doorway_after(int failures);

    // "phase pending=N cas=expected/result", for a hang report (engine::debug_dump).
    void describe(char *out, std::size_t size) const;

  private:
    enum class Phase : std::uint8_t {
        idle,
        acquire_cas,        // CAS the word to join the queue
        publish_head,       // exclusive head: our rank swapped into head_rank
        wait_grant,         // spin (locally) on our node's grant
        release_cas,        // CAS the word to leave (exclusive: only if still tail)
        drain_head,         // last shared holder out: head_rank CAS 0 -> drained
        clear_head,         // head_rank cleared by whoever came second (then grant)
        wait_successor,     // exclusive: spin locally until the successor linked, then
                            // grant it or make it head behind our readers (fetch-add)
        register_reader,    // shared behind an exclusive: pushed on its stack, now
                            // record below and count ourselves
        wait_readers,       // exclusive: spin locally until our readers registered
        walk_readers,       // exclusive: read the next reader's below, grant it
        door_join,          // the doorway tail swapped to us: wait for the one we found?
        door_wait,          // spin locally until the doorway predecessor grants us
        door_leave,         // through: the doorway tail CASed from us back to 0
        door_pass,          // someone queued behind us there: spin locally for its
                            // door_next, then grant it
        finished,
    };

    void begin(transport::Transport &transport, const ControlLayout &layout, int target,
               LockMode mode, Phase phase);
    Status step();  // one of the steps below, by phase
    Status cas_step();
    Status queue_step();
    Status head_step();
    Status door_step();
    Status post_atomic(int peer, transport::AtomicOp op, std::size_t offset,
                       std::uint64_t operand, std::uint64_t compare, std::uint64_t *result);
    Status post_cas(std::uint64_t desired);
    Status post_put(int peer, std::size_t offset, const void *source, std::size_t length);
    std::uint64_t load_local(std::size_t offset) const;
    void store_local(std::size_t offset, std::uint64_t value);
    Status join_door();
    Status cas_over(bool swapped);
    Status after_cas();
    Status after_acquire_cas(LockWord old);
    Status after_release_cas(LockWord old);
    Status grant(int rank);
    Status read_below(int rank);
    Status post_head_atomic(transport::AtomicOp op, std::uint64_t operand, std::uint64_t compare);

    transport::Transport *transport_ = nullptr;
    const ControlLayout *layout_ = nullptr;
    int target_ = -1;
    int me_ = -1;
    LockMode mode_ = LockMode::shared;
    Phase phase_ = Phase::idle;
    bool enqueued_ = false;
    int pending_ = 0;             // transport operations in flight
    Status failure_ = Status::ok;
    bool cas_posted_ = false;     // a CAS result is awaited in cas_result_
    std::uint64_t cas_expected_ = 0;
    std::uint64_t cas_result_ = 0;
    std::uint64_t add_result_ = 0;  // wait_successor's fetch-add (fetched only to complete late)
    std::uint32_t readers_ = 0;   // exclusive release: readers queued behind us
    int successor_ = -1;
    std::uint64_t head_result_ = 0;  // what a head_rank atomic found
    int head_grant_ = -1;            // clear_head: the head to grant once cleared
    int linked_ = -1;              // shared behind an exclusive: that exclusive (the tail)
    std::uint64_t link_result_ = 0;  // register_reader: the top we replaced; walk: a below
    std::uint32_t woken_ = 0;      // walk_readers: readers granted so far
    int reader_ = -1;              // walk_readers: the reader whose below was read
    int failures_ = 0;             // failed CASes of the lock word so far
    bool in_door_ = false;         // queued in, or holding, the target's doorway
    bool cas_swapped_ = false;     // the CAS phase ended with our CAS taking
    Phase door_for_ = Phase::idle;  // the CAS phase the doorway interrupted
    std::uint64_t door_result_ = 0;  // what a doorway-tail atomic found
    // Sources of puts must outlive them.
    std::uint64_t door_record_ = 0;
    std::uint64_t next_record_ = 0;
    std::uint64_t grant_value_ = 1;
};

// One-CAS forms, for a transport whose atomics complete inside the call (shared
// memory): the lock taken, or released, by a single compare-and-swap when nobody is
// queued that the protocol above would have to link or grant. False with the word
// unchanged otherwise: the caller then runs a LockOperation (which joins the queue, or
// hands the lock over). A lock taken here is released by either form. One origin's
// window calls them lock after lock: the words its hold alone makes are computed once,
// and the last target's mapped lock word is remembered (a transport's mapping of a
// peer's control region lasts as long as the transport), so the common case (the word
// free; our hold alone) is one inline CAS on it.
class AtOnceLocks {
  public:
    explicit AtOnceLocks(transport::Transport &transport);
    bool acquire(int target, LockMode mode) {
        std::uint64_t *word = mapped_word(target);
        std::uint64_t seen = 0;
        if (word && __atomic_compare_exchange_n(word, &seen, alone(mode), false, __ATOMIC_SEQ_CST,
                                                __ATOMIC_SEQ_CST))
            return true;
        return acquire_rest(word, target, mode, seen);
    }
    bool release(int target, LockMode mode) {
        std::uint64_t *word = mapped_word(target);
        std::uint64_t seen = alone(mode);
        if (word &&
            __atomic_compare_exchange_n(word, &seen, 0, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return true;
        return release_rest(word, target, mode, seen);
    }

  private:
    std::uint64_t alone(LockMode mode) const {
        return mode == LockMode::exclusive ? alone_exclusive_ : alone_shared_;
    }
    std::uint64_t *mapped_word(int target) {
        if (target != last_target_) {
            last_word_ = transport_.mapped_control_word(target, ControlLayout::lock_word);
            last_target_ = target;
        }
        return last_word_;
    }
    // Past the inline CAS (`word` mapped; `seen`, the word it found), or in its place
    // (`word` null: the first CAS through the transport's atomics).
    bool acquire_rest(std::uint64_t *word, int target, LockMode mode, std::uint64_t seen);
    bool release_rest(std::uint64_t *word, int target, LockMode mode, std::uint64_t seen);
    transport::Transport &transport_;
    const std::uint64_t alone_exclusive_, alone_shared_;
    int last_target_ = -1;
    std::uint64_t *last_word_ = nullptr;
};

}  // namespace nbrma::sync

#endif
