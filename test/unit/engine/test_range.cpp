// Target ranges of RMA calls (2): target_span over negative extents,
// negative true lower bounds and overflowing displacements, extents and counts; the
// window's check refusing them; data sizes beyond 64 bits; and a transfer that stops
// at the first segment the transport refuses.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "engine/datatype.hpp"
#include "engine/window.hpp"
#include "layout/control_region.hpp"
#include "transport/transport.hpp"

namespace nbrma::engine {
namespace {

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

struct Type {
    MPI_Datatype t = MPI_DATATYPE_NULL;
    explicit Type(MPI_Datatype type) : t(type) { MPI_Type_commit(&t); }
    ~Type() { MPI_Type_free(&t); }
    Type(const Type &) = delete;
    Type &operator=(const Type &) = delete;
};

MPI_Datatype resized(MPI_Datatype base, MPI_Aint lb, MPI_Aint extent) {
    MPI_Datatype t;
    MPI_Type_create_resized(base, lb, extent, &t);
    return t;
}

// struct {int at a, int at b}
MPI_Datatype two_ints(MPI_Aint a, MPI_Aint b) {
    const int blocks[] = {1, 1};
    const MPI_Aint displs[] = {a, b};
    const MPI_Datatype types[] = {MPI_INT, MPI_INT};
    MPI_Datatype t;
    MPI_Type_create_struct(2, blocks, displs, types, &t);
    return t;
}

struct Span {
    Status status;
    std::uint64_t start, low, high;
};

Span span(MPI_Datatype type, MPI_Aint count, MPI_Aint displacement, std::int64_t disp_unit = 1) {
    const TypeLayout *layout = nullptr;
    EXPECT_EQ(type_layout_get(type, &layout), Status::ok);
    RmaCall call;
    call.target_type = type;
    call.target_count = count;
    call.displacement = displacement;
    Span s{};
    s.status = target_span(call, *layout, disp_unit, &s.start, &s.low, &s.high);
    return s;
}

void expect_span(const Span &s, std::uint64_t start, std::uint64_t low, std::uint64_t high) {
    EXPECT_EQ(s.status, Status::ok);
    EXPECT_EQ(s.start, start);
    EXPECT_EQ(s.low, low);
    EXPECT_EQ(s.high, high);
}

TEST(TargetSpan, PositiveExtents) {
    expect_span(span(MPI_INT, 4, 2, 8), 16, 16, 32);
    Type gap(resized(MPI_INT, 0, 16));
    expect_span(span(gap.t, 3, 8), 8, 8, 8 + 32 + 4);
    expect_span(span(MPI_INT, 0, 1000), 0, 0, 0);  // no data: empty
}

// The lowest byte is in the last element, the highest in the first.
TEST(TargetSpan, NegativeExtents) {
    Type down(resized(MPI_INT, 0, -8));
    expect_span(span(down.t, 3, 16), 16, 0, 20);
    EXPECT_EQ(span(down.t, 3, 8).status, Status::err_range);  // last element at -8
    Type back(resized(two_ints(0, 32), 0, -64));              // struct {0, +32} resized to -64
    expect_span(span(back.t, 2, 128), 128, 64, 164);
    EXPECT_EQ(span(back.t, 2, 40).status, Status::err_range);  // element 1 at -24
    // The data reaches past the element's lower bound in both directions.
    Type wide(resized(two_ints(-16, 8), 0, -40));
    expect_span(span(wide.t, 2, 100), 100, 100 - 40 - 16, 100 + 12);
}

TEST(TargetSpan, OverflowIsOutOfRange) {
    EXPECT_EQ(span(MPI_INT, 1, MPI_Aint{1} << 61, 8).status, Status::err_range);  // 2^64
    EXPECT_EQ(span(MPI_INT, 2, int64_max).status, Status::err_range);
    EXPECT_EQ(span(MPI_INT, 1, int64_max - 4).status, Status::ok);  // ends at INT64_MAX
    EXPECT_EQ(span(MPI_INT, 1, int64_max - 3).status, Status::err_range);
    Type far_up(resized(MPI_INT, 0, MPI_Aint{1} << 62));
    EXPECT_EQ(span(far_up.t, 5, 0).status, Status::err_range);  // 4 * 2^62
    expect_span(span(far_up.t, 2, 0), 0, 0, (std::uint64_t{1} << 62) + 4);
    Type far_down(resized(MPI_INT, 0, -(MPI_Aint{1} << 62)));
    EXPECT_EQ(span(far_down.t, 5, 4096).status, Status::err_range);
    EXPECT_EQ(span(MPI_INT, (MPI_Aint{1} << 62) + 1, 0).status, Status::err_range);
    EXPECT_EQ(span(MPI_INT, 1, -1).status, Status::err_range);
}

TEST(TargetSpan, DataSizesBeyondSixtyFourBitsAreRefused) {
    const TypeLayout *l = nullptr;
    ASSERT_EQ(type_layout_get(MPI_DOUBLE, &l), Status::ok);
    std::size_t bytes = 0;
    EXPECT_TRUE(type_data_bytes(*l, MPI_Aint{1} << 59, &bytes));
    EXPECT_EQ(bytes, std::size_t{1} << 62);
    EXPECT_FALSE(type_data_bytes(*l, (MPI_Aint{1} << 60) + 1, &bytes));
    EXPECT_FALSE(type_data_bytes(*l, -1, &bytes));
}

// A transport that refuses every window access and counts the attempts.
class Refusing final : public transport::Transport {
  public:
    explicit Refusing(std::size_t control_bytes) : control_(control_bytes / 8 + 1, 0) {}
    int size() const override { return 2; }
    int rank() const override { return 0; }
    void *local_control() override { return control_.data(); }
    Status put(int, const void *, std::size_t, transport::RemoteAddress,
               transport::Completion *) override {
        ++attempts;
        return Status::err_range;
    }
    Status get(int, void *, std::size_t, transport::RemoteAddress,
               transport::Completion *) override {
        ++attempts;
        return Status::err_range;
    }
    Status atomic(int, transport::AtomicOp, transport::RemoteAddress, std::uint64_t, std::uint64_t,
                  std::uint64_t *, transport::Completion *) override {
        ++attempts;
        return Status::err_range;
    }
    bool supports_atomics(int, transport::Region) const override { return true; }
    Status fence(int) override { return Status::ok; }
    Status flush(int, transport::Completion *) override { return Status::ok; }
    int poll() override { return 0; }
    int attempts = 0;

  private:
    std::vector<std::uint64_t> control_;
};

// The engine's range check and the transport's own disagree (the transport was given
// less memory): the operation fails at the first segment instead of trying them all,
// and the window refuses what is outside its range before the transport sees it.
TEST(WindowRange, TransferStopsAtTheFirstRefusedSegment) {
    layout::ControlLayout layout(2);
    Refusing transport(layout.size());
    WindowConfig config;
    config.sizes.assign(2, 1 << 20);
    config.disp_units.assign(2, 1);
    Window window(transport, layout, config);
    ASSERT_EQ(window.lock_all(MPI_MODE_NOCHECK), Status::ok);

    Type sparse(resized(MPI_INT, 0, 16));
    std::vector<int> data(1000, 1);
    for (RmaKind kind : {RmaKind::put, RmaKind::get, RmaKind::accumulate}) {
        SCOPED_TRACE(rma_kind_name(kind));
        RmaCall call;
        call.kind = kind;
        call.target = 1;
        call.target_count = 1000;
        call.target_type = sparse.t;
        call.op = MPI_SUM;
        if (kind == RmaKind::get) {
            call.result = data.data();
            call.result_count = 1000;
            call.result_type = MPI_INT;
        } else {
            call.origin = data.data();
            call.origin_count = 1000;
            call.origin_type = MPI_INT;
        }
        transport.attempts = 0;
        Request *request = nullptr;
        ASSERT_EQ(window.rma(call, kind == RmaKind::accumulate ? nullptr : &request), Status::ok);
        if (request) {
            EXPECT_EQ(request->status(), Status::err_range);
            request->release();  // ours; finish() released the engine's
        }
        EXPECT_EQ(transport.attempts, 1);

        // Past the window's end, or below its start with a negative extent: refused by
        // the window, the transport never asked.
        transport.attempts = 0;
        call.displacement = (1 << 20) - 16 * 999;
        EXPECT_EQ(window.rma(call, nullptr), Status::err_range);
        MPI_Datatype inner = two_ints(0, 32);
        Type back(resized(inner, 0, -64));  // struct {0, +32} resized to -64
        MPI_Type_free(&inner);
        call.target_type = back.t;
        call.target_count = 2;  // ints at 40, 72, then -24, 8
        (kind == RmaKind::get ? call.result_count : call.origin_count) = 4;
        call.displacement = 40;
        EXPECT_EQ(window.rma(call, nullptr), Status::err_range);
        EXPECT_EQ(transport.attempts, 0);
    }
}

}  // namespace
}  // namespace nbrma::engine
