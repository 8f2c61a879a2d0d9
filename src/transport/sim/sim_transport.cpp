// The sim transport: see sim_transport.hpp.
#include "transport/sim/sim_transport.hpp"

#include <cstring>
#include <sstream>
#include <stdexcept>

namespace nbrma::transport::sim {

// ------------------------------------------------------------------ SimTransport

int SimTransport::size() const { return world_.size(); }

void *SimTransport::local_control() { return world_.memory(rank_, Region::control); }

Status SimTransport::put(int peer, const void *source, std::size_t length, RemoteAddress target,
                         Completion *completion) {
    Status s = world_.check(peer, target.region, target.offset, length);
    if (s != Status::ok) return s;
    if (length != 0 && source == nullptr) return Status::err_arg;
    SimWorld::Op op{};
    op.kind = SimWorld::OpKind::put;
    op.origin = rank_;
    op.target = peer;
    op.region = target.region;
    op.offset = target.offset;
    op.length = length;
    const auto *bytes = static_cast<const std::uint8_t *>(source);
    op.data.assign(bytes, bytes + length);
    op.completion = completion;
    return world_.post(std::move(op));
}

Status SimTransport::get(int peer, void *destination, std::size_t length, RemoteAddress source,
                         Completion *completion) {
    Status s = world_.check(peer, source.region, source.offset, length);
    if (s != Status::ok) return s;
    if (length != 0 && destination == nullptr) return Status::err_arg;
    SimWorld::Op op{};
    op.kind = SimWorld::OpKind::get;
    op.origin = rank_;
    op.target = peer;
    op.region = source.region;
    op.offset = source.offset;
    op.length = length;
    op.destination = destination;
    op.completion = completion;
    return world_.post(std::move(op));
}

Status SimTransport::atomic(int peer, AtomicOp aop, RemoteAddress target, std::uint64_t operand,
                            std::uint64_t compare, std::uint64_t *result, Completion *completion) {
    Status s = world_.check(peer, target.region, target.offset, sizeof(std::uint64_t));
    if (s != Status::ok) return s;
    if (target.offset % sizeof(std::uint64_t) != 0) return Status::err_arg;
    switch (aop) {
        case AtomicOp::fetch_add:
        case AtomicOp::compare_swap:
        case AtomicOp::swap:
        case AtomicOp::fetch_and:
        case AtomicOp::fetch_or:
        case AtomicOp::fetch_xor:
            break;
        default:
            return Status::err_op;
    }
    SimWorld::Op op{};
    op.kind = SimWorld::OpKind::atomic;
    op.origin = rank_;
    op.target = peer;
    op.region = target.region;
    op.offset = target.offset;
    op.length = sizeof(std::uint64_t);
    op.atomic_op = aop;
    op.operand = operand;
    op.compare = compare;
    op.result = result;
    op.completion = completion;
    return world_.post(std::move(op));
}

bool SimTransport::supports_atomics(int peer, Region region) const {
    return peer >= 0 && peer < world_.size();
}

bool SimTransport::peek_control(int peer, std::uint64_t offset, std::uint64_t *value) {
    if (peer < 0 || peer >= world_.size() || offset % 8 != 0 ||
        is_error(world_.check(peer, Region::control, offset, 8)))
        return false;
    *value = world_.load64(peer, Region::control, offset);
    return true;
}

Status SimTransport::fence(int peer) {
    if (peer < 0 || peer >= world_.size()) return Status::err_rank;
    world_.fence(rank_, peer);
    return Status::ok;
}

Capabilities SimTransport::capabilities() const {
    Capabilities capabilities;
    capabilities.fence_orders = world_.fence_orders_;
    return capabilities;
}

Status SimTransport::flush(int peer, Completion *completion) {
    if (peer < 0 || peer >= world_.size()) return Status::err_rank;
    return world_.post_flush(rank_, peer, completion);
}

int SimTransport::poll() {
    int ran = 0;
    // Callbacks may post new operations (never new completions of ours: those need a
    // deliver()), so draining until empty terminates.
    while (!completions_.empty()) {
        Completion *c = completions_.front();
        completions_.pop_front();
        if (c != nullptr) {
            c->on_complete(Status::ok);
            ++ran;
        }
    }
    return ran;
}

// ------------------------------------------------------------------ SimWorld

SimWorld::SimWorld(int nranks, std::size_t control_bytes, std::size_t window_bytes)
    : nranks_(nranks), control_bytes_(control_bytes), window_bytes_(window_bytes) {
    if (nranks <= 0) throw std::invalid_argument("SimWorld: nranks must be positive");
    const std::size_t cwords = (control_bytes + 7) / 8;
    const std::size_t wwords = (window_bytes + 7) / 8;
    control_.assign(nranks, std::vector<std::uint64_t>(cwords, 0));
    window_.assign(nranks, std::vector<std::uint64_t>(wwords, 0));
    endpoints_.reserve(nranks);
    for (int r = 0; r < nranks; ++r) endpoints_.push_back(std::make_unique<SimTransport>(*this, r));
    fence_epoch_.assign(static_cast<std::size_t>(nranks) * nranks, 0);
    traffic_.assign(nranks, Traffic());
}

SimWorld::~SimWorld() = default;

Transport &SimWorld::endpoint(int rank) { return *endpoints_.at(rank); }
SimTransport &SimWorld::sim_endpoint(int rank) { return *endpoints_.at(rank); }
const SimTransport &SimWorld::sim_endpoint(int rank) const { return *endpoints_.at(rank); }

std::uint8_t *SimWorld::memory(int rank, Region region) {
    auto &v = (region == Region::control ? control_ : window_).at(rank);
    return reinterpret_cast<std::uint8_t *>(v.data());
}

const std::uint8_t *SimWorld::memory(int rank, Region region) const {
    const auto &v = (region == Region::control ? control_ : window_).at(rank);
    return reinterpret_cast<const std::uint8_t *>(v.data());
}

std::size_t SimWorld::region_bytes(Region region) const {
    return region == Region::control ? control_bytes_ : window_bytes_;
}

std::uint64_t SimWorld::load64(int rank, Region region, std::uint64_t offset) const {
    std::uint64_t v;
    std::memcpy(&v, memory(rank, region) + offset, sizeof v);
    return v;
}

Status SimWorld::check(int peer, Region region, std::uint64_t offset, std::size_t length) const {
    if (peer < 0 || peer >= nranks_) return Status::err_rank;
    if (region != Region::control && region != Region::window) return Status::err_arg;
    const std::size_t limit = region_bytes(region);
    if (offset > limit || length > limit - offset) return Status::err_range;
    return Status::ok;
}

Status SimWorld::post(Op op) {
    Traffic &traffic = traffic_[op.origin];
    switch (op.kind) {
        case OpKind::put: ++traffic.puts; traffic.bytes += op.length; break;
        case OpKind::get: ++traffic.gets; traffic.bytes += op.length; break;
        case OpKind::atomic: ++traffic.atomics; traffic.bytes += 8; break;
        case OpKind::flush: ++traffic.flushes; break;
    }
    op.fence_epoch = fence_epoch_[static_cast<std::size_t>(op.origin) * nranks_ + op.target];
    op.serial = serial_++;
    if (early_local_ && (op.kind == OpKind::put || (op.kind == OpKind::atomic && !op.result))) {
        if (op.completion) endpoints_[op.origin]->completions_.push_back(op.completion);
        op.completion = nullptr;  // delivery completes nothing more
    }
    ops_.push_back(std::move(op));
    return Status::in_progress;
}

Status SimWorld::post_flush(int origin, int peer, Completion *completion) {
    bool pending = false;
    for (const Op &o : ops_)
        if (o.kind != OpKind::flush && o.origin == origin && o.target == peer) pending = true;
    if (!pending) return Status::ok;
    Op op{};
    op.kind = OpKind::flush;
    op.origin = origin;
    op.target = peer;
    op.completion = completion;
    return post(std::move(op));
}

void SimWorld::fence(int origin, int peer) {
    ++fence_epoch_[static_cast<std::size_t>(origin) * nranks_ + peer];
}

bool SimWorld::deliverable(std::size_t index) const {
    const Op &op = ops_.at(index);
    for (std::size_t j = 0; j < index; ++j) {
        const Op &e = ops_[j];
        if (e.kind == OpKind::flush || e.origin != op.origin || e.target != op.target) continue;
        // A flush waits for every earlier op to the peer; a data op waits for earlier
        // ops separated from it by a fence.
        if (op.kind == OpKind::flush || e.fence_epoch < op.fence_epoch) return false;
    }
    return true;
}

std::vector<std::size_t> SimWorld::deliverable_indices() const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < ops_.size(); ++i)
        if (deliverable(i)) out.push_back(i);
    return out;
}

void SimWorld::deliver(std::size_t index) {
    if (index >= ops_.size()) throw std::out_of_range("SimWorld::deliver: no such op");
    if (!deliverable(index)) throw std::logic_error("SimWorld::deliver: op is fenced: " + describe(index));
    Op op = std::move(ops_[index]);
    ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(index));
    switch (op.kind) {
        case OpKind::put:
            if (op.length) std::memcpy(memory(op.target, op.region) + op.offset, op.data.data(), op.length);
            break;
        case OpKind::get:
            if (op.length) std::memcpy(op.destination, memory(op.target, op.region) + op.offset, op.length);
            break;
        case OpKind::atomic: {
            auto *word = reinterpret_cast<std::uint64_t *>(memory(op.target, op.region) + op.offset);
            const std::uint64_t old = *word;
            switch (op.atomic_op) {
                case AtomicOp::fetch_add: *word = old + op.operand; break;
                case AtomicOp::compare_swap: if (old == op.compare) *word = op.operand; break;
                case AtomicOp::swap: *word = op.operand; break;
                case AtomicOp::fetch_and: *word = old & op.operand; break;
                case AtomicOp::fetch_or: *word = old | op.operand; break;
                case AtomicOp::fetch_xor: *word = old ^ op.operand; break;
            }
            if (op.result != nullptr) *op.result = old;
            break;
        }
        case OpKind::flush:
            break;
    }
    ++delivered_;
    // A null completion (posted without one, or completed early) has nothing to run.
    if (op.completion) endpoints_[op.origin]->completions_.push_back(op.completion);
}

bool SimWorld::deliver_any(std::mt19937_64 &rng) {
    std::vector<std::size_t> candidates = deliverable_indices();
    if (candidates.empty()) return false;
    std::uniform_int_distribution<std::size_t> pick(0, candidates.size() - 1);
    deliver(candidates[pick(rng)]);
    return true;
}

void SimWorld::deliver_all() {
    while (!ops_.empty()) {
        std::size_t i = 0;
        while (!deliverable(i)) ++i;  // ops_[0] is always deliverable, so this ends
        deliver(i);
    }
}

std::size_t SimWorld::pending_completions() const {
    std::size_t n = 0;
    for (const auto &e : endpoints_) n += e->completions_.size();
    return n;
}

std::string SimWorld::describe(std::size_t index) const { return describe(ops_.at(index)); }

std::string SimWorld::describe(const Op &op) {
    static const char *const atomic_names[] = {"fetch_add", "compare_swap", "swap",
                                               "fetch_and", "fetch_or",     "fetch_xor"};
    std::ostringstream s;
    s << "#" << op.serial << " " << op.origin << "->" << op.target << " ";
    const char *region = op.region == Region::control ? "ctl" : "win";
    switch (op.kind) {
        case OpKind::put:
            s << "put " << region << "+" << op.offset << " len " << op.length;
            if (op.length == 8) {
                std::uint64_t v;
                std::memcpy(&v, op.data.data(), 8);
                s << " val 0x" << std::hex << v << std::dec;
            }
            break;
        case OpKind::get: s << "get " << region << "+" << op.offset << " len " << op.length; break;
        case OpKind::atomic:
            s << atomic_names[static_cast<int>(op.atomic_op)] << " " << region << "+" << op.offset
              << " op 0x" << std::hex << op.operand;
            if (op.atomic_op == AtomicOp::compare_swap) s << " cmp 0x" << op.compare;
            s << std::dec;
            break;
        case OpKind::flush: s << "flush"; break;
    }
    if (op.fence_epoch) s << " [fence " << op.fence_epoch << "]";
    return s.str();
}

}  // namespace nbrma::transport::sim
