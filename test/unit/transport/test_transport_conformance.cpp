// The transport contract (transport/transport.hpp) checked the same way for every
// transport: sim, shm (the window mapped, and reached by cross-memory attach as for
// MPI_Win_create), and ucx (in-process workers over "tcp,self"). Each builds three
// in-process ranks whose memory the test reads and writes directly; every test asserts
// data, statuses and the completion model (ok: completed inline, the Completion never
// called; in_progress: called exactly once, from the origin's poll()), and that refused
// calls post nothing and touch nothing (patterns inside the regions, canaries around
// them). Dynamic windows (attach, detach, check_attached) are checked for the
// transports that have them. What only one transport does (sim's delayed and reordered
// delivery, shm's moved regions and bells, ucx's mixed transport) stays in its own file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "transport/shm/shm_transport.hpp"
#include "transport/sim/sim_transport.hpp"
#include "transport/transport.hpp"
#include "transport/ucx/ucx_transport.hpp"
#include "transport/ucx/ucx_worker.hpp"
#include "ucx_worker_server.hpp"

namespace nbrma::transport {
namespace {

constexpr int nranks = 3;
// Room for the directory header of dynamic windows (layout::ControlLayout::directory and
// directory_bytes: bytes 64 to 1088).
constexpr std::size_t control_bytes = 2048;
constexpr std::size_t window_bytes = 4096;
constexpr std::size_t margin = 512;  // canary bytes on each side of every region
constexpr std::uint8_t canary = 0xa5;

std::size_t region_bytes(Region region) {
    return region == Region::control ? control_bytes : window_bytes;
}

const char *region_name(Region region) { return region == Region::control ? "control" : "window"; }

// Zeroed memory with canaries on both sides, 8-byte aligned (zeroed as window creation
// gives control regions: a dynamic window's directory header starts at generation 0).
class Guarded {
  public:
    explicit Guarded(std::size_t size) : size_(size), words_((2 * margin + size + 7) / 8) {
        std::memset(words_.data(), canary, words_.size() * 8);
        std::memset(region(), 0, size);
    }
    std::uint8_t *region() { return bytes() + margin; }
    std::uint64_t address() { return reinterpret_cast<std::uintptr_t>(region()); }
    bool canaries_intact() const {
        const auto *all = reinterpret_cast<const std::uint8_t *>(words_.data());
        for (std::size_t i = 0; i < words_.size() * 8; ++i)
            if ((i < margin || i >= margin + size_) && all[i] != canary) return false;
        return true;
    }

  private:
    std::uint8_t *bytes() { return reinterpret_cast<std::uint8_t *>(words_.data()); }
    std::size_t size_;
    std::vector<std::uint64_t> words_;
};

// The rank whose poll() is running, -1 outside every poll(): completions record it.
int polling_rank = -1;
// Completion callbacks run since the test began (poll()'s return values must add up to it).
long callbacks_run = 0;

class Recorder final : public Completion {
  public:
    void on_complete(Status status) override {
        ++calls;
        ++callbacks_run;
        last = status;
        ran_in = polling_rank;
    }
    int calls = 0;
    Status last = Status::err_other;
    int ran_in = -2;  // the rank whose poll() ran it (-1: outside every poll())
};

// N in-process ranks of one transport kind.
class Ranks {
  public:
    virtual ~Ranks() = default;
    int size() const { return nranks; }
    virtual Transport &transport(int rank) = 0;
    // The rank's memory of that region, for the test's direct loads and stores; null for
    // the window of a dynamic window (the test attaches memory of its own).
    virtual std::uint8_t *memory(int rank, Region region) = 0;
    // Every canary margin around the ranks' memory intact.
    virtual bool canaries_intact() const = 0;
    // The smallest step of progress; polls every rank (but one served by a thread).
    virtual void step() { poll_all(); }
    // Dynamic ucx windows: an origin blocks inside a call (the directory read) while the
    // target's worker must run, so a thread progresses that rank's worker meanwhile (as
    // the target process would); step() then leaves it alone. Nothing elsewhere.
    virtual void serve(int rank, bool on) {
        (void)rank;
        (void)on;
    }
    long polled() const { return polled_; }

  protected:
    void poll_all() {
        for (int r = 0; r < size(); ++r) {
            if (r == served_) continue;
            polling_rank = r;
            polled_ += transport(r).poll();
            polling_rank = -1;
        }
    }
    int served_ = -1;

  private:
    long polled_ = 0;
};

// ---------------------------------------------------------------- sim

class SimRanks final : public Ranks {
  public:
    Transport &transport(int rank) override { return world_.endpoint(rank); }
    std::uint8_t *memory(int rank, Region region) override { return world_.memory(rank, region); }
    // The sim's memory is its own (no margins around it): the pattern checks inside the
    // regions are what catch a stray write there.
    bool canaries_intact() const override { return true; }
    // Delivers the newest deliverable operation: of the orders a network may choose, the
    // one that most often breaks an ordering the transport does not promise.
    void step() override {
        const std::vector<std::size_t> deliverable = world_.deliverable_indices();
        if (!deliverable.empty()) world_.deliver(deliverable.back());
        poll_all();
    }

  private:
    sim::SimWorld world_{nranks, control_bytes, window_bytes};
};

// ---------------------------------------------------------------- shm

class ShmRanks final : public Ranks {
  public:
    enum class Window { mapped, cross_memory, dynamic };
    explicit ShmRanks(Window window) {
        std::vector<shm::ShmPeer> peers(nranks);
        for (int r = 0; r < nranks; ++r) {
            control_.push_back(std::make_unique<Guarded>(control_bytes));
            window_.push_back(std::make_unique<Guarded>(window_bytes));
            peers[r].control = control_[r]->region();
            switch (window) {
                case Window::mapped:  // MPI_Win_allocate: in the shared segment
                    peers[r].window = window_[r]->region();
                    peers[r].window_size = window_bytes;
                    break;
                case Window::cross_memory:  // MPI_Win_create: process_vm_readv/writev
                    peers[r].remote_base = window_[r]->address();
                    peers[r].window_size = window_bytes;
                    peers[r].pid = getpid();
                    break;
                case Window::dynamic:  // absolute addresses, checked in the directory
                    peers[r].window_size = ~0ull;
                    peers[r].pid = getpid();
                    break;
            }
        }
        dynamic_ = window == Window::dynamic;
        for (int r = 0; r < nranks; ++r) {
            transports_.push_back(std::make_unique<shm::ShmTransport>(r, control_bytes, peers));
            if (dynamic_) transports_[r]->enable_dynamic();
        }
    }
    Transport &transport(int rank) override { return *transports_[rank]; }
    std::uint8_t *memory(int rank, Region region) override {
        if (region == Region::control) return control_[rank]->region();
        return dynamic_ ? nullptr : window_[rank]->region();
    }
    bool canaries_intact() const override {
        for (int r = 0; r < nranks; ++r)
            if (!control_[r]->canaries_intact() || !window_[r]->canaries_intact()) return false;
        return true;
    }

  private:
    bool dynamic_ = false;
    std::vector<std::unique_ptr<Guarded>> control_, window_;
    std::vector<std::unique_ptr<shm::ShmTransport>> transports_;
};

// ---------------------------------------------------------------- ucx

class UcxRanks final : public Ranks {
  public:
    // Null with *why_not set if UCX cannot start here.
    static std::unique_ptr<Ranks> make(bool dynamic, std::string *why_not) {
        auto ranks = std::make_unique<UcxRanks>();
        if (!ranks->build(dynamic, why_not)) return nullptr;
        return ranks;
    }
    ~UcxRanks() override { server_.reset(); }

    Transport &transport(int rank) override { return *ranks_[rank]->transport; }
    std::uint8_t *memory(int rank, Region region) override {
        if (region == Region::control) return ranks_[rank]->control.region();
        return dynamic_ ? nullptr : ranks_[rank]->window.region();
    }
    bool canaries_intact() const override {
        for (const auto &rank : ranks_)
            if (!rank->control.canaries_intact() || !rank->window.canaries_intact()) return false;
        return true;
    }
    void serve(int rank, bool on) override {
        server_.reset();
        served_ = -1;
        if (on) {
            server_ = std::make_unique<ucx::WorkerServer>(*ranks_[rank]->worker);
            served_ = rank;
        }
    }

  private:
    // Declared in destruction order: the transport (its registrations) first, then the
    // memory, then the worker.
    struct Rank {
        std::unique_ptr<ucx::UcxWorker> worker;
        Guarded control{control_bytes};
        Guarded window{window_bytes};
        std::unique_ptr<ucx::UcxTransport> transport;
    };

    bool build(bool dynamic, std::string *why_not) {
        dynamic_ = dynamic;
        auto failed = [why_not](const char *what, Status status) {
            *why_not = std::string(what) + ": " + status_string(status);
            return false;
        };
        for (int r = 0; r < nranks; ++r) {
            ranks_.push_back(std::make_unique<Rank>());
            Rank &rank = *ranks_.back();
            Status status = ucx::UcxWorker::create("tcp,self", &rank.worker);
            if (is_error(status)) return failed("UcxWorker::create(\"tcp,self\")", status);
            rank.transport = std::make_unique<ucx::UcxTransport>(
                *rank.worker, r, nranks, rank.control.region(), control_bytes);
            status = dynamic ? rank.transport->expose_dynamic()
                             : rank.transport->expose_window(rank.window.region(), window_bytes);
            if (is_error(status)) return failed("expose", status);
        }
        std::vector<std::vector<std::uint8_t>> records;
        for (const auto &rank : ranks_) records.push_back(rank->transport->exposure());
        for (int r = 0; r < nranks; ++r)
            for (int peer = 0; peer < nranks; ++peer) {
                Status status =
                    ranks_[r]->transport->connect(peer, records[peer].data(), records[peer].size());
                if (is_error(status)) return failed("connect", status);
            }
        for (const auto &rank : ranks_) {
            Status status = rank->transport->finish_connect_start();
            if (is_error(status)) return failed("finish_connect_start", status);
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        std::vector<bool> done(nranks, false);
        for (int connected = 0; connected < nranks;) {
            if (std::chrono::steady_clock::now() > deadline)
                return failed("wireup", Status::err_transport);
            connected = 0;
            for (int r = 0; r < nranks; ++r) {
                bool finished = done[r];
                Status status = ranks_[r]->transport->finish_connect_test(&finished);
                if (is_error(status)) return failed("finish_connect_test", status);
                done[r] = finished;
                connected += finished;
            }
        }
        return true;
    }

    bool dynamic_ = false;
    std::vector<std::unique_ptr<Rank>> ranks_;
    std::unique_ptr<ucx::WorkerServer> server_;
};

// ---------------------------------------------------------------- the kinds

// A transport kind and what it declares of itself, which the tests hold it to.
struct Kind {
    const char *name;
    std::unique_ptr<Ranks> (*make)(bool dynamic, std::string *why_not);
    bool window_atomics;  // supports_atomics(peer, Region::window)
    bool needs_target_progress;
    bool completes_inline;
    // Why atomics on the window are missing (when window_atomics is false).
    const char *no_window_atomics;
};

void PrintTo(const Kind &kind, std::ostream *out) { *out << kind.name; }

std::unique_ptr<Ranks> make_sim(bool, std::string *) { return std::make_unique<SimRanks>(); }
std::unique_ptr<Ranks> make_shm(bool dynamic, std::string *) {
    return std::make_unique<ShmRanks>(dynamic ? ShmRanks::Window::dynamic
                                              : ShmRanks::Window::mapped);
}
std::unique_ptr<Ranks> make_shm_cma(bool dynamic, std::string *) {
    return std::make_unique<ShmRanks>(dynamic ? ShmRanks::Window::dynamic
                                              : ShmRanks::Window::cross_memory);
}

const Kind sim_kind{"sim", make_sim, true, false, false, nullptr};
const Kind shm_kind{"shm", make_shm, true, false, true, nullptr};
const Kind shm_cma_kind{"shm_cma",
                        make_shm_cma,
                        false,
                        false,
                        true,
                        "shm reaches MPI_Win_create memory by cross-memory attach, which has no "
                        "atomics (the engine uses the accumulate lock there)"};
const Kind ucx_kind{"ucx", UcxRanks::make, true, true, false, nullptr};

// ---------------------------------------------------------------- the fixture

std::uint8_t pattern(int rank, Region region, std::size_t i) {
    return static_cast<std::uint8_t>(i * 13 + rank * 71 + (region == Region::control ? 5 : 0) + 1);
}

class Conformance : public ::testing::TestWithParam<Kind> {
  protected:
    virtual bool dynamic() const { return false; }

    void SetUp() override {
        callbacks_run = 0;
        std::string why_not;
        ranks_ = GetParam().make(dynamic(), &why_not);
        if (!ranks_) GTEST_SKIP() << GetParam().name << " cannot start here: " << why_not;
        for (int r = 0; r < size(); ++r)
            for (Region region : {Region::control, Region::window}) restore(r, region);
    }

    void TearDown() override {  // nothing in flight when the ranks go
        if (!ranks_) return;
        ranks_->serve(0, false);
        settle();
        ranks_.reset();
    }

    int size() const { return ranks_->size(); }
    Transport &t(int rank) { return ranks_->transport(rank); }
    std::uint8_t *memory(int rank, Region region) { return ranks_->memory(rank, region); }

    // Whether the test writes and checks a pattern in the region: not in the control
    // region of a dynamic window, which holds the directory header.
    bool patterned(Region region) const { return !dynamic() || region == Region::window; }
    // Writes the rank's pattern over the region.
    void restore(int rank, Region region) {
        std::uint8_t *bytes = memory(rank, region);
        if (!bytes || !patterned(region)) return;
        for (std::size_t i = 0; i < region_bytes(region); ++i) bytes[i] = pattern(rank, region, i);
    }
    // "" if every byte of the region outside [low, high) still holds the pattern.
    std::string untouched(int rank, Region region, std::uint64_t low = 0, std::uint64_t high = 0) {
        const std::uint8_t *bytes = memory(rank, region);
        if (!bytes || !patterned(region)) return "";
        for (std::size_t i = 0; i < region_bytes(region); ++i)
            if ((i < low || i >= high) && bytes[i] != pattern(rank, region, i))
                return std::string("rank ") + std::to_string(rank) + " " + region_name(region) +
                       " byte " + std::to_string(i) + " changed";
        return "";
    }
    // Every region of every rank holds its pattern, every canary is intact.
    void expect_intact() {
        for (int r = 0; r < size(); ++r)
            for (Region region : {Region::control, Region::window})
                EXPECT_EQ(untouched(r, region), "");
        EXPECT_TRUE(ranks_->canaries_intact());
    }
    std::uint64_t load(int rank, Region region, std::uint64_t offset) {
        return __atomic_load_n(reinterpret_cast<std::uint64_t *>(memory(rank, region) + offset),
                               __ATOMIC_ACQUIRE);
    }
    void store(int rank, Region region, std::uint64_t offset, std::uint64_t value) {
        std::memcpy(memory(rank, region) + offset, &value, 8);
    }

    // One call and its completion, as the contract has it.
    struct Call {
        int origin;
        Status status;
        bool with_completion;
        Recorder recorder;
    };
    // Makes a call: `call` gets the Completion to pass (null unless with_completion).
    // The status must be ok, in_progress or an error; not in_progress where the transport
    // completes inline; and the completion must not have run inside the call.
    Status post(int origin, const std::function<Status(Completion *)> &call,
                bool with_completion = true) {
        Call &c = calls_.emplace_back();
        c.origin = origin;
        c.with_completion = with_completion;
        c.status = call(with_completion ? &c.recorder : nullptr);
        EXPECT_TRUE(c.status == Status::ok || c.status == Status::in_progress || is_error(c.status))
            << "status " << static_cast<int>(c.status);
        if (t(origin).capabilities().completes_inline) {
            EXPECT_NE(c.status, Status::in_progress) << "the transport completes inline";
        }
        EXPECT_EQ(c.recorder.calls, 0) << "the completion ran inside the call";
        return c.status;
    }

    // Steps progress until done() or a time limit; false at the limit.
    bool progress_until(const std::function<bool()> &done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!done()) {
            if (std::chrono::steady_clock::now() > deadline) return false;
            ranks_->step();
        }
        return true;
    }

    // Waits for every call posted with a completion that returned in_progress, then
    // checks the completion model: each ran exactly once, from its origin's poll(), with
    // ok; those that returned ok or an error, and those without a completion, never ran;
    // poll()'s counts add up to the callbacks that ran. Forgets the calls.
    void complete() {
        auto pending = [this] {
            for (const Call &c : calls_)
                if (c.status == Status::in_progress && c.with_completion && c.recorder.calls == 0)
                    return true;
            return false;
        };
        EXPECT_TRUE(progress_until([&] { return !pending(); })) << "completions never ran";
        for (int extra = 0; extra < 20; ++extra) ranks_->step();  // none runs twice
        for (const Call &c : calls_) {
            if (c.status == Status::in_progress && c.with_completion) {
                EXPECT_EQ(c.recorder.calls, 1);
                EXPECT_EQ(c.recorder.last, Status::ok);
                EXPECT_EQ(c.recorder.ran_in, c.origin) << "not run by the origin's poll()";
            } else {
                EXPECT_EQ(c.recorder.calls, 0) << "status " << status_string(c.status);
            }
        }
        EXPECT_EQ(ranks_->polled(), callbacks_run);
        calls_.clear();
    }

    // Flushes every peer from every rank and completes everything.
    void settle() {
        for (int r = 0; r < size(); ++r)
            for (int peer = 0; peer < size(); ++peer)
                EXPECT_FALSE(is_error(post(r, [&](Completion *c) { return t(r).flush(peer, c); })));
        complete();
    }

    // Whether atomics on the region are declared; if not, an atomic there must be refused
    // with nothing touched. The caller then skips.
    bool atomics_on(Region region) {
        const bool declared = region == Region::control || GetParam().window_atomics;
        for (int peer = 0; peer < size(); ++peer)
            EXPECT_EQ(t(0).supports_atomics(peer, region), declared) << "peer " << peer;
        if (declared) return true;
        std::uint64_t result = 0xdead;
        for (int peer = 0; peer < size(); ++peer)
            EXPECT_TRUE(is_error(post(0, [&](Completion *c) {
                return t(0).atomic(peer, AtomicOp::fetch_add, {region, 24}, 1, 0, &result, c);
            })));
        complete();
        EXPECT_EQ(result, 0xdeadu);
        expect_intact();
        return false;
    }

    // Whether 32-bit atomics on the window are declared (the same toward every peer); if
    // not, atomic32 must be refused with nothing touched. The caller then skips.
    bool atomics32_on() {
        const bool declared = t(0).supports_atomics32(0, Region::window);
        for (int peer = 0; peer < size(); ++peer)
            EXPECT_EQ(t(0).supports_atomics32(peer, Region::window), declared) << "peer " << peer;
        if (declared) return true;
        std::uint32_t result = 0xdead;
        for (int peer = 0; peer < size(); ++peer)
            EXPECT_TRUE(is_error(post(0, [&](Completion *c) {
                return t(0).atomic32(peer, AtomicOp::fetch_add, {Region::window, 28}, 1, 0, &result,
                                     c);
            })));
        complete();
        EXPECT_EQ(result, 0xdeadu);
        expect_intact();
        return false;
    }

    // The atomic tests' bodies (below).
    void check_atomics(Region region, bool fetching);
    void check_bad_atomics(Region region);

    std::unique_ptr<Ranks> ranks_;
    std::deque<Call> calls_;
};

// ---------------------------------------------------------------- static windows

TEST_P(Conformance, SizeRankAndLocalControlAreConsistent) {
    const Kind &kind = GetParam();
    for (int r = 0; r < size(); ++r) {
        SCOPED_TRACE(r);
        EXPECT_EQ(t(r).size(), size());
        EXPECT_EQ(t(r).rank(), r);
        EXPECT_EQ(t(r).local_control(), static_cast<void *>(memory(r, Region::control)));
        EXPECT_EQ(t(r).capabilities().needs_target_progress, kind.needs_target_progress);
        EXPECT_EQ(t(r).capabilities().completes_inline, kind.completes_inline);
        for (int peer = 0; peer < size(); ++peer) {
            EXPECT_TRUE(t(r).supports_atomics(peer, Region::control));
            EXPECT_EQ(t(r).supports_atomics(peer, Region::window), kind.window_atomics);
        }
    }
    // Our control region is what peers reach: a local store is what a get reads.
    store(1, Region::control, 64, 0x0123456789abcdefull);
    EXPECT_EQ(*static_cast<std::uint64_t *>(
                  static_cast<void *>(static_cast<std::uint8_t *>(t(1).local_control()) + 64)),
              0x0123456789abcdefull);
    std::uint64_t read = 0;
    EXPECT_FALSE(is_error(post(0, [&](Completion *c) {
        return t(0).get(1, &read, 8, {Region::control, 64}, c);
    })));
    complete();
    EXPECT_EQ(read, 0x0123456789abcdefull);
}

TEST_P(Conformance, PutThenFlushDeliversTheBytes) {
    struct Piece {
        std::uint64_t offset;
        std::size_t length;
    };
    for (Region region : {Region::window, Region::control}) {
        const std::size_t bytes = region_bytes(region);
        // unaligned and odd, the first and the last bytes, a word
        const std::vector<Piece> pieces = {
            {100, region == Region::window ? std::size_t{3000} : std::size_t{1000}},
            {0, 1},
            {bytes - 1, 1},
            {bytes - 24, 8}};
        for (int origin = 0; origin < size(); ++origin)
            for (int peer = 0; peer < size(); ++peer) {
                SCOPED_TRACE(std::string(region_name(region)) + " " + std::to_string(origin) +
                             " -> " + std::to_string(peer));
                std::vector<std::vector<std::uint8_t>> data;
                for (const Piece &piece : pieces) {
                    data.emplace_back(piece.length);
                    for (std::size_t i = 0; i < piece.length; ++i)
                        data.back()[i] = static_cast<std::uint8_t>(i * 7 + origin * 3 + peer + 1);
                    const std::vector<std::uint8_t> &bytes = data.back();
                    EXPECT_FALSE(is_error(post(origin, [&](Completion *c) {
                        return t(origin).put(peer, bytes.data(), piece.length,
                                             {region, piece.offset}, c);
                    })));
                }
                EXPECT_FALSE(is_error(
                    post(origin, [&](Completion *c) { return t(origin).flush(peer, c); })));
                complete();
                const std::uint8_t *target = memory(peer, region);
                for (std::size_t k = 0; k < pieces.size(); ++k)
                    EXPECT_EQ(
                        std::memcmp(target + pieces[k].offset, data[k].data(), pieces[k].length), 0)
                        << "piece " << k;
                // Nothing else changed: each piece in place, the rest still the pattern.
                std::vector<std::uint8_t> expected(bytes);
                for (std::size_t i = 0; i < bytes; ++i) expected[i] = pattern(peer, region, i);
                for (std::size_t k = 0; k < pieces.size(); ++k)
                    std::memcpy(expected.data() + pieces[k].offset, data[k].data(),
                                pieces[k].length);
                EXPECT_EQ(std::memcmp(target, expected.data(), bytes), 0);
                restore(peer, region);
                expect_intact();
            }
    }
}

TEST_P(Conformance, GetReadsTheTargetsBytes) {
    for (Region region : {Region::window, Region::control}) {
        const std::size_t bytes = region_bytes(region);
        for (int origin = 0; origin < size(); ++origin)
            for (int peer = 0; peer < size(); ++peer) {
                SCOPED_TRACE(std::string(region_name(region)) + " " + std::to_string(origin) +
                             " -> " + std::to_string(peer));
                // Each destination lies between canaries: the get writes exactly its bytes.
                Guarded whole(bytes), tail(5);
                EXPECT_FALSE(is_error(post(origin, [&](Completion *c) {
                    return t(origin).get(peer, whole.region(), bytes, {region, 0}, c);
                })));
                EXPECT_FALSE(is_error(post(origin, [&](Completion *c) {
                    return t(origin).get(peer, tail.region(), 5, {region, bytes - 5}, c);
                })));
                complete();
                for (std::size_t i = 0; i < bytes; ++i)
                    ASSERT_EQ(whole.region()[i], pattern(peer, region, i)) << "byte " << i;
                for (std::size_t i = 0; i < 5; ++i)
                    EXPECT_EQ(tail.region()[i], pattern(peer, region, bytes - 5 + i));
                EXPECT_TRUE(whole.canaries_intact());
                EXPECT_TRUE(tail.canaries_intact());
                expect_intact();
            }
    }
}

struct AtomicCase {
    AtomicOp op;
    std::uint64_t initial, operand, compare, expected;
};

const char *op_name(AtomicOp op) {
    static const char *const names[] = {"fetch_add", "compare_swap", "swap",
                                        "fetch_and", "fetch_or",     "fetch_xor"};
    return names[static_cast<int>(op)];
}

// Every AtomicOp with 64-bit values (a truncating transport fails them).
std::vector<AtomicCase> atomic_cases() {
    const std::uint64_t x = 0xf0f0'0000'1234'5678ull;
    return {
        {AtomicOp::fetch_add, x, 10, 0, x + 10},
        {AtomicOp::fetch_add, ~0ull, 2, 0, 1},                         // wraps modulo 2^64
        {AtomicOp::compare_swap, x, 77, x, 77},                        // match: writes
        {AtomicOp::compare_swap, x, 77, x + 1, x},                     // mismatch: unchanged
        {AtomicOp::compare_swap, x, 1ull << 63, x ^ (1ull << 40), x},  // differs in high bits
        {AtomicOp::swap, x, 0x8000'0000'0000'0099ull, 0, 0x8000'0000'0000'0099ull},
        {AtomicOp::fetch_and, x, 0xff00'ff00'ff00'ff00ull, 0, x & 0xff00'ff00'ff00'ff00ull},
        {AtomicOp::fetch_or, x, 0x0f00'0000'0000'000full, 0, x | 0x0f00'0000'0000'000full},
        {AtomicOp::fetch_xor, x, ~0ull, 0, ~x},
    };
}

// Each case from every origin to every peer (itself included): the word updated, its
// neighbours not; fetching: the previous value in *result; non-fetching: no result, no
// completion, a flush then says it is done.
void Conformance::check_atomics(Region region, bool fetching) {
    constexpr std::uint64_t offset = 24;
    for (int origin = 0; origin < size(); ++origin)
        for (int peer = 0; peer < size(); ++peer)
            for (const AtomicCase &ac : atomic_cases()) {
                SCOPED_TRACE(std::string(op_name(ac.op)) + " " + std::to_string(origin) + " -> " +
                             std::to_string(peer));
                store(peer, region, offset, ac.initial);
                std::uint64_t result = 0xdead;
                if (fetching) {
                    EXPECT_FALSE(is_error(post(origin, [&](Completion *c) {
                        return t(origin).atomic(peer, ac.op, {region, offset}, ac.operand,
                                                ac.compare, &result, c);
                    })));
                } else {
                    EXPECT_FALSE(is_error(post(
                        origin,
                        [&](Completion *) {
                            return t(origin).atomic(peer, ac.op, {region, offset}, ac.operand,
                                                    ac.compare, nullptr, nullptr);
                        },
                        false)));
                    EXPECT_FALSE(is_error(
                        post(origin, [&](Completion *c) { return t(origin).flush(peer, c); })));
                }
                complete();
                if (fetching) {
                    EXPECT_EQ(result, ac.initial);
                }
                EXPECT_EQ(load(peer, region, offset), ac.expected);
                EXPECT_EQ(untouched(peer, region, offset, offset + 8), "");
                restore(peer, region);
            }
}

TEST_P(Conformance, FetchingAtomicsOnTheWindow) {
    if (!atomics_on(Region::window))
        GTEST_SKIP() << GetParam().name << ": " << GetParam().no_window_atomics;
    check_atomics(Region::window, true);
}

TEST_P(Conformance, FetchingAtomicsOnTheControlRegion) {
    ASSERT_TRUE(atomics_on(Region::control));
    check_atomics(Region::control, true);
}

TEST_P(Conformance, NonFetchingAtomicsOnTheWindow) {
    if (!atomics_on(Region::window))
        GTEST_SKIP() << GetParam().name << ": " << GetParam().no_window_atomics;
    check_atomics(Region::window, false);
}

TEST_P(Conformance, NonFetchingAtomicsOnTheControlRegion) {
    ASSERT_TRUE(atomics_on(Region::control));
    check_atomics(Region::control, false);
}

// Every AtomicOp on the upper 32-bit half of an 8-byte word (offset 28), from every
// origin to every peer: that half updated modulo 2^32, the lower half and the
// neighbours not, the previous value in *result; then words not 4-byte aligned or
// beyond the region refused.
TEST_P(Conformance, Atomics32OnTheWindow) {
    if (!atomics32_on()) GTEST_SKIP() << GetParam().name << ": no 32-bit atomics";
    constexpr std::uint64_t offset = 24;
    const std::uint64_t low = 0x1111'2222ull;
    const struct {
        AtomicOp op;
        std::uint32_t initial, operand, compare, expected;
    } cases[] = {
        {AtomicOp::fetch_add, 0x1234'5678u, 10, 0, 0x1234'5682u},
        {AtomicOp::fetch_add, ~0u, 2, 0, 1},  // wraps modulo 2^32, no carry into the low half
        {AtomicOp::compare_swap, 0x1234'5678u, 77, 0x1234'5678u, 77},
        {AtomicOp::compare_swap, 0x1234'5678u, 77, 0x1234'5679u, 0x1234'5678u},
        {AtomicOp::swap, 0x1234'5678u, 0x8000'0099u, 0, 0x8000'0099u},
        {AtomicOp::fetch_and, 0x1234'5678u, 0xff00'ff00u, 0, 0x1200'5600u},
        {AtomicOp::fetch_or, 0x1234'5678u, 0x0f00'000fu, 0, 0x1f34'567fu},
        {AtomicOp::fetch_xor, 0x1234'5678u, ~0u, 0, ~0x1234'5678u},
    };
    for (int origin = 0; origin < size(); ++origin)
        for (int peer = 0; peer < size(); ++peer)
            for (const auto &ac : cases) {
                SCOPED_TRACE(std::string(op_name(ac.op)) + " " + std::to_string(origin) + " -> " +
                             std::to_string(peer));
                store(peer, Region::window, offset, low | std::uint64_t{ac.initial} << 32);
                std::uint32_t result = 0xdead;
                EXPECT_FALSE(is_error(post(origin, [&](Completion *c) {
                    return t(origin).atomic32(peer, ac.op, {Region::window, offset + 4}, ac.operand,
                                              ac.compare, &result, c);
                })));
                complete();
                EXPECT_EQ(result, ac.initial);
                EXPECT_EQ(load(peer, Region::window, offset),
                          low | std::uint64_t{ac.expected} << 32);
                EXPECT_EQ(untouched(peer, Region::window, offset, offset + 8), "");
                restore(peer, Region::window);
            }
    const std::uint64_t bytes = region_bytes(Region::window);
    struct Bad {
        std::uint64_t offset;
        Status expected;
    };
    const Bad bad32[] = {{bytes, Status::err_range},
                         {bytes - 2, Status::err_range},
                         {~0ull - 3, Status::err_range},
                         {2, Status::err_arg},
                         {9, Status::err_arg}};
    for (int peer = 0; peer < size(); ++peer)
        for (const Bad &bad : bad32) {
            std::uint32_t result = 0xdead;
            EXPECT_EQ(post(0,
                           [&](Completion *c) {
                               return t(0).atomic32(peer, AtomicOp::fetch_add,
                                                    {Region::window, bad.offset}, 1, 0, &result, c);
                           }),
                      bad.expected)
                << "at " << bad.offset << " of " << peer;
            EXPECT_EQ(result, 0xdeadu);
        }
    complete();
    expect_intact();
}

// Every kind of call with a completion and without, to every peer: the completion
// model (checked by complete()), with several calls in flight at once.
TEST_P(Conformance, CompletionsRunOnceFromPollOnlyForCallsInProgress) {
    for (int origin = 0; origin < size(); ++origin) {
        std::vector<std::uint64_t> words(4 * size(), 0);
        std::uint64_t value = 0x1111 * (origin + 1);
        for (int peer = 0; peer < size(); ++peer) {
            std::uint64_t *out = &words[4 * peer];
            const std::uint64_t at = 512 + 64 * origin;
            EXPECT_FALSE(is_error(post(origin, [&](Completion *c) {
                return t(origin).put(peer, &value, 8, {Region::window, at}, c);
            })));
            EXPECT_FALSE(is_error(post(
                origin,
                [&](Completion *) {
                    return t(origin).put(peer, &value, 8, {Region::window, at + 8}, nullptr);
                },
                false)));
            EXPECT_FALSE(is_error(post(origin, [&](Completion *c) {
                return t(origin).get(peer, out, 8, {Region::control, 8}, c);
            })));
            EXPECT_FALSE(is_error(post(origin, [&](Completion *c) {
                return t(origin).atomic(peer, AtomicOp::fetch_add, {Region::control, at}, 1, 0,
                                        out + 1, c);
            })));
            EXPECT_FALSE(is_error(post(origin, [&](Completion *c) {
                return t(origin).atomic(peer, AtomicOp::fetch_add, {Region::control, at + 8}, 1, 0,
                                        nullptr, c);
            })));
            EXPECT_FALSE(
                is_error(post(origin, [&](Completion *c) { return t(origin).flush(peer, c); })));
        }
        complete();
        for (int peer = 0; peer < size(); ++peer) {
            SCOPED_TRACE(std::to_string(origin) + " -> " + std::to_string(peer));
            const std::uint64_t at = 512 + 64 * origin;
            EXPECT_EQ(load(peer, Region::window, at), value);
            EXPECT_EQ(load(peer, Region::window, at + 8), value);
            std::uint64_t control_word;
            std::memcpy(&control_word, memory(peer, Region::control) + 8, 8);
            EXPECT_EQ(words[4 * peer], control_word);
            std::uint64_t before;
            for (std::uint64_t k : {std::uint64_t{0}, std::uint64_t{8}}) {
                for (int i = 0; i < 8; ++i)
                    reinterpret_cast<std::uint8_t *>(&before)[i] =
                        pattern(peer, Region::control, at + k + i);
                EXPECT_EQ(load(peer, Region::control, at + k), before + 1);
            }
            EXPECT_EQ(words[4 * peer + 1] + 1, load(peer, Region::control, at));
        }
    }
}

TEST_P(Conformance, FlushWithNothingPostedCompletes) {
    for (int origin = 0; origin < size(); ++origin)
        for (int peer = 0; peer < size(); ++peer)
            EXPECT_FALSE(
                is_error(post(origin, [&](Completion *c) { return t(origin).flush(peer, c); })));
    complete();
    expect_intact();
}

// Data, a fence, then a flag (a put or an atomic, in turn): whenever the target sees the
// flag, the data before the fence is complete. The data goes in four puts, which the
// transport may perform in any order; the sim delivers the newest first, so without the
// fence the flag would land first.
TEST_P(Conformance, FenceOrdersOperationsPostedAfterIt) {
    constexpr std::uint64_t flag = 1024;  // a control word
    constexpr std::size_t quarter = window_bytes / 4;
    std::vector<std::uint8_t> data(window_bytes);
    for (int peer : {1, 0}) {
        store(peer, Region::control, flag, 0);
        for (std::uint64_t round = 1; round <= 20; ++round) {
            SCOPED_TRACE("peer " + std::to_string(peer) + " round " + std::to_string(round));
            std::memset(data.data(), static_cast<int>(round), data.size());
            for (std::size_t k = 0; k < 4; ++k)
                EXPECT_FALSE(is_error(post(0, [&](Completion *c) {
                    return t(0).put(peer, data.data() + k * quarter, quarter,
                                    {Region::window, k * quarter}, c);
                })));
            ASSERT_EQ(t(0).fence(peer), Status::ok);
            if (round % 2 == 1) {
                EXPECT_FALSE(is_error(post(0, [&](Completion *c) {
                    return t(0).put(peer, &round, 8, {Region::control, flag}, c);
                })));
            } else {
                EXPECT_FALSE(is_error(post(0, [&](Completion *c) {
                    return t(0).atomic(peer, AtomicOp::fetch_add, {Region::control, flag}, 1, 0,
                                       nullptr, c);
                })));
            }
            ASSERT_TRUE(progress_until([&] { return load(peer, Region::control, flag) >= round; }));
            EXPECT_EQ(load(peer, Region::control, flag), round);
            const std::uint8_t *window = memory(peer, Region::window);
            for (std::size_t i = 0; i < window_bytes; ++i)
                ASSERT_EQ(window[i], round) << "byte " << i << " not there before the flag";
            complete();
        }
        restore(peer, Region::window);
        restore(peer, Region::control);
    }
    expect_intact();
}

TEST_P(Conformance, PeersOutOfRangeAreRefused) {
    std::uint64_t buffer = 0x5a5a;
    for (int origin = 0; origin < size(); ++origin)
        for (int peer : {-1, size(), size() + 3}) {
            SCOPED_TRACE(std::to_string(origin) + " -> " + std::to_string(peer));
            EXPECT_EQ(post(origin,
                           [&](Completion *c) {
                               return t(origin).put(peer, &buffer, 8, {Region::window, 0}, c);
                           }),
                      Status::err_rank);
            EXPECT_EQ(post(origin,
                           [&](Completion *c) {
                               return t(origin).get(peer, &buffer, 8, {Region::control, 0}, c);
                           }),
                      Status::err_rank);
            EXPECT_EQ(post(origin,
                           [&](Completion *c) {
                               return t(origin).atomic(peer, AtomicOp::fetch_add,
                                                       {Region::control, 0}, 1, 0, &buffer, c);
                           }),
                      Status::err_rank);
            EXPECT_EQ(post(origin, [&](Completion *c) { return t(origin).flush(peer, c); }),
                      Status::err_rank);
            EXPECT_EQ(t(origin).fence(peer), Status::err_rank);
        }
    complete();
    EXPECT_EQ(buffer, 0x5a5au);
    expect_intact();
}

// Puts and gets beyond the region, or whose offset + length wraps around, are refused
// with err_range, write nothing (a refused get neither) and post nothing; up to the
// last byte, and a zero-length access at the end, are accepted.
TEST_P(Conformance, AccessesOutsideTheRegionAreRefused) {
    constexpr std::uint64_t top = ~0ull;
    constexpr std::size_t huge = ~std::size_t{0};
    for (Region region : {Region::window, Region::control}) {
        const std::uint64_t bytes = region_bytes(region);
        struct Access {
            std::uint64_t offset;
            std::size_t length;
        };
        const Access outside[] = {{bytes - 4, 8}, {bytes - 8, 16},  {bytes, 1},   {bytes, 8},
                                  {bytes + 8, 8}, {top, 1},         {top - 3, 8}, {top - 7, 16},
                                  {8, huge - 3},  {bytes - 8, huge}};
        for (int peer = 0; peer < size(); ++peer) {
            SCOPED_TRACE(std::string(region_name(region)) + " 0 -> " + std::to_string(peer));
            Guarded source(16), destination(16);
            std::memset(source.region(), 0x3c, 16);
            for (const Access &a : outside) {
                SCOPED_TRACE(std::to_string(a.offset) + " + " + std::to_string(a.length));
                EXPECT_EQ(
                    post(
                        0,
                        [&](Completion *c) {
                            return t(0).put(peer, source.region(), a.length, {region, a.offset}, c);
                        }),
                    Status::err_range);
                EXPECT_EQ(post(0,
                               [&](Completion *c) {
                                   return t(0).get(peer, destination.region(), a.length,
                                                   {region, a.offset}, c);
                               }),
                          Status::err_range);
            }
            complete();
            for (int i = 0; i < 16; ++i) EXPECT_EQ(destination.region()[i], 0);
            EXPECT_TRUE(destination.canaries_intact());
            expect_intact();

            // The last bytes are reachable; an empty access at the end is too.
            Guarded back(16);
            EXPECT_FALSE(is_error(post(0, [&](Completion *c) {
                return t(0).put(peer, source.region(), 16, {region, bytes - 16}, c);
            })));
            EXPECT_FALSE(is_error(post(
                0,
                [&](Completion *) {
                    return t(0).put(peer, source.region(), 0, {region, bytes}, nullptr);
                },
                false)));
            EXPECT_FALSE(is_error(post(0, [&](Completion *c) {
                return t(0).get(peer, destination.region(), 0, {region, bytes}, c);
            })));
            EXPECT_FALSE(is_error(post(0, [&](Completion *c) { return t(0).flush(peer, c); })));
            complete();
            EXPECT_FALSE(is_error(post(0, [&](Completion *c) {
                return t(0).get(peer, back.region(), 16, {region, bytes - 16}, c);
            })));
            complete();
            EXPECT_EQ(std::memcmp(back.region(), source.region(), 16), 0);
            EXPECT_EQ(std::memcmp(memory(peer, region) + bytes - 16, source.region(), 16), 0);
            EXPECT_EQ(untouched(peer, region, bytes - 16, bytes), "");
            for (int i = 0; i < 16; ++i) EXPECT_EQ(destination.region()[i], 0);
            EXPECT_TRUE(back.canaries_intact());
            restore(peer, region);
            expect_intact();
        }
    }
}

// Atomics beyond the region or wrapping around: err_range; on a word not 8-byte aligned:
// err_arg (the interface does not name the status; every transport returns these).
void Conformance::check_bad_atomics(Region region) {
    const std::uint64_t bytes = region_bytes(region);
    struct Bad {
        std::uint64_t offset;
        Status expected;
    };
    const Bad bad[] = {{bytes, Status::err_range},
                       {bytes - 4, Status::err_range},
                       {bytes + 8, Status::err_range},
                       {~0ull - 7, Status::err_range},
                       {~0ull - 3, Status::err_range},
                       {4, Status::err_arg},
                       {12, Status::err_arg},
                       {bytes - 12, Status::err_arg},
                       {1, Status::err_arg}};
    for (int peer = 0; peer < size(); ++peer)
        for (const Bad &b : bad)
            for (AtomicOp op : {AtomicOp::fetch_add, AtomicOp::compare_swap, AtomicOp::swap,
                                AtomicOp::fetch_or}) {
                SCOPED_TRACE(std::string(op_name(op)) + " 0 -> " + std::to_string(peer) + " at " +
                             std::to_string(b.offset));
                std::uint64_t result = 0xdead;
                EXPECT_EQ(post(0,
                               [&](Completion *c) {
                                   return t(0).atomic(peer, op, {region, b.offset}, 1,
                                                      0x0102030405060708ull, &result, c);
                               }),
                          b.expected);
                EXPECT_EQ(
                    post(0,
                         [&](Completion *c) {
                             return t(0).atomic(peer, op, {region, b.offset}, 1, 0, nullptr, c);
                         }),
                    b.expected);
                EXPECT_EQ(result, 0xdeadu);
            }
    complete();
}

TEST_P(Conformance, BadAtomicsOnTheWindowAreRefused) {
    if (!atomics_on(Region::window))
        GTEST_SKIP() << GetParam().name << ": " << GetParam().no_window_atomics;
    check_bad_atomics(Region::window);
    expect_intact();
}

TEST_P(Conformance, BadAtomicsOnTheControlRegionAreRefused) {
    ASSERT_TRUE(atomics_on(Region::control));
    check_bad_atomics(Region::control);
    expect_intact();
}

// attach/detach belong to dynamic windows: elsewhere unsupported, nothing attached.
TEST_P(Conformance, StaticWindowsAttachNothing) {
    Guarded region(64);
    for (int r = 0; r < size(); ++r) {
        EXPECT_EQ(t(r).attach(region.region(), 64), Status::err_unsupported);
        EXPECT_EQ(t(r).detach(region.region()), Status::err_unsupported);
        for (int peer = 0; peer < size(); ++peer)
            EXPECT_EQ(t(r).check_attached(peer, region.address(), region.address() + 64),
                      Status::err_range);
    }
}

std::string kind_name(const ::testing::TestParamInfo<Kind> &info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Transports, Conformance,
                         ::testing::Values(sim_kind, shm_kind, shm_cma_kind, ucx_kind), kind_name);

// ---------------------------------------------------------------- dynamic windows

// Rank 0 the origin, rank 1 the target, which attaches memory of the test's. The sim has
// no dynamic windows (StaticWindowsAttachNothing: attach is err_unsupported there).
class DynamicConformance : public Conformance {
  protected:
    bool dynamic() const override { return true; }
    void serve(bool on) { ranks_->serve(1, on); }
    // "" if the region's bytes outside [low, high) are still `fill`.
    static std::string holds(Guarded &memory, std::size_t size, std::uint8_t fill,
                             std::size_t low = 0, std::size_t high = 0) {
        for (std::size_t i = 0; i < size; ++i)
            if ((i < low || i >= high) && memory.region()[i] != fill)
                return "byte " + std::to_string(i) + " changed";
        if (!memory.canaries_intact()) return "canaries overwritten";
        return "";
    }
};

TEST_P(DynamicConformance, AttachedRegionsAreReachableAndDetachedOnesAreNot) {
    Guarded region(256), other(64);
    std::memset(region.region(), 0x11, 256);
    std::memset(other.region(), 0x22, 64);
    const std::uint64_t address = region.address();
    std::vector<std::uint8_t> data(100);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(3 * i + 7);

    serve(true);  // nothing attached yet
    EXPECT_EQ(t(0).check_attached(1, address, address + 8), Status::err_range);
    EXPECT_EQ(post(0,
                   [&](Completion *c) {
                       return t(0).put(1, data.data(), 8, {Region::window, address}, c);
                   }),
              Status::err_range);
    complete();
    serve(false);
    ASSERT_EQ(t(1).attach(region.region(), 256), Status::ok);
    ASSERT_EQ(t(1).attach(other.region(), 64), Status::ok);

    serve(true);
    EXPECT_EQ(t(0).check_attached(1, address, address + 256), Status::ok);
    EXPECT_EQ(t(0).check_attached(1, address, address + 257), Status::err_range);
    EXPECT_EQ(t(0).check_attached(1, address - 1, address + 8), Status::err_range);
    EXPECT_FALSE(is_error(post(0, [&](Completion *c) {
        return t(0).put(1, data.data(), data.size(), {Region::window, address + 16}, c);
    })));
    EXPECT_FALSE(is_error(post(0, [&](Completion *c) { return t(0).flush(1, c); })));
    complete();
    EXPECT_EQ(std::memcmp(region.region() + 16, data.data(), data.size()), 0);
    EXPECT_EQ(holds(region, 256, 0x11, 16, 116), "");
    std::vector<std::uint8_t> back(data.size());
    EXPECT_FALSE(is_error(post(0, [&](Completion *c) {
        return t(0).get(1, back.data(), back.size(), {Region::window, address + 16}, c);
    })));
    complete();
    EXPECT_EQ(back, data);
    // Past the end of the region.
    EXPECT_EQ(post(0,
                   [&](Completion *c) {
                       return t(0).put(1, data.data(), 16, {Region::window, address + 248}, c);
                   }),
              Status::err_range);
    complete();
    EXPECT_EQ(holds(region, 256, 0x11, 16, 116), "");

    // Detached: refused, nothing written; a second detach is err_arg.
    serve(false);
    ASSERT_EQ(t(1).detach(region.region()), Status::ok);
    EXPECT_EQ(t(1).detach(region.region()), Status::err_arg);
    std::memset(region.region(), 0x11, 256);
    serve(true);
    EXPECT_EQ(t(0).check_attached(1, address, address + 8), Status::err_range);
    EXPECT_EQ(post(0,
                   [&](Completion *c) {
                       return t(0).put(1, data.data(), 8, {Region::window, address}, c);
                   }),
              Status::err_range);
    EXPECT_EQ(post(0,
                   [&](Completion *c) {
                       return t(0).get(1, back.data(), 8, {Region::window, address}, c);
                   }),
              Status::err_range);
    EXPECT_FALSE(is_error(post(0, [&](Completion *c) { return t(0).flush(1, c); })));
    complete();
    EXPECT_EQ(holds(region, 256, 0x11), "");

    // Attached again at the same address: reachable again; the other region throughout.
    serve(false);
    ASSERT_EQ(t(1).attach(region.region(), 256), Status::ok);
    serve(true);
    EXPECT_FALSE(is_error(post(0, [&](Completion *c) {
        return t(0).put(1, data.data(), 8, {Region::window, address + 8}, c);
    })));
    EXPECT_FALSE(is_error(post(0, [&](Completion *c) {
        return t(0).put(1, data.data(), 64, {Region::window, other.address()}, c);
    })));
    EXPECT_FALSE(is_error(post(0, [&](Completion *c) { return t(0).flush(1, c); })));
    complete();
    EXPECT_EQ(std::memcmp(region.region() + 8, data.data(), 8), 0);
    EXPECT_EQ(holds(region, 256, 0x11, 8, 16), "");
    EXPECT_EQ(std::memcmp(other.region(), data.data(), 64), 0);
    EXPECT_TRUE(other.canaries_intact());
    serve(false);
    ASSERT_EQ(t(1).detach(region.region()), Status::ok);
    ASSERT_EQ(t(1).detach(other.region()), Status::ok);
    expect_intact();
}

TEST_P(DynamicConformance, AttachRefusesOverlapAndWrapAround) {
    Guarded region(256);
    ASSERT_EQ(t(1).attach(region.region(), 256), Status::ok);
    EXPECT_EQ(t(1).attach(region.region(), 256), Status::err_range);
    EXPECT_EQ(t(1).attach(region.region() + 8, 16), Status::err_range);
    EXPECT_EQ(t(1).attach(region.region() - 8, 16), Status::err_range);
    EXPECT_EQ(t(1).attach(region.region() + 248, 16), Status::err_range);
    EXPECT_EQ(t(1).attach(region.region() - 8, 272), Status::err_range);
    EXPECT_EQ(t(1).attach(reinterpret_cast<void *>(~std::uintptr_t{0} - 7), 16), Status::err_arg);
    EXPECT_EQ(t(1).detach(region.region() + 8), Status::err_arg);
    // The refused attaches changed nothing: exactly the one region is attached.
    serve(true);
    EXPECT_EQ(t(0).check_attached(1, region.address(), region.address() + 256), Status::ok);
    EXPECT_EQ(t(0).check_attached(1, region.address() - 8, region.address()), Status::err_range);
    EXPECT_EQ(t(0).check_attached(1, region.address() + 256, region.address() + 264),
              Status::err_range);
    serve(false);
    ASSERT_EQ(t(1).detach(region.region()), Status::ok);
    EXPECT_TRUE(region.canaries_intact());
}

// Dynamic windows address by absolute address: the null address, a range wrapping around
// the address space, or one running outside an attached region is refused with err_range.
TEST_P(DynamicConformance, AddressesOutsideAttachedRegionsAreRefused) {
    Guarded region(64);
    std::memset(region.region(), 0, 64);
    const std::uint64_t address = region.address();
    ASSERT_EQ(t(1).attach(region.region(), 64), Status::ok);
    serve(true);
    std::uint64_t value[2] = {1, 2};
    struct Access {
        std::uint64_t offset;
        std::size_t length;
    };
    const Access outside[] = {
        {0, 8},           {~0ull - 3, 8},    {address + 8, ~std::size_t{0} - 7},
        {address - 8, 8}, {address - 8, 16}, {address + 56, 16},
        {address + 64, 8}};
    for (const Access &a : outside) {
        SCOPED_TRACE(std::to_string(a.offset - address) + " + " + std::to_string(a.length));
        EXPECT_EQ(post(0,
                       [&](Completion *c) {
                           return t(0).put(1, value, a.length, {Region::window, a.offset}, c);
                       }),
                  Status::err_range);
        EXPECT_EQ(post(0,
                       [&](Completion *c) {
                           return t(0).get(1, value, a.length, {Region::window, a.offset}, c);
                       }),
                  Status::err_range);
    }
    if (t(0).supports_atomics(1, Region::window)) {
        for (std::uint64_t offset : {address + 64, address - 8, std::uint64_t{~0ull - 7}})
            EXPECT_EQ(post(0,
                           [&](Completion *c) {
                               return t(0).atomic(1, AtomicOp::swap, {Region::window, offset}, 1, 0,
                                                  value, c);
                           }),
                      Status::err_range);
    }
    complete();
    serve(false);
    EXPECT_EQ(value[0], 1u);
    EXPECT_EQ(value[1], 2u);
    EXPECT_EQ(holds(region, 64, 0), "");
    ASSERT_EQ(t(1).detach(region.region()), Status::ok);
    expect_intact();
}

TEST_P(DynamicConformance, AtomicsOnAttachedRegions) {
    Guarded region(64);
    std::memset(region.region(), 0, 64);
    const std::uint64_t address = region.address();
    auto *words = reinterpret_cast<std::uint64_t *>(region.region());
    ASSERT_EQ(t(1).attach(region.region(), 64), Status::ok);
    const bool supported = t(0).supports_atomics(1, Region::window);
    EXPECT_EQ(supported, GetParam().window_atomics);
    serve(true);
    std::uint64_t result = 0xdead;
    if (!supported) {  // refused, nothing touched
        EXPECT_TRUE(is_error(post(0, [&](Completion *c) {
            return t(0).atomic(1, AtomicOp::fetch_add, {Region::window, address + 16}, 1, 0,
                               &result, c);
        })));
        complete();
        serve(false);
        EXPECT_EQ(result, 0xdeadu);
        EXPECT_EQ(holds(region, 64, 0), "");
        ASSERT_EQ(t(1).detach(region.region()), Status::ok);
        GTEST_SKIP() << GetParam().name << ": " << GetParam().no_window_atomics;
    }
    for (const AtomicCase &ac : atomic_cases()) {
        SCOPED_TRACE(op_name(ac.op));
        words[2] = ac.initial;
        result = 0xdead;
        EXPECT_FALSE(is_error(post(0, [&](Completion *c) {
            return t(0).atomic(1, ac.op, {Region::window, address + 16}, ac.operand, ac.compare,
                               &result, c);
        })));
        complete();
        EXPECT_EQ(result, ac.initial);
        EXPECT_EQ(__atomic_load_n(&words[2], __ATOMIC_ACQUIRE), ac.expected);
        EXPECT_EQ(words[1], 0u);
        EXPECT_EQ(words[3], 0u);
    }
    words[2] = 0;
    result = 0xdead;
    EXPECT_EQ(post(0,
                   [&](Completion *c) {
                       return t(0).atomic(1, AtomicOp::fetch_add, {Region::window, address + 20}, 1,
                                          0, &result, c);
                   }),
              Status::err_arg);
    complete();
    serve(false);
    EXPECT_EQ(result, 0xdeadu);
    EXPECT_EQ(holds(region, 64, 0), "");
    ASSERT_EQ(t(1).detach(region.region()), Status::ok);
}

// Dynamic windows over shm: regions not moved into shared pages (user_memory.hpp, which
// this suite does not set up) take no CPU atomics.
const Kind shm_dynamic_kind{
    "shm",
    make_shm,
    false,
    false,
    true,
    "atomics on attached memory need regions moved into shared pages (ShmTransportMovedRegions)"};

INSTANTIATE_TEST_SUITE_P(Transports, DynamicConformance,
                         ::testing::Values(shm_dynamic_kind, ucx_kind), kind_name);

}  // namespace
}  // namespace nbrma::transport
