// Unit tests of accumulate reductions: every op class on several types, wrap-around,
// MAXLOC/MINLOC on packed pairs including ties, the op/type validity rules (user ops
// and mismatches rejected; MPI_CHAR a signed 8-bit integer; compare_and_swap types),
// the mapping to 64-bit transport atomics, and Operation::check's call-level rules
// (zero-byte calls are no-ops, MPI_NO_OP only in fetching calls).
#include <gtest/gtest.h>
#include <mpi.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/operation.hpp"
#include "engine/reduce.hpp"

using nbrma::Status;
using nbrma::engine::reduce_apply;
using nbrma::engine::reduce_as_atomic;
using nbrma::engine::reduce_by_compare_swap;
using nbrma::engine::reduce_check;
using nbrma::engine::reduce_check_compare_swap;
using nbrma::engine::reduce_check_op;
using nbrma::transport::AtomicOp;

namespace {

template <class T>
std::vector<T> run(MPI_Op op, MPI_Datatype type, std::vector<T> origin, std::vector<T> target) {
    EXPECT_EQ(reduce_apply(op, type, origin.data(), target.data(), origin.size()), Status::ok);
    return target;
}

// Packed {value, index} pairs as reduce_apply expects them (no C struct padding).
template <class V, class I>
std::vector<unsigned char> pairs(const std::vector<std::pair<V, I>> &items) {
    std::vector<unsigned char> out(items.size() * (sizeof(V) + sizeof(I)));
    unsigned char *p = out.data();
    for (const auto &[v, i] : items) {
        std::memcpy(p, &v, sizeof(V));
        std::memcpy(p + sizeof(V), &i, sizeof(I));
        p += sizeof(V) + sizeof(I);
    }
    return out;
}

void user_fn(void *, void *, int *, MPI_Datatype *) {}

}  // namespace

TEST(ReduceApply, Sum) {
    EXPECT_EQ(run<int>(MPI_SUM, MPI_INT, {1, -2, 3}, {10, 20, -30}),
              (std::vector<int>{11, 18, -27}));
    EXPECT_EQ(run<double>(MPI_SUM, MPI_DOUBLE, {0.5, 1.25}, {2.0, -1.0}),
              (std::vector<double>{2.5, 0.25}));
    EXPECT_EQ(run<std::uint64_t>(MPI_SUM, MPI_UINT64_T, {~std::uint64_t{0}}, {2}),
              (std::vector<std::uint64_t>{1}));
    // Signed wrap-around is two's complement, as MPI implementations do.
    EXPECT_EQ(run<std::int8_t>(MPI_SUM, MPI_INT8_T, {127, -128}, {1, -1}),
              (std::vector<std::int8_t>{-128, 127}));
    EXPECT_EQ(run<MPI_Aint>(MPI_SUM, MPI_AINT, {1000}, {24}), (std::vector<MPI_Aint>{1024}));
    using C = std::complex<double>;
    EXPECT_EQ(run<C>(MPI_SUM, MPI_C_DOUBLE_COMPLEX, {C(1, 2)}, {C(3, -4)}),
              (std::vector<C>{C(4, -2)}));
}

// A bulk reduction (the vector kernels: SSE2, or AVX2 where the CPU has it, from 16
// elements on) equals one element at a time, at lengths around the vector widths and at
// unaligned starts; and the kernel reduce_kernel hands out does what reduce_apply does.
template <class T>
void bulk_equals_one_by_one(MPI_Datatype type, MPI_Op op) {
    for (std::size_t n : {1u, 15u, 16u, 17u, 31u, 64u, 100u, 1027u})
        for (std::size_t shift : {0u, 1u, 3u}) {
            std::vector<unsigned char> origin(n * sizeof(T) + 8), bulk(n * sizeof(T) + 8);
            for (std::size_t i = 0; i < origin.size(); ++i) {
                origin[i] = static_cast<unsigned char>(i * 37 + 11);
                bulk[i] = static_cast<unsigned char>(i * 91 + 5);
            }
            if constexpr (std::is_floating_point_v<T>)  // no NaNs: finite values
                for (std::size_t i = 0; i < n; ++i) {
                    const T a = static_cast<T>(i) * T(0.5), b = static_cast<T>(n - i) * T(1.25);
                    std::memcpy(origin.data() + shift + i * sizeof(T), &a, sizeof(T));
                    std::memcpy(bulk.data() + shift + i * sizeof(T), &b, sizeof(T));
                }
            std::vector<unsigned char> single = bulk, kernel = bulk;
            ASSERT_EQ(reduce_apply(op, type, origin.data() + shift, bulk.data() + shift, n),
                      Status::ok);
            for (std::size_t i = 0; i < n; ++i)
                ASSERT_EQ(reduce_apply(op, type, origin.data() + shift + i * sizeof(T),
                                       single.data() + shift + i * sizeof(T), 1),
                          Status::ok);
            nbrma::engine::ReduceKernel k;
            ASSERT_TRUE(nbrma::engine::reduce_kernel(op, type, &k));
            nbrma::engine::reduce_run(k, origin.data() + shift, kernel.data() + shift, n);
            EXPECT_EQ(bulk, single) << n << " elements from +" << shift;
            EXPECT_EQ(kernel, single) << n << " elements from +" << shift;
        }
}

TEST(ReduceApply, BulkEqualsOneElementAtATime) {
    bulk_equals_one_by_one<double>(MPI_DOUBLE, MPI_SUM);
    bulk_equals_one_by_one<double>(MPI_DOUBLE, MPI_MAX);
    bulk_equals_one_by_one<float>(MPI_FLOAT, MPI_PROD);
    bulk_equals_one_by_one<std::int64_t>(MPI_INT64_T, MPI_SUM);
    bulk_equals_one_by_one<std::int32_t>(MPI_INT, MPI_BXOR);
    bulk_equals_one_by_one<std::int16_t>(MPI_SHORT, MPI_MIN);
    bulk_equals_one_by_one<std::int8_t>(MPI_CHAR, MPI_SUM);
    EXPECT_FALSE([] {
        nbrma::engine::ReduceKernel k;
        return nbrma::engine::reduce_kernel(MPI_REPLACE, MPI_DOUBLE, &k);
    }());  // no arithmetic: the caller copies
}

TEST(ReduceApply, Prod) {
    EXPECT_EQ(run<float>(MPI_PROD, MPI_FLOAT, {2.0f, -0.5f}, {3.0f, 8.0f}),
              (std::vector<float>{6.0f, -4.0f}));
    EXPECT_EQ(run<long>(MPI_PROD, MPI_LONG, {1L << 20}, {1L << 30}), (std::vector<long>{1L << 50}));
    EXPECT_EQ(run<unsigned short>(MPI_PROD, MPI_UNSIGNED_SHORT, {65535}, {65535}),
              (std::vector<unsigned short>{1}));
    using C = std::complex<float>;
    EXPECT_EQ(run<C>(MPI_PROD, MPI_C_FLOAT_COMPLEX, {C(0, 1)}, {C(0, 1)}),
              (std::vector<C>{C(-1, 0)}));
}

TEST(ReduceApply, MaxMin) {
    EXPECT_EQ(run<int>(MPI_MAX, MPI_INT, {5, -5, 0}, {3, -3, 0}), (std::vector<int>{5, -3, 0}));
    EXPECT_EQ(run<int>(MPI_MIN, MPI_INT, {5, -5, 0}, {3, -3, 0}), (std::vector<int>{3, -5, 0}));
    EXPECT_EQ(run<unsigned>(MPI_MAX, MPI_UNSIGNED, {0xffffffffu}, {1}),
              (std::vector<unsigned>{0xffffffffu}));
    EXPECT_EQ(run<double>(MPI_MIN, MPI_DOUBLE, {-1.5, 7.0}, {-2.5, 3.0}),
              (std::vector<double>{-2.5, 3.0}));
    EXPECT_EQ(run<long double>(MPI_MAX, MPI_LONG_DOUBLE, {1.0L}, {2.0L}),
              (std::vector<long double>{2.0L}));
}

TEST(ReduceApply, Logical) {
    const std::vector<int> a{0, 0, 5, 7}, b{0, -2, 0, 1};
    EXPECT_EQ(run<int>(MPI_LAND, MPI_INT, a, b), (std::vector<int>{0, 0, 0, 1}));
    EXPECT_EQ(run<int>(MPI_LOR, MPI_INT, a, b), (std::vector<int>{0, 1, 1, 1}));
    EXPECT_EQ(run<int>(MPI_LXOR, MPI_INT, a, b), (std::vector<int>{0, 1, 1, 0}));
    const std::vector<std::uint8_t> x{0, 0, 1, 1}, y{0, 1, 0, 1};
    EXPECT_EQ(run<std::uint8_t>(MPI_LAND, MPI_C_BOOL, x, y),
              (std::vector<std::uint8_t>{0, 0, 0, 1}));
    EXPECT_EQ(run<std::uint8_t>(MPI_LOR, MPI_C_BOOL, x, y),
              (std::vector<std::uint8_t>{0, 1, 1, 1}));
    EXPECT_EQ(run<std::uint8_t>(MPI_LXOR, MPI_CXX_BOOL, x, y),
              (std::vector<std::uint8_t>{0, 1, 1, 0}));
}

TEST(ReduceApply, Bitwise) {
    EXPECT_EQ(run<std::uint32_t>(MPI_BAND, MPI_UINT32_T, {0xff00ff00u}, {0x0ff00ff0u}),
              (std::vector<std::uint32_t>{0x0f000f00u}));
    EXPECT_EQ(run<std::uint32_t>(MPI_BOR, MPI_UINT32_T, {0xff00ff00u}, {0x0ff00ff0u}),
              (std::vector<std::uint32_t>{0xfff0fff0u}));
    EXPECT_EQ(run<std::uint32_t>(MPI_BXOR, MPI_UINT32_T, {0xff00ff00u}, {0x0ff00ff0u}),
              (std::vector<std::uint32_t>{0xf0f0f0f0u}));
    EXPECT_EQ(run<unsigned char>(MPI_BXOR, MPI_BYTE, {0xaa, 0x0f}, {0xff, 0xf0}),
              (std::vector<unsigned char>{0x55, 0xff}));
    EXPECT_EQ(run<long long>(MPI_BAND, MPI_LONG_LONG, {-1}, {0x123456789abcLL}),
              (std::vector<long long>{0x123456789abcLL}));
}

TEST(ReduceApply, ReplaceAndNoOp) {
    EXPECT_EQ(run<double>(MPI_REPLACE, MPI_DOUBLE, {1.0, 2.0}, {9.0, 9.0}),
              (std::vector<double>{1.0, 2.0}));
    EXPECT_EQ(run<char>(MPI_REPLACE, MPI_CHAR, {'a', 'b'}, {'x', 'y'}),
              (std::vector<char>{'a', 'b'}));
    EXPECT_EQ(run<int>(MPI_NO_OP, MPI_INT, {1, 2}, {7, 8}), (std::vector<int>{7, 8}));
    auto origin = pairs<double, int>({{1.5, 3}}), target = pairs<double, int>({{0.0, 0}});
    ASSERT_EQ(reduce_apply(MPI_REPLACE, MPI_DOUBLE_INT, origin.data(), target.data(), 1),
              Status::ok);
    EXPECT_EQ(target, origin);
    EXPECT_EQ(reduce_apply(MPI_SUM, MPI_INT, nullptr, nullptr, 0), Status::ok);
}

TEST(ReduceApply, MaxlocMinlocWithTies) {
    // origin vs target: origin larger, target larger, tie with origin's index smaller,
    // tie with target's index smaller.
    auto origin = pairs<double, int>({{5.0, 1}, {1.0, 2}, {3.0, 4}, {3.0, 9}});
    auto target = pairs<double, int>({{2.0, 7}, {4.0, 8}, {3.0, 6}, {3.0, 5}});
    auto max = target;
    ASSERT_EQ(reduce_apply(MPI_MAXLOC, MPI_DOUBLE_INT, origin.data(), max.data(), 4), Status::ok);
    EXPECT_EQ(max, (pairs<double, int>({{5.0, 1}, {4.0, 8}, {3.0, 4}, {3.0, 5}})));
    auto min = target;
    ASSERT_EQ(reduce_apply(MPI_MINLOC, MPI_DOUBLE_INT, origin.data(), min.data(), 4), Status::ok);
    EXPECT_EQ(min, (pairs<double, int>({{2.0, 7}, {1.0, 2}, {3.0, 4}, {3.0, 5}})));

    // MPI_SHORT_INT packs to 6 bytes per element: unaligned ints.
    auto so = pairs<short, int>({{-1, 10}, {4, 3}, {4, 1}});
    auto st = pairs<short, int>({{-2, 20}, {4, 2}, {5, 0}});
    ASSERT_EQ(so.size(), 18u);
    ASSERT_EQ(reduce_apply(MPI_MINLOC, MPI_SHORT_INT, so.data(), st.data(), 3), Status::ok);
    EXPECT_EQ(st, (pairs<short, int>({{-2, 20}, {4, 2}, {4, 1}})));

    auto io = pairs<int, int>({{7, 3}, {7, 3}});
    auto it = pairs<int, int>({{7, 0}, {6, 9}});
    ASSERT_EQ(reduce_apply(MPI_MAXLOC, MPI_2INT, io.data(), it.data(), 2), Status::ok);
    EXPECT_EQ(it, (pairs<int, int>({{7, 0}, {7, 3}})));

    // long double has padding bytes, so compare the decoded values, not raw bytes.
    auto lo = pairs<long double, int>({{1.0L, 5}, {8.0L, 6}});
    auto lt = pairs<long double, int>({{1.0L, 4}, {2.0L, 1}});
    ASSERT_EQ(lo.size(), 40u);
    ASSERT_EQ(reduce_apply(MPI_MAXLOC, MPI_LONG_DOUBLE_INT, lo.data(), lt.data(), 2), Status::ok);
    long double value;
    int index;
    std::memcpy(&value, lt.data(), sizeof value);
    std::memcpy(&index, lt.data() + sizeof value, sizeof index);
    EXPECT_EQ(value, 1.0L);
    EXPECT_EQ(index, 4);
    std::memcpy(&value, lt.data() + 20, sizeof value);
    std::memcpy(&index, lt.data() + 20 + sizeof value, sizeof index);
    EXPECT_EQ(value, 8.0L);
    EXPECT_EQ(index, 6);
}

TEST(ReduceCheck, OpTypeRules) {
    EXPECT_EQ(reduce_check(MPI_SUM, MPI_INT), Status::ok);
    EXPECT_EQ(reduce_check(MPI_SUM, MPI_C_DOUBLE_COMPLEX), Status::ok);
    EXPECT_EQ(reduce_check(MPI_SUM, MPI_AINT), Status::ok);
    EXPECT_EQ(reduce_check(MPI_MAX, MPI_INTEGER), Status::ok);
    EXPECT_EQ(reduce_check(MPI_LAND, MPI_C_BOOL), Status::ok);
    EXPECT_EQ(reduce_check(MPI_BOR, MPI_BYTE), Status::ok);
    EXPECT_EQ(reduce_check(MPI_MINLOC, MPI_FLOAT_INT), Status::ok);
    EXPECT_EQ(reduce_check(MPI_REPLACE, MPI_CHAR), Status::ok);
    EXPECT_EQ(reduce_check(MPI_NO_OP, MPI_PACKED), Status::ok);
    EXPECT_EQ(reduce_check(MPI_REPLACE, MPI_SHORT_INT), Status::ok);

    EXPECT_EQ(reduce_check(MPI_BAND, MPI_DOUBLE), Status::err_op);
    EXPECT_EQ(reduce_check(MPI_LAND, MPI_DOUBLE), Status::err_op);
    EXPECT_EQ(reduce_check(MPI_LAND, MPI_INTEGER), Status::err_op);  // Fortran integer: not logical
    EXPECT_EQ(reduce_check(MPI_SUM, MPI_C_BOOL), Status::err_op);
    EXPECT_EQ(reduce_check(MPI_MAX, MPI_C_FLOAT_COMPLEX), Status::err_op);
    EXPECT_EQ(reduce_check(MPI_SUM, MPI_BYTE), Status::err_op);
    EXPECT_EQ(reduce_check(MPI_SUM, MPI_WCHAR), Status::err_op);
    EXPECT_EQ(reduce_check(MPI_MINLOC, MPI_CHAR), Status::err_op);
    EXPECT_EQ(reduce_check(MPI_MAXLOC, MPI_INT), Status::err_op);
    EXPECT_EQ(reduce_check(MPI_SUM, MPI_DOUBLE_INT), Status::err_op);
    EXPECT_EQ(reduce_check(MPI_OP_NULL, MPI_INT), Status::err_op);

    EXPECT_EQ(reduce_check(MPI_SUM, MPI_DATATYPE_NULL), Status::err_type);
    EXPECT_EQ(reduce_check(MPI_REPLACE, MPI_DATATYPE_NULL), Status::err_type);
    MPI_Datatype derived;
    MPI_Type_contiguous(2, MPI_INT, &derived);
    MPI_Type_commit(&derived);
    EXPECT_EQ(reduce_check(MPI_SUM, derived), Status::err_type);
    MPI_Type_free(&derived);

    if (MPI_REAL16 != MPI_DATATYPE_NULL) {
        EXPECT_EQ(reduce_check(MPI_SUM, MPI_REAL16), Status::err_unsupported);
        EXPECT_EQ(reduce_check(MPI_REPLACE, MPI_REAL16), Status::ok);
    }
}

// MPI_CHAR is a signed 8-bit C integer for every arithmetic, logical and bitwise op, as
// in MPICH (OSU's osu_acc_latency accumulates MPI_CHAR with MPI_SUM).
TEST(ReduceCheck, CharIsASignedEightBitInteger) {
    for (MPI_Op op : {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND,
                      MPI_BOR, MPI_BXOR, MPI_REPLACE, MPI_NO_OP})
        EXPECT_EQ(reduce_check(op, MPI_CHAR), Status::ok);
    EXPECT_EQ(run<signed char>(MPI_SUM, MPI_CHAR, {100, -5}, {100, 3}),
              (std::vector<signed char>{-56, -2}));  // wraps as signed
    EXPECT_EQ(run<signed char>(MPI_MAX, MPI_CHAR, {-7, 5}, {3, -1}),
              (std::vector<signed char>{3, 5}));  // unsigned would pick 249 (-7)
    EXPECT_EQ(run<signed char>(MPI_MIN, MPI_CHAR, {-7, 5}, {3, -1}),
              (std::vector<signed char>{-7, -1}));
    EXPECT_EQ(run<signed char>(MPI_BXOR, MPI_CHAR, {0x0f}, {0x33}),
              (std::vector<signed char>{0x3c}));
    AtomicOp a;
    bool zero;
    EXPECT_TRUE(reduce_as_atomic(MPI_SUM, MPI_CHAR, &a, &zero));  // 1 byte: an 8-bit atomic
    EXPECT_EQ(a, AtomicOp::fetch_add);
    EXPECT_FALSE(reduce_as_atomic(MPI_MAX, MPI_CHAR, &a, &zero));  // no such atomic: the lock
}

TEST(ReduceCheck, OpAlone) {
    for (MPI_Op op : {MPI_SUM, MPI_MAXLOC, MPI_BAND, MPI_REPLACE, MPI_NO_OP})
        EXPECT_EQ(reduce_check_op(op), Status::ok);
    EXPECT_EQ(reduce_check_op(MPI_OP_NULL), Status::err_op);
    MPI_Op user;
    ASSERT_EQ(MPI_Op_create(user_fn, 1, &user), MPI_SUCCESS);
    EXPECT_EQ(reduce_check_op(user), Status::err_op);
    MPI_Op_free(&user);
}

// MPI-4.0 §12.3.4: C integer, Fortran integer, logical, byte, multi-language types.
TEST(ReduceCheck, CompareAndSwapTypes) {
    for (MPI_Datatype type :
         {MPI_INT, MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_LONG, MPI_INT64_T, MPI_UINT8_T,
          MPI_INTEGER, MPI_C_BOOL, MPI_LOGICAL, MPI_BYTE, MPI_AINT, MPI_OFFSET, MPI_COUNT})
        EXPECT_EQ(reduce_check_compare_swap(type), Status::ok);
    for (MPI_Datatype type : {MPI_DOUBLE, MPI_FLOAT, MPI_LONG_DOUBLE, MPI_REAL, MPI_C_FLOAT_COMPLEX,
                              MPI_2INT, MPI_DOUBLE_INT, MPI_WCHAR, MPI_PACKED, MPI_DATATYPE_NULL})
        EXPECT_EQ(reduce_check_compare_swap(type), Status::err_type);
}

namespace {
using nbrma::engine::Operation;
using nbrma::engine::RmaCall;
using nbrma::engine::RmaKind;

RmaCall call_of(RmaKind kind, MPI_Aint origin_count, MPI_Datatype origin_type,
                MPI_Aint target_count, MPI_Datatype target_type, MPI_Op op = MPI_SUM) {
    RmaCall call;
    call.kind = kind;
    call.origin_count = origin_count;
    call.origin_type = origin_type;
    call.target = 1;
    call.target_count = target_count;
    call.target_type = target_type;
    call.op = op;
    if (kind == RmaKind::get || kind == RmaKind::get_accumulate || kind == RmaKind::fetch_and_op ||
        kind == RmaKind::compare_and_swap) {
        call.result_count = origin_count;
        call.result_type = origin_type;
    }
    return call;
}

Status check(const RmaCall &call, bool *empty) { return Operation::check(call, empty); }
}  // namespace

TEST(OperationCheck, ZeroBytesIsANoOpWhateverTheTypes) {
    MPI_Datatype none;
    ASSERT_EQ(MPI_Type_contiguous(0, MPI_INT, &none), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_commit(&none), MPI_SUCCESS);
    bool empty = false;
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 0, MPI_INT, 0, MPI_DOUBLE), &empty), Status::ok);
    EXPECT_TRUE(empty);
    empty = false;
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 1, MPI_INT, 0, MPI_DOUBLE), &empty), Status::ok);
    EXPECT_TRUE(empty);
    empty = false;
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 1, none, 2, MPI_INT), &empty), Status::ok);
    EXPECT_TRUE(empty);
    empty = false;
    EXPECT_EQ(check(call_of(RmaKind::get_accumulate, 0, MPI_CHAR, 0, MPI_FLOAT), &empty),
              Status::ok);
    EXPECT_TRUE(empty);
    empty = false;
    EXPECT_EQ(check(call_of(RmaKind::put, 0, MPI_INT, 0, MPI_DOUBLE), &empty), Status::ok);
    EXPECT_TRUE(empty);
    empty = false;
    EXPECT_EQ(check(call_of(RmaKind::get, 3, MPI_INT, 1, none), &empty), Status::ok);
    EXPECT_TRUE(empty);
    // Handles are still checked.
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 0, MPI_DATATYPE_NULL, 0, MPI_INT), &empty),
              Status::err_type);
    EXPECT_EQ(check(call_of(RmaKind::put, 0, MPI_INT, 0, MPI_DATATYPE_NULL), &empty),
              Status::err_type);
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 0, MPI_INT, 0, MPI_INT, MPI_OP_NULL), &empty),
              Status::err_op);
    EXPECT_EQ(check(call_of(RmaKind::accumulate, -1, MPI_INT, 0, MPI_INT), &empty),
              Status::err_count);
    // Data on every side: the sizes must agree, and the call is not empty.
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 1, MPI_INT, 1, MPI_DOUBLE), &empty),
              Status::err_type);
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 2, MPI_INT, 2, MPI_INT), &empty), Status::ok);
    EXPECT_FALSE(empty);
    MPI_Type_free(&none);
}

TEST(OperationCheck, NoOpOnlyInFetchingCalls) {
    bool empty = false;
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 1, MPI_INT, 1, MPI_INT, MPI_NO_OP), &empty),
              Status::err_op);
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 0, MPI_INT, 0, MPI_INT, MPI_NO_OP), &empty),
              Status::err_op);
    EXPECT_EQ(check(call_of(RmaKind::get_accumulate, 1, MPI_INT, 1, MPI_INT, MPI_NO_OP), &empty),
              Status::ok);
    EXPECT_EQ(check(call_of(RmaKind::fetch_and_op, 1, MPI_INT, 1, MPI_INT, MPI_NO_OP), &empty),
              Status::ok);
}

TEST(OperationCheck, CompareAndSwapNeedsAnIntegerLogicalOrByteType) {
    bool empty = false;
    for (MPI_Datatype type : {MPI_DOUBLE, MPI_FLOAT, MPI_C_DOUBLE_COMPLEX, MPI_2INT})
        EXPECT_EQ(check(call_of(RmaKind::compare_and_swap, 1, type, 1, type), &empty),
                  Status::err_type);
    for (MPI_Datatype type : {MPI_INT, MPI_CHAR, MPI_BYTE, MPI_C_BOOL, MPI_UINT64_T, MPI_AINT})
        EXPECT_EQ(check(call_of(RmaKind::compare_and_swap, 1, type, 1, type), &empty), Status::ok);
    MPI_Datatype derived;
    ASSERT_EQ(MPI_Type_contiguous(1, MPI_INT, &derived), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_commit(&derived), MPI_SUCCESS);
    EXPECT_EQ(check(call_of(RmaKind::compare_and_swap, 1, derived, 1, derived), &empty),
              Status::err_type);
    MPI_Type_free(&derived);
}

TEST(ReduceCheck, UserOpRejected) {
    MPI_Op op;
    ASSERT_EQ(MPI_Op_create(user_fn, 1, &op), MPI_SUCCESS);
    EXPECT_EQ(reduce_check(op, MPI_INT), Status::err_op);
    int origin = 1, target = 2;
    EXPECT_EQ(reduce_apply(op, MPI_INT, &origin, &target, 1), Status::err_op);
    EXPECT_EQ(target, 2);
    AtomicOp a;
    bool zero;
    EXPECT_FALSE(reduce_as_atomic(op, MPI_INT64_T, &a, &zero));
    MPI_Op_free(&op);

    double d = 1.0, e = 2.0;
    EXPECT_EQ(reduce_apply(MPI_BAND, MPI_DOUBLE, &d, &e, 1), Status::err_op);
    EXPECT_EQ(e, 2.0);
}

TEST(ReduceAtomic, Mapping) {
    AtomicOp a = AtomicOp::compare_swap;
    bool zero = true;
    EXPECT_TRUE(reduce_as_atomic(MPI_SUM, MPI_INT64_T, &a, &zero));
    EXPECT_EQ(a, AtomicOp::fetch_add);
    EXPECT_FALSE(zero);
    EXPECT_TRUE(reduce_as_atomic(MPI_BAND, MPI_UINT64_T, &a, &zero));
    EXPECT_EQ(a, AtomicOp::fetch_and);
    EXPECT_TRUE(reduce_as_atomic(MPI_BOR, MPI_LONG, &a, &zero));
    EXPECT_EQ(a, AtomicOp::fetch_or);
    EXPECT_TRUE(reduce_as_atomic(MPI_BXOR, MPI_UNSIGNED_LONG_LONG, &a, &zero));
    EXPECT_EQ(a, AtomicOp::fetch_xor);
    EXPECT_TRUE(reduce_as_atomic(MPI_REPLACE, MPI_COUNT, &a, &zero));
    EXPECT_EQ(a, AtomicOp::swap);
    EXPECT_FALSE(zero);
    EXPECT_TRUE(reduce_as_atomic(MPI_NO_OP, MPI_OFFSET, &a, &zero));
    EXPECT_EQ(a, AtomicOp::fetch_add);
    EXPECT_TRUE(zero);
    EXPECT_TRUE(reduce_as_atomic(MPI_SUM, MPI_AINT, &a, &zero));
    EXPECT_TRUE(reduce_as_atomic(MPI_SUM, MPI_UNSIGNED_LONG, &a, &zero));
    EXPECT_TRUE(reduce_as_atomic(MPI_SUM, MPI_LONG_LONG_INT, &a, &zero));

    // 4-byte integers map to the transport's 32-bit atomics
    EXPECT_TRUE(reduce_as_atomic(MPI_SUM, MPI_INT, &a, &zero));
    EXPECT_EQ(a, AtomicOp::fetch_add);
    EXPECT_TRUE(reduce_as_atomic(MPI_BXOR, MPI_UNSIGNED, &a, &zero));
    EXPECT_EQ(a, AtomicOp::fetch_xor);
    EXPECT_TRUE(reduce_as_atomic(MPI_REPLACE, MPI_INT32_T, &a, &zero));
    EXPECT_EQ(a, AtomicOp::swap);

    // 2- and 1-byte integers map to the transport's 16- and 8-bit atomics
    EXPECT_TRUE(reduce_as_atomic(MPI_SUM, MPI_SHORT, &a, &zero));
    EXPECT_EQ(a, AtomicOp::fetch_add);
    EXPECT_TRUE(reduce_as_atomic(MPI_BAND, MPI_UNSIGNED_SHORT, &a, &zero));
    EXPECT_EQ(a, AtomicOp::fetch_and);
    EXPECT_TRUE(reduce_as_atomic(MPI_BOR, MPI_INT8_T, &a, &zero));
    EXPECT_EQ(a, AtomicOp::fetch_or);
    EXPECT_TRUE(reduce_as_atomic(MPI_NO_OP, MPI_UNSIGNED_CHAR, &a, &zero));
    EXPECT_TRUE(zero);
    EXPECT_TRUE(reduce_as_atomic(MPI_REPLACE, MPI_SIGNED_CHAR, &a, &zero));
    EXPECT_EQ(a, AtomicOp::swap);

    EXPECT_FALSE(reduce_as_atomic(MPI_SUM, MPI_BYTE, &a, &zero));  // no arithmetic on MPI_BYTE
    EXPECT_FALSE(reduce_as_atomic(MPI_SUM, MPI_FLOAT, &a, &zero));
    EXPECT_FALSE(reduce_as_atomic(MPI_REPLACE, MPI_FLOAT, &a, &zero));
    EXPECT_FALSE(reduce_as_atomic(MPI_MAX, MPI_INT, &a, &zero));
    EXPECT_FALSE(reduce_as_atomic(MPI_SUM, MPI_DOUBLE, &a, &zero));
    EXPECT_FALSE(reduce_as_atomic(MPI_REPLACE, MPI_DOUBLE, &a, &zero));
    EXPECT_FALSE(reduce_as_atomic(MPI_MAX, MPI_INT64_T, &a, &zero));
    EXPECT_FALSE(reduce_as_atomic(MPI_PROD, MPI_INT64_T, &a, &zero));
    EXPECT_FALSE(reduce_as_atomic(MPI_LAND, MPI_INT64_T, &a, &zero));
    EXPECT_FALSE(reduce_as_atomic(MPI_REPLACE, MPI_2INT, &a, &zero));
    EXPECT_FALSE(reduce_as_atomic(MPI_SUM, MPI_DATATYPE_NULL, &a, &zero));
}

TEST(ReduceByCompareSwap, EveryPredefinedTypeOfAWordButThePairs) {
    // what no one atomic does, a compare-and-swap loop does
    EXPECT_TRUE(reduce_by_compare_swap(MPI_SUM, MPI_DOUBLE));
    EXPECT_TRUE(reduce_by_compare_swap(MPI_SUM, MPI_FLOAT));
    EXPECT_TRUE(reduce_by_compare_swap(MPI_MAX, MPI_DOUBLE));
    EXPECT_TRUE(reduce_by_compare_swap(MPI_PROD, MPI_INT64_T));
    EXPECT_TRUE(reduce_by_compare_swap(MPI_MIN, MPI_CHAR));
    EXPECT_TRUE(reduce_by_compare_swap(MPI_LAND, MPI_C_BOOL));
    EXPECT_TRUE(reduce_by_compare_swap(MPI_SUM, MPI_C_FLOAT_COMPLEX));  // 8 bytes
    EXPECT_TRUE(reduce_by_compare_swap(MPI_BOR, MPI_BYTE));
    EXPECT_TRUE(reduce_by_compare_swap(MPI_REPLACE, MPI_DOUBLE));
    EXPECT_TRUE(reduce_by_compare_swap(MPI_SUM, MPI_INT));  // a superset of reduce_as_atomic
    // no word, or a pair, or an op the type does not take: the accumulate lock
    EXPECT_FALSE(reduce_by_compare_swap(MPI_SUM, MPI_LONG_DOUBLE));
    EXPECT_FALSE(reduce_by_compare_swap(MPI_SUM, MPI_C_DOUBLE_COMPLEX));
    EXPECT_FALSE(reduce_by_compare_swap(MPI_MAXLOC, MPI_2INT));
    EXPECT_FALSE(reduce_by_compare_swap(MPI_REPLACE, MPI_2INT));
    EXPECT_FALSE(reduce_by_compare_swap(MPI_BAND, MPI_DOUBLE));
    EXPECT_FALSE(reduce_by_compare_swap(MPI_SUM, MPI_DATATYPE_NULL));
}

// ---------------------------------------------------------------- MPICH-compatible types

// Fortran's MPI_CHARACTER with arithmetic ops: a signed 8-bit integer, as MPICH accepts.
TEST(ReduceCheck, CharacterIsASignedEightBitInteger) {
    for (MPI_Op op : {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND,
                      MPI_BOR, MPI_BXOR, MPI_REPLACE, MPI_NO_OP})
        EXPECT_EQ(reduce_check(op, MPI_CHARACTER), Status::ok);
    EXPECT_EQ(run<signed char>(MPI_SUM, MPI_CHARACTER, {100, -5}, {100, 3}),
              (std::vector<signed char>{-56, -2}));
    EXPECT_EQ(run<signed char>(MPI_MAX, MPI_CHARACTER, {-7, 5}, {3, -1}),
              (std::vector<signed char>{3, 5}));
    EXPECT_EQ(reduce_check(MPI_MAXLOC, MPI_CHARACTER), Status::err_op);
}

namespace {
MPI_Datatype committed(MPI_Datatype type) {
    EXPECT_EQ(MPI_Type_commit(&type), MPI_SUCCESS);
    return type;
}
}  // namespace

// MPI-4.0 §12.3.4: origin, target (and result) use the same basic type. Derived types
// built from one basic type keep working, MPI_NO_OP ignores the origin, and types
// that share a representation (MPI_INT and MPI_INT32_T) match, as MPICH accepts them.
TEST(OperationCheck, AccumulateNeedsTheSameBasicTypeOnEverySide) {
    bool empty = false;
    for (RmaKind kind : {RmaKind::accumulate, RmaKind::get_accumulate}) {
        EXPECT_EQ(check(call_of(kind, 1, MPI_INT, 1, MPI_FLOAT), &empty), Status::err_type);
        EXPECT_EQ(check(call_of(kind, 1, MPI_FLOAT, 1, MPI_INT, MPI_REPLACE), &empty),
                  Status::err_type);
        EXPECT_EQ(check(call_of(kind, 1, MPI_INT, 1, MPI_UNSIGNED, MPI_MAX), &empty),
                  Status::err_type);
        EXPECT_EQ(check(call_of(kind, 1, MPI_UNSIGNED_LONG, 1, MPI_DOUBLE), &empty),
                  Status::err_type);
        EXPECT_EQ(check(call_of(kind, 4, MPI_BYTE, 4, MPI_UNSIGNED_CHAR, MPI_BOR), &empty),
                  Status::err_type);
        EXPECT_EQ(check(call_of(kind, 1, MPI_INT32_T, 1, MPI_INT), &empty), Status::ok);
        EXPECT_EQ(check(call_of(kind, 1, MPI_LONG_LONG, 1, MPI_INT64_T), &empty), Status::ok);
        EXPECT_EQ(check(call_of(kind, 2, MPI_CHAR, 2, MPI_SIGNED_CHAR), &empty), Status::ok);
    }
    MPI_Datatype ints4 = committed([] {
        MPI_Datatype t;
        MPI_Type_contiguous(4, MPI_INT, &t);
        return t;
    }());
    MPI_Datatype int_columns = committed([] {
        MPI_Datatype t;
        MPI_Type_vector(2, 1, 3, MPI_INT, &t);
        return t;
    }());
    MPI_Datatype floats2 = committed([] {
        MPI_Datatype t;
        MPI_Type_contiguous(2, MPI_FLOAT, &t);
        return t;
    }());
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 1, ints4, 4, MPI_INT), &empty), Status::ok);
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 4, MPI_INT, 2, int_columns), &empty), Status::ok);
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 2, int_columns, 1, ints4), &empty), Status::ok);
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 1, floats2, 1, int_columns), &empty),
              Status::err_type);
    EXPECT_EQ(check(call_of(RmaKind::accumulate, 2, floats2, 4, MPI_INT), &empty),
              Status::err_type);

    // get_accumulate: the result side too; MPI_NO_OP ignores the origin.
    RmaCall call = call_of(RmaKind::get_accumulate, 1, MPI_INT, 1, MPI_INT);
    call.result_type = MPI_FLOAT;
    EXPECT_EQ(check(call, &empty), Status::err_type);
    call.result_type = ints4;
    call.result_count = 0;
    call.target_count = call.origin_count = 4;
    EXPECT_EQ(check(call, &empty), Status::ok);  // zero-byte result: a no-op
    EXPECT_TRUE(empty);
    call.result_count = 1;
    EXPECT_EQ(check(call, &empty), Status::ok);
    call.op = MPI_NO_OP;
    call.origin_type = MPI_FLOAT;
    EXPECT_EQ(check(call, &empty), Status::ok);
    call.result_type = floats2;
    call.result_count = 2;
    EXPECT_EQ(check(call, &empty), Status::err_type);
    MPI_Type_free(&ints4);
    MPI_Type_free(&int_columns);
    MPI_Type_free(&floats2);
}

// MPI-4.0 §12.3.4: MPI_Fetch_and_op (like MPI_Compare_and_swap) takes a predefined type.
TEST(OperationCheck, FetchAndOpNeedsAPredefinedType) {
    MPI_Datatype derived = committed([] {
        MPI_Datatype t;
        MPI_Type_contiguous(1, MPI_INT, &t);
        return t;
    }());
    bool empty = false;
    EXPECT_EQ(check(call_of(RmaKind::fetch_and_op, 1, derived, 1, derived), &empty),
              Status::err_type);
    EXPECT_EQ(check(call_of(RmaKind::fetch_and_op, 1, derived, 1, derived, MPI_NO_OP), &empty),
              Status::err_type);
    EXPECT_EQ(check(call_of(RmaKind::fetch_and_op, 1, MPI_INT, 1, MPI_INT), &empty), Status::ok);
    MPI_Type_free(&derived);
}

// An origin or result type whose extent times count leaves 64 bits is refused before
// any data moves (type_for_each_segment would compute i*extent in overflow).
TEST(OperationCheck, OriginAndResultBeyondSixtyFourBitsAreRefused) {
    const MPI_Aint huge = MPI_Aint{1} << 62;
    MPI_Datatype far = MPI_DATATYPE_NULL, back = MPI_DATATYPE_NULL;
    MPI_Type_create_resized(MPI_INT, 0, huge, &far);
    MPI_Type_create_resized(MPI_INT, 0, -huge, &back);
    far = committed(far);
    back = committed(back);
    bool empty = false;
    int buffer[4] = {};
    for (MPI_Datatype type : {far, back}) {
        RmaCall put = call_of(RmaKind::put, 4, type, 4, MPI_INT);
        put.origin = buffer;
        EXPECT_EQ(check(put, &empty), Status::err_count);
        put.origin_count = 2;  // 1 * extent fits: the caller's buffer, its business
        put.target_count = 2;
        EXPECT_EQ(check(put, &empty), type == far ? Status::ok : Status::err_count);
        RmaCall get = call_of(RmaKind::get, 4, type, 4, MPI_INT);
        get.result = buffer;
        EXPECT_EQ(check(get, &empty), Status::err_count);
        RmaCall acc = call_of(RmaKind::get_accumulate, 4, MPI_INT, 4, MPI_INT);
        acc.origin = acc.result = buffer;
        acc.result_type = type;
        EXPECT_EQ(check(acc, &empty), Status::err_count);
        acc.result_type = MPI_INT;
        acc.origin_type = type;
        EXPECT_EQ(check(acc, &empty), Status::err_count);
    }
    // A buffer whose data would wrap around the address space.
    RmaCall put = call_of(RmaKind::put, 4, MPI_INT, 4, MPI_INT);
    put.origin = reinterpret_cast<const void *>(~std::uintptr_t{0} - 7);
    EXPECT_EQ(check(put, &empty), Status::err_count);
    MPI_Type_free(&far);
    MPI_Type_free(&back);
}

TEST(OperationCheck, RefusalsNameTheirCause) {
    bool empty = false;
    const char *cause = nullptr;
    EXPECT_EQ(
        Operation::check(call_of(RmaKind::accumulate, 1, MPI_INT, 1, MPI_FLOAT), &empty, &cause),
        Status::err_type);
    ASSERT_NE(cause, nullptr);
    EXPECT_STREQ(cause, "origin and target basic datatypes differ");
    EXPECT_EQ(
        Operation::check(call_of(RmaKind::accumulate, 1, MPI_INT, 1, MPI_INT), &empty, &cause),
        Status::ok);
    EXPECT_EQ(cause, nullptr);
}

TEST(ReduceSameBasic, SameRepresentationMatches) {
    using nbrma::engine::reduce_same_basic;
    const MPI_Datatype same[][2] = {
        {MPI_INT, MPI_INT32_T},       {MPI_INT, MPI_INTEGER},
        {MPI_LONG, MPI_LONG_LONG},    {MPI_LONG, MPI_INT64_T},
        {MPI_LONG_LONG, MPI_AINT},    {MPI_COUNT, MPI_OFFSET},
        {MPI_CHAR, MPI_INT8_T},       {MPI_CHAR, MPI_CHARACTER},
        {MPI_UNSIGNED, MPI_UINT32_T}, {MPI_FLOAT, MPI_REAL},
        {MPI_DOUBLE, MPI_REAL8},      {MPI_C_BOOL, MPI_CXX_BOOL},
        {MPI_2INT, MPI_2INTEGER},     {MPI_COMPLEX, MPI_C_FLOAT_COMPLEX},
        {MPI_WCHAR, MPI_WCHAR},       {MPI_DOUBLE_INT, MPI_DOUBLE_INT},
    };
    for (const auto &pair : same) {
        EXPECT_TRUE(reduce_same_basic(pair[0], pair[1]));
        EXPECT_TRUE(reduce_same_basic(pair[1], pair[0]));
    }
    const MPI_Datatype different[][2] = {
        {MPI_INT, MPI_FLOAT},    {MPI_INT, MPI_UNSIGNED},       {MPI_LONG, MPI_DOUBLE},
        {MPI_BYTE, MPI_UINT8_T}, {MPI_BYTE, MPI_CHAR},          {MPI_FLOAT_INT, MPI_2REAL},
        {MPI_WCHAR, MPI_INT},    {MPI_DOUBLE, MPI_LONG_DOUBLE}, {MPI_C_BOOL, MPI_UINT8_T},
        {MPI_INT, MPI_2INT},     {MPI_INT, MPI_DATATYPE_NULL},  {MPI_LOGICAL, MPI_INT},
    };
    for (const auto &pair : different) {
        EXPECT_FALSE(reduce_same_basic(pair[0], pair[1]));
        EXPECT_FALSE(reduce_same_basic(pair[1], pair[0]));
    }
}
