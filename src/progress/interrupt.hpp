// The rank's side of SmartInterrupts (NBRMA_PROGRESS=interrupt, doc/design.md §6):
// the node's help table (helper/help_table.hpp), this rank's slot in it, the helper
// processes the node's first rank starts, and what the progress thread does around its
// sleep (progress/sweep.cpp runs the loop). The MPI layer sets the table up at MPI_Init
// (mpi/init.cpp); everything here is process-wide.
#ifndef NBRMA_PROGRESS_INTERRUPT_HPP
#define NBRMA_PROGRESS_INTERRUPT_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.hpp"
#include "helper/help_table.hpp"

namespace nbrma::engine::interrupt {

// ---- setup (MPI_Init), in this order on the node:
// The first rank creates the table for `slots` ranks and `helpers` helpers; *name is how
// the others and the helpers open it.
Status create_table(unsigned slots, unsigned helpers, std::string *name, std::size_t *bytes);
// The other ranks map it.
Status open_table(const std::string &name, std::size_t bytes);
// Every rank takes its slot (its rank on the node).
void join(unsigned slot);
// The first rank, once every rank joined: starts the helpers and waits until each has
// mapped the table (then closes its descriptor). *why says what failed.
Status start_helpers(const std::string &name, std::size_t bytes, std::string *why);
void withdraw();
// MPI_Finalize: this rank leaves; the helpers exit when their last rank left.
void leave();
// The rank that started the helpers waits (up to `timeout_ms`) for them to exit and
// reaps them, so no zombie outlives the job (after MPI_Finalize: every rank has left).
void reap_helpers(int timeout_ms);

// The table is mapped and this rank has a slot.
bool attached();
unsigned slot_index();
helper::RankSlot *my_slot();
helper::HelpHeader *table_header();
// The bell of the rank in `slot` of this node (for the shm transport), or null.
std::atomic<std::uint64_t> *bell(int slot);
// Pid of helper `h` (0 if none).
int helper_pid(unsigned h);
// True once this rank's helper has died (its pidfd); the first call that finds it says so
// on stderr. Called by the progress thread only.
bool helper_lost();
unsigned helper_count();
// Size of the node's help table (0 if none).
std::size_t table_bytes();
// The helper program: NBRMA_HELPER, else nbrma-helper next to libnbrma.so, in
// ../libexec or .. of its directory (the build tree), else in the configured libexecdir
// (NBRMA_LIBEXECDIR). Empty if none is found.
std::string find_helper();

// ---- the progress thread, around its sleep
// Publishes "help wanted": wake me when my bell reaches `seen` + `rings` (nothing can
// move before that many peers' writes rang it).
void want(std::uint64_t seen, unsigned rings = 1);
// An application thread left work pending while the thread idles: wake it when the
// bell reaches `seen` + `rings` (or earlier, if an earlier watch is published).
void want_at_most(std::uint64_t seen, unsigned rings = 1);
// Withdraws it (nothing pending).
void unwant();
// An application thread waits inside nbrma (it progresses itself): the helper leaves
// the rank alone. True for the first to enter, resp. the last to leave.
bool enter_wait();
bool leave_wait();

struct Counters {
    std::atomic<std::uint64_t> wakeups{0};         // helper wake-ups the thread woke from
    std::atomic<std::uint64_t> futile_wakeups{0};  // ... whose sweep moved nothing
    std::atomic<std::uint64_t> sweeps{0};          // sweeps of the interrupt thread
    std::atomic<std::uint64_t> event_wakeups{0};   // wake-ups by UCX events (the watcher)
};
Counters &counters();

}  // namespace nbrma::engine::interrupt

#endif
