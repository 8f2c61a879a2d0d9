// Window creation's stages and what they share (window_setup.cpp: arguments, the
// exchange, the node, user memory, the segment's plan, MPICH's window;
// window_transports.cpp: the segment mapped and the transports over it). Only those two
// files include this.
#ifndef NBRMA_MPI_WINDOW_CREATION_HPP
#define NBRMA_MPI_WINDOW_CREATION_HPP

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mpi/state.hpp"
#include "progress/progress.hpp"
#include "transport/shm/peer_memory.hpp"
#include "transport/shm/segment_cache.hpp"
#include "transport/shm/user_memory.hpp"

namespace nbrma::mpi::setup {

using engine::Flavor;

// What each rank contributes to window creation's one exchange (an allgather on the
// user's communicator): everything the ranks must agree on, so each decides alone and
// all decide alike.
struct PeerRecord {
    std::int64_t size;
    std::int64_t base;
    std::uint64_t node_key;  // equal iff same node (node_key())
    std::uint64_t probe;     // where peers can read this process's cross-memory probe word
    std::int32_t disp_unit;
    std::int32_t pid;
    std::int32_t vnode;       // virtual node (NBRMA_VIRTUAL_NODES) within the node, -1: bad
    std::int32_t help_slot;   // NBRMA_PROGRESS=interrupt: slot in the node's help table, or -1
    std::int32_t notify_max;  // notification counters' capacity (-1: a bad value given)
    std::int32_t segment_fd;  // the memfd this rank prepared (ShmSegment), -1: none
    std::int32_t yama_scope;  // Yama's ptrace_scope here (-1: no Yama)
    std::uint32_t flags;      // PeerFlag
    // A freed window's segment this rank offers for reuse (segment_cache.hpp), 0: none
    std::uint64_t offer_id;
    std::int64_t offer_bytes;
    std::uint64_t fresh_id;  // the identity of a segment this rank would create as leader
    std::int32_t offer_ranks;  // how many ranks mapped the offered segment
    // MPI_Win_create: the memfd this rank's window pages move into for node-local peers
    // to map (user_memory.hpp), -1: none; where the window's base lies in it
    std::int32_t user_fd;
    std::uint64_t user_offset;
    std::uint64_t user_identity;  // that memfd's identity, unique on the node
    // Identities of node-local peers' memfds this rank has mapped already (0: none), so
    // that every rank knows whether mapping them can fail (user_memory_settled)
    std::uint64_t user_mapped[8];
};
enum PeerFlag : std::uint32_t {
    transport_valid = 1,  // nbrma_transport / NBRMA_TRANSPORT is "", "shm" or "ucx"
    wants_ucx = 2,        // ... and is "ucx"
    mode_valid = 4,       // NBRMA_PROGRESS is a progress mode
    interrupt_ok = 8,     // NBRMA_PROGRESS=interrupt, and its helper runs (else: not interrupt)
    offer_cma_checked = 16,  // the offered segment's window checked cross-memory attach
    user_moved = 32,         // user_fd's pages moved already (an earlier window's)
    info_valid = 64,         // every info key nbrma knows has a value it allows
};

// Fails the window creation on every rank alike: frees what was made, raises.
int creation_failed(const char *call, WindowState &state, Status status, const char *why);

// One window's creation, in stages every rank runs in the same order (their collectives
// on the user's communicator in the same order everywhere; a stage that fails, fails on
// every rank alike, through creation_failed):
//   check_arguments  no exchange yet: errors go to the communicator's error handler
//   describe         this rank's PeerRecord: settings, memory, the segment it can offer
//   agree            the one allgather; every setting valid and alike everywhere
//   discover_node    the node's ranks, its leader, who is reached over shared memory
//   reach_user_memory  MPI_Win_create pages offered to node-local peers, mapped
//   plan_segment     the control regions' layout, the segment's size, whether a freed
//                    window's segment is reused
//   map_segment      the node's segment mapped, cross-memory attach agreed
//   choose_transports  shm, ucx or both, and the engine's window over them
//   make_mpich_window  the MPICH window that carries handle, name and attributes
//
// Peer selection (doc/design.md §9): node-local peers over shm, remote peers over UCX (the
// mixed transport, which also sends every atomic through UCX: CPU and NIC atomics are
// not atomic with respect to each other). nbrma_transport=ucx (info key, or the
// NBRMA_TRANSPORT environment variable) sends every peer through UCX; the window
// memory of the allocate flavors still lives in the node's segment, so load/store on
// MPI_Win_allocate_shared memory works in both modes. With NBRMA_VIRTUAL_NODES only the
// transport choice follows the virtual nodes (shm_reach); the segment stays per node.
struct Creation {
    // The call's arguments.
    const char *call;
    Flavor flavor;
    MPI_Aint size;
    int disp_unit;
    MPI_Info info;
    MPI_Comm comm;
    void *user_base;

    std::unique_ptr<WindowState> state = std::make_unique<WindowState>();
    int rank = 0, nranks = 0;
    bool allocates = false;
    // describe
    std::string info_error, choice, notify_text;
    engine::ProgressMode mode = engine::ProgressMode::inline_mode;
    const char *mode_text = "";
    bool mode_ok = false;
    Status interrupt_status = Status::err_transport;
    const char *interrupt_why = nullptr;
    transport::shm::CachedSegment offered;
    PeerRecord mine{};
    std::vector<transport::shm::HeldPeerMemory> held;  // peers' memfds mapped already
    // agree
    std::vector<PeerRecord> peers;
    std::uint32_t all = ~0u;  // the flags every rank set
    bool notify_agreed = true;
    // discover_node
    int leader = -1;  // the node's first rank: its segment is the node's
    std::vector<bool> is_local;
    std::vector<bool> shm_reach;    // local, and in our virtual node
    std::vector<int> local_index;  // position in the node's segment
    int local_count = 0;
    bool spans_nodes = false, spans_virtual = false;
    // reach_user_memory
    bool shm_peer = false, any_user_memory = false, map_user_memory = false;
    bool user_memory_failed = false, user_memory_mapped = false;
    // plan_segment
    std::int64_t control_bytes = 0, total = 0;
    std::vector<std::int64_t> offsets;
    bool reuse = false;

    int check_arguments(MPI_Win *win);
    int describe();
    int agree();
    void discover_node();
    int reach_user_memory();
    int plan_segment();
    int map_segment();
    int choose_transports(void *base_out);
    int make_mpich_window(MPI_Win *win);
    int failed(Status status, const char *why) {
        return creation_failed(call, *state, status, why);
    }
};

}  // namespace nbrma::mpi::setup

#endif
