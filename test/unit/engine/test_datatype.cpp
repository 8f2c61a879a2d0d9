// Unit tests of datatype flattening: layouts of predefined, derived and nested types,
// segment iteration and merging, pack/unpack, the attribute cache across
// MPI_Type_free, and a cross-check of type_pack against MPICH's own MPI_Pack for
// every supported combiner (including subarray and darray).
#include <chrono>
#include <gtest/gtest.h>
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <utility>
#include <vector>

#include "engine/datatype.hpp"

using nbrma::Status;
using nbrma::engine::type_for_each_segment;
using nbrma::engine::type_layout_get;
using nbrma::engine::type_pack;
using nbrma::engine::type_unpack;
using nbrma::engine::TypeLayout;
using nbrma::engine::TypeSegment;

namespace {

using Segs = std::vector<std::pair<std::int64_t, std::size_t>>;

Segs segs(const TypeLayout &l) {
    Segs out;
    for (const TypeSegment &s : l.segments) out.emplace_back(s.offset, s.length);
    return out;
}

Segs walk(const TypeLayout &l, std::size_t count) {
    Segs out;
    type_for_each_segment(l, count, [&](std::int64_t o, std::size_t n) { out.emplace_back(o, n); });
    return out;
}

// Owns a committed derived type.
struct Type {
    MPI_Datatype t = MPI_DATATYPE_NULL;
    explicit Type(MPI_Datatype type, bool commit = true) : t(type) {
        if (commit) MPI_Type_commit(&t);
    }
    ~Type() {
        if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    }
    Type(const Type &) = delete;
    Type &operator=(const Type &) = delete;
};

const TypeLayout *get(MPI_Datatype t) {
    const TypeLayout *l = nullptr;
    EXPECT_EQ(type_layout_get(t, &l), Status::ok);
    return l;
}

}  // namespace

TEST(DatatypeLayout, PredefinedInt) {
    const TypeLayout *l = get(MPI_INT);
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(segs(*l), (Segs{{0, 4}}));
    EXPECT_EQ(l->size, 4u);
    EXPECT_EQ(l->extent, 4);
    EXPECT_EQ(l->basic, MPI_INT);
    EXPECT_EQ(l->basic_size, 4u);
    EXPECT_TRUE(l->contiguous);
}

TEST(DatatypeLayout, PredefinedCoverage) {
    const MPI_Datatype types[] = {
        MPI_CHAR,
        MPI_SIGNED_CHAR,
        MPI_UNSIGNED_CHAR,
        MPI_WCHAR,
        MPI_SHORT,
        MPI_UNSIGNED_SHORT,
        MPI_INT,
        MPI_UNSIGNED,
        MPI_LONG,
        MPI_UNSIGNED_LONG,
        MPI_LONG_LONG,
        MPI_UNSIGNED_LONG_LONG,
        MPI_FLOAT,
        MPI_DOUBLE,
        MPI_LONG_DOUBLE,
        MPI_C_FLOAT_COMPLEX,
        MPI_C_DOUBLE_COMPLEX,
        MPI_C_LONG_DOUBLE_COMPLEX,
        MPI_CXX_BOOL,
        MPI_CXX_FLOAT_COMPLEX,
        MPI_CXX_DOUBLE_COMPLEX,
        MPI_CXX_LONG_DOUBLE_COMPLEX,
        MPI_BYTE,
        MPI_PACKED,
        MPI_INT8_T,
        MPI_INT16_T,
        MPI_INT32_T,
        MPI_INT64_T,
        MPI_UINT8_T,
        MPI_UINT16_T,
        MPI_UINT32_T,
        MPI_UINT64_T,
        MPI_AINT,
        MPI_OFFSET,
        MPI_COUNT,
        MPI_C_BOOL,
        MPI_FLOAT_INT,
        MPI_DOUBLE_INT,
        MPI_LONG_INT,
        MPI_2INT,
        MPI_SHORT_INT,
        MPI_LONG_DOUBLE_INT,
    };
    for (MPI_Datatype t : types) {
        const TypeLayout *l = nullptr;
        ASSERT_EQ(type_layout_get(t, &l), Status::ok) << std::hex << t;
        int size = 0;
        MPI_Aint lb, extent;
        MPI_Type_size(t, &size);
        MPI_Type_get_extent(t, &lb, &extent);
        EXPECT_EQ(l->size, static_cast<std::size_t>(size)) << std::hex << t;
        EXPECT_EQ(l->extent, extent) << std::hex << t;
        EXPECT_EQ(l->basic, t);
        EXPECT_EQ(l->basic_size, l->size);
    }
}

TEST(DatatypeLayout, PairTypesAreBasic) {
    const TypeLayout *di = get(MPI_DOUBLE_INT);
    EXPECT_EQ(segs(*di), (Segs{{0, 12}}));
    EXPECT_EQ(di->size, 12u);
    EXPECT_EQ(di->extent, 16);
    EXPECT_EQ(di->basic, MPI_DOUBLE_INT);
    EXPECT_EQ(di->basic_size, 12u);
    EXPECT_FALSE(di->contiguous);

    const TypeLayout *si = get(MPI_SHORT_INT);
    EXPECT_EQ(segs(*si), (Segs{{0, 2}, {4, 4}}));
    EXPECT_EQ(si->size, 6u);
    EXPECT_EQ(si->extent, 8);

    const TypeLayout *two = get(MPI_2INT);
    EXPECT_EQ(segs(*two), (Segs{{0, 8}}));
    EXPECT_TRUE(two->contiguous);

    // A derived type of pairs keeps the pair as its basic type.
    MPI_Datatype v;
    MPI_Type_contiguous(3, MPI_DOUBLE_INT, &v);
    Type vt(v);
    const TypeLayout *l = get(vt.t);
    EXPECT_EQ(segs(*l), (Segs{{0, 12}, {16, 12}, {32, 12}}));
    EXPECT_EQ(l->basic, MPI_DOUBLE_INT);
    EXPECT_EQ(l->basic_size, 12u);
}

TEST(DatatypeLayout, RejectsNullUncommittedAndMarkers) {
    const TypeLayout *l = nullptr;
    EXPECT_EQ(type_layout_get(MPI_DATATYPE_NULL, &l), Status::err_type);
    EXPECT_EQ(type_layout_get(MPI_LB, &l), Status::err_type);
    EXPECT_EQ(type_layout_get(MPI_UB, &l), Status::err_type);

    MPI_Datatype v;
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    EXPECT_EQ(type_layout_get(v, &l), Status::err_type);
    MPI_Type_commit(&v);
    ASSERT_EQ(type_layout_get(v, &l), Status::ok);
    EXPECT_EQ(segs(*l), (Segs{{0, 4}, {8, 4}}));
    MPI_Type_free(&v);
}

TEST(DatatypeLayout, Vector) {
    MPI_Datatype v;
    MPI_Type_vector(3, 2, 4, MPI_INT, &v);
    Type t(v);
    const TypeLayout *l = get(t.t);
    EXPECT_EQ(segs(*l), (Segs{{0, 8}, {16, 8}, {32, 8}}));
    EXPECT_EQ(l->size, 24u);
    EXPECT_EQ(l->extent, 40);
    EXPECT_EQ(l->true_lb, 0);
    EXPECT_EQ(l->true_extent, 40);
    EXPECT_EQ(l->basic, MPI_INT);
    EXPECT_EQ(l->basic_size, 4u);
    EXPECT_FALSE(l->contiguous);
}

TEST(DatatypeLayout, VectorWithUnitStrideIsContiguous) {
    MPI_Datatype v;
    MPI_Type_vector(4, 2, 2, MPI_DOUBLE, &v);
    Type t(v);
    const TypeLayout *l = get(t.t);
    EXPECT_EQ(segs(*l), (Segs{{0, 64}}));
    EXPECT_TRUE(l->contiguous);
    EXPECT_EQ(walk(*l, 3), (Segs{{0, 192}}));
}

TEST(DatatypeLayout, Hvector) {
    MPI_Datatype v;
    MPI_Type_create_hvector(2, 1, 12, MPI_DOUBLE, &v);
    Type t(v);
    const TypeLayout *l = get(t.t);
    EXPECT_EQ(segs(*l), (Segs{{0, 8}, {12, 8}}));
    EXPECT_EQ(l->extent, 20);
    EXPECT_EQ(l->size, 16u);
    EXPECT_EQ(l->basic, MPI_DOUBLE);
}

TEST(DatatypeLayout, IndexedKeepsTypemapOrder) {
    const int blocklens[] = {2, 1};
    const int displs[] = {3, 0};
    MPI_Datatype x;
    MPI_Type_indexed(2, blocklens, displs, MPI_INT, &x);
    Type t(x);
    const TypeLayout *l = get(t.t);
    EXPECT_EQ(segs(*l), (Segs{{12, 8}, {0, 4}}));
    EXPECT_EQ(l->size, 12u);
    EXPECT_EQ(l->extent, 20);
    EXPECT_FALSE(l->contiguous);
}

TEST(DatatypeLayout, HindexedAndBlockVariants) {
    const int blocklens[] = {1, 2};
    const MPI_Aint hdispls[] = {-8, 16};
    MPI_Datatype h;
    MPI_Type_create_hindexed(2, blocklens, hdispls, MPI_INT, &h);
    Type ht(h);
    const TypeLayout *l = get(ht.t);
    EXPECT_EQ(segs(*l), (Segs{{-8, 4}, {16, 8}}));
    EXPECT_EQ(l->true_lb, -8);
    EXPECT_EQ(l->true_extent, 32);

    const int displs[] = {4, 1};
    MPI_Datatype ib;
    MPI_Type_create_indexed_block(2, 2, displs, MPI_SHORT, &ib);
    Type ibt(ib);
    EXPECT_EQ(segs(*get(ibt.t)), (Segs{{8, 4}, {2, 4}}));

    const MPI_Aint bdispls[] = {0, 4, 20};
    MPI_Datatype hb;
    MPI_Type_create_hindexed_block(3, 1, bdispls, MPI_FLOAT, &hb);
    Type hbt(hb);
    EXPECT_EQ(segs(*get(hbt.t)), (Segs{{0, 8}, {20, 4}}));
}

TEST(DatatypeLayout, StructMixedAndMerged) {
    const int blocklens[] = {1, 1, 1};
    const MPI_Aint displs[] = {0, 8, 16};
    const MPI_Datatype mixed_types[] = {MPI_INT, MPI_DOUBLE, MPI_INT};
    MPI_Datatype s;
    MPI_Type_create_struct(3, blocklens, displs, mixed_types, &s);
    Type st(s);
    const TypeLayout *l = get(st.t);
    // Merging is by address only: the double and the following int form one segment.
    EXPECT_EQ(segs(*l), (Segs{{0, 4}, {8, 12}}));
    EXPECT_EQ(l->basic, MPI_DATATYPE_NULL);
    EXPECT_EQ(l->basic_size, 0u);
    EXPECT_EQ(l->size, 16u);
    EXPECT_EQ(l->extent, 24);

    const int lens2[] = {2, 1};
    const MPI_Aint displs2[] = {0, 8};
    const MPI_Datatype same[] = {MPI_INT, MPI_INT};
    MPI_Datatype s2;
    MPI_Type_create_struct(2, lens2, displs2, same, &s2);
    Type st2(s2);
    const TypeLayout *l2 = get(st2.t);
    EXPECT_EQ(segs(*l2), (Segs{{0, 12}}));
    EXPECT_EQ(l2->basic, MPI_INT);
    EXPECT_TRUE(l2->contiguous);

    // A zero-length block has no typemap entry, so it must not make the type mixed.
    const int lens3[] = {0, 2};
    const MPI_Aint displs3[] = {0, 8};
    const MPI_Datatype types3[] = {MPI_DOUBLE, MPI_INT};
    MPI_Datatype s3;
    MPI_Type_create_struct(2, lens3, displs3, types3, &s3);
    Type st3(s3);
    const TypeLayout *l3 = get(st3.t);
    EXPECT_EQ(segs(*l3), (Segs{{8, 8}}));
    EXPECT_EQ(l3->basic, MPI_INT);
}

TEST(DatatypeLayout, ResizedChangesExtentOnly) {
    MPI_Datatype r;
    MPI_Type_create_resized(MPI_INT, -4, 16, &r);
    Type rt(r);
    const TypeLayout *l = get(rt.t);
    EXPECT_EQ(segs(*l), (Segs{{0, 4}}));
    EXPECT_EQ(l->extent, 16);
    EXPECT_EQ(l->true_lb, 0);
    EXPECT_EQ(l->true_extent, 4);
    EXPECT_FALSE(l->contiguous);
    EXPECT_EQ(walk(*l, 3), (Segs{{0, 4}, {16, 4}, {32, 4}}));
}

// Negative extents: the true bounds are those of one element's data,
// as MPI_Type_get_true_extent reports them, and elements walk downward.
TEST(DatatypeLayout, NegativeExtentsKeepTheTrueBoundsOfTheData) {
    MPI_Datatype r;
    MPI_Type_create_resized(MPI_INT, 0, -8, &r);
    Type down(r);
    const TypeLayout *l = get(down.t);
    EXPECT_EQ(l->extent, -8);
    EXPECT_EQ(l->true_lb, 0);
    EXPECT_EQ(l->true_extent, 4);
    EXPECT_FALSE(l->contiguous);
    EXPECT_EQ(walk(*l, 3), (Segs{{0, 4}, {-8, 4}, {-16, 4}}));

    const int blocks[] = {1, 1};
    const MPI_Aint displs[] = {8, -16};
    const MPI_Datatype types[] = {MPI_INT, MPI_INT};
    MPI_Datatype s;
    MPI_Type_create_struct(2, blocks, displs, types, &s);
    MPI_Type_create_resized(s, 0, -40, &r);
    MPI_Type_free(&s);
    Type back(r);
    l = get(back.t);
    MPI_Aint true_lb = 0, true_extent = 0;
    MPI_Type_get_true_extent(back.t, &true_lb, &true_extent);
    EXPECT_EQ(l->true_lb, -16);
    EXPECT_EQ(l->true_extent, 28);
    EXPECT_EQ(l->true_lb, true_lb);
    EXPECT_EQ(l->true_extent, true_extent);
    EXPECT_EQ(walk(*l, 2), (Segs{{8, 4}, {-16, 4}, {-32, 4}, {-56, 4}}));
}

// Displacements and extents whose offsets overflow 64 bits give no layout, instead of wrapped
// segments.
TEST(DatatypeLayout, OffsetsBeyondSixtyFourBitsAreRefused) {
    MPI_Datatype h;
    MPI_Type_create_hvector(3, 1, MPI_Aint{1} << 62, MPI_INT, &h);
    Type far(h);
    const TypeLayout *l = nullptr;
    EXPECT_EQ(type_layout_get(far.t, &l), Status::err_type);
    MPI_Type_create_hvector(2, 1, MPI_Aint{1} << 62, MPI_INT, &h);
    Type near(h);
    ASSERT_EQ(type_layout_get(near.t, &l), Status::ok);
    EXPECT_EQ(segs(*l), (Segs{{0, 4}, {std::int64_t{1} << 62, 4}}));
}

TEST(DatatypeLayout, WalkStopsWhenTheCallbackSaysSo) {
    MPI_Datatype r;
    MPI_Type_create_resized(MPI_INT, 0, 16, &r);
    Type gap(r);
    const TypeLayout *l = get(gap.t);
    int calls = 0;
    EXPECT_FALSE(
        type_for_each_segment(*l, 1000, [&](std::int64_t, std::size_t) { return ++calls < 3; }));
    EXPECT_EQ(calls, 3);
    EXPECT_TRUE(type_for_each_segment(*l, 4, [](std::int64_t, std::size_t) { return true; }));
}

TEST(DatatypeLayout, NestedAndDup) {
    MPI_Datatype inner, outer, dup;
    MPI_Type_contiguous(3, MPI_DOUBLE, &inner);  // never committed: fine as a building block
    MPI_Type_vector(2, 1, 2, inner, &outer);
    Type ot(outer);
    MPI_Type_free(&inner);
    const TypeLayout *l = get(ot.t);
    EXPECT_EQ(segs(*l), (Segs{{0, 24}, {48, 24}}));
    EXPECT_EQ(l->extent, 72);
    EXPECT_EQ(l->size, 48u);
    EXPECT_EQ(l->basic, MPI_DOUBLE);

    MPI_Type_dup(ot.t, &dup);
    Type dt(dup, false);  // a dup of a committed type is committed
    const TypeLayout *d = get(dt.t);
    EXPECT_NE(d, l);
    EXPECT_EQ(segs(*d), segs(*l));
    EXPECT_EQ(d->extent, 72);
}

TEST(DatatypeLayout, Subarray) {
    const int sizes[] = {4, 5}, subsizes[] = {2, 3}, starts[] = {1, 1};
    MPI_Datatype c, f;
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &c);
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_INT, &f);
    Type ct(c), ft(f);
    const TypeLayout *lc = get(ct.t);
    EXPECT_EQ(segs(*lc), (Segs{{24, 12}, {44, 12}}));
    EXPECT_EQ(lc->extent, 80);
    const TypeLayout *lf = get(ft.t);
    EXPECT_EQ(segs(*lf), (Segs{{20, 8}, {36, 8}, {52, 8}}));
    EXPECT_EQ(lf->extent, 80);
}

// Flattening costs O(contiguous blocks), never O(bytes) (ARMCI-MPI builds fresh
// MPI_BYTE subarray types for every strided put). A 2 GiB contiguous run of MPI_BYTE,
// and 1000 of them spread out, are one segment each: walked byte by byte they took
// seconds to minutes.
TEST(DatatypeLayout, FlatteningIsLinearInBlocksNotBytes) {
    MPI_Datatype big, spread, rows;
    MPI_Type_contiguous(INT_MAX, MPI_BYTE, &big);
    Type bigt(big);
    EXPECT_EQ(segs(*get(bigt.t)), (Segs{{0, static_cast<std::size_t>(INT_MAX)}}));
    MPI_Type_vector(1000, 1, 2, bigt.t, &spread);
    Type spreadt(spread);
    const TypeLayout *ls = get(spreadt.t);
    ASSERT_EQ(ls->segments.size(), 1000u);
    EXPECT_EQ(ls->segments[999].offset, 999 * 2 * static_cast<std::int64_t>(INT_MAX));
    EXPECT_EQ(ls->size, 1000 * static_cast<std::size_t>(INT_MAX));
    // ARMCI-MPI's pattern: 1024 rows of 1 MiB out of 2 MiB, MPI_BYTE, C order.
    const int sizes[] = {1024, 1 << 21}, subsizes[] = {1024, 1 << 20}, starts[] = {0, 4096};
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_BYTE, &rows);
    Type rowst(rows);
    const TypeLayout *lr = get(rowst.t);
    ASSERT_EQ(lr->segments.size(), 1024u);
    for (std::size_t i = 0; i < 1024; ++i) {
        EXPECT_EQ(lr->segments[i].offset, static_cast<std::int64_t>(i) * (1 << 21) + 4096);
        EXPECT_EQ(lr->segments[i].length, std::size_t{1} << 20);
    }
}

// ARMCI-MPI builds a fresh subarray type for every strided call: its flattening must
// not cost the row's bytes. Rows of 2^28 - 64 bytes: a list of the innermost offsets
// would be 2 GiB per type; 100 such types (either order) flatten in well under a
// second, each to its 4 row segments.
TEST(DatatypeLayout, FreshSubarrayTypesCostTheirRowsNotTheirBytes) {
    const int row = 1 << 28;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 100; ++i) {
        const int order = i % 2 ? MPI_ORDER_FORTRAN : MPI_ORDER_C;
        const int sizes[] = {4, row}, subsizes[] = {4, row - 64}, starts[] = {0, 32};
        const int fsizes[] = {row, 4}, fsubsizes[] = {row - 64, 4}, fstarts[] = {32, 0};
        MPI_Datatype type;
        if (order == MPI_ORDER_C)
            MPI_Type_create_subarray(2, sizes, subsizes, starts, order, MPI_BYTE, &type);
        else
            MPI_Type_create_subarray(2, fsizes, fsubsizes, fstarts, order, MPI_BYTE, &type);
        Type t(type);
        const TypeLayout *layout = get(t.t);
        ASSERT_EQ(layout->segments.size(), 4u);
        for (std::size_t r = 0; r < 4; ++r) {
            EXPECT_EQ(layout->segments[r].offset, static_cast<std::int64_t>(r) * row + 32);
            EXPECT_EQ(layout->segments[r].length, static_cast<std::size_t>(row - 64));
        }
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
              5.0);
}

// The row shortcut applies only where copies abut: a dense child along a consecutive
// innermost dimension (either array order); otherwise every element stays its own block.
TEST(DatatypeLayout, SubarrayRowsMergeOnlyWhereCopiesAbut) {
    const int sizes[] = {6, 4}, subsizes[] = {3, 2}, starts[] = {1, 1};
    MPI_Datatype f, gapped, r, d;
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_BYTE, &f);
    Type ft(f);
    EXPECT_EQ(segs(*get(ft.t)), (Segs{{7, 3}, {13, 3}}));
    // A child with a hole (extent 8, 4 bytes of data): one segment per element.
    MPI_Type_create_resized(MPI_INT, 0, 8, &r);
    Type rt(r);
    const int size1[] = {6}, sub1[] = {4}, start1[] = {1};
    MPI_Type_create_subarray(1, size1, sub1, start1, MPI_ORDER_C, rt.t, &gapped);
    Type gt(gapped);
    EXPECT_EQ(segs(*get(gt.t)), (Segs{{8, 4}, {16, 4}, {24, 4}, {32, 4}}));
    // A cyclic darray takes every other byte: the innermost offsets are not consecutive.
    const int gsizes[] = {8}, distribs[] = {MPI_DISTRIBUTE_CYCLIC}, dargs[] = {1},
              psizes[] = {2};
    MPI_Type_create_darray(2, 1, 1, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_BYTE, &d);
    Type dt(d);
    EXPECT_EQ(segs(*get(dt.t)), (Segs{{1, 1}, {3, 1}, {5, 1}, {7, 1}}));
}

TEST(DatatypeSegments, MergeAcrossElementBoundaries) {
    // Element: bytes [0,4) and [8,12), extent 12: element i's second block touches
    // element i+1's first one.
    const int blocklens[] = {1, 1};
    const MPI_Aint displs[] = {0, 8};
    MPI_Datatype h, r;
    MPI_Type_create_hindexed(2, blocklens, displs, MPI_INT, &h);
    MPI_Type_create_resized(h, 0, 12, &r);
    MPI_Type_free(&h);
    Type rt(r);
    const TypeLayout *l = get(rt.t);
    EXPECT_EQ(walk(*l, 3), (Segs{{0, 4}, {8, 8}, {20, 8}, {32, 4}}));
    EXPECT_TRUE(walk(*l, 0).empty());
}

TEST(DatatypePack, RoundTrip) {
    MPI_Datatype v;
    MPI_Type_vector(3, 2, 3, MPI_INT, &v);  // ints 0,1, 3,4, 6,7 ; extent 8 ints
    Type t(v);
    const TypeLayout *l = get(t.t);
    std::vector<int> buffer(32);
    std::iota(buffer.begin(), buffer.end(), 100);
    std::vector<int> packed(12, -1);
    type_pack(*l, buffer.data(), 2, packed.data());
    EXPECT_EQ(packed,
              (std::vector<int>{100, 101, 103, 104, 106, 107, 108, 109, 111, 112, 114, 115}));

    std::vector<int> restored(32, 0);
    type_unpack(*l, packed.data(), restored.data(), 2);
    std::vector<int> expected(32, 0);
    for (int i : {0, 1, 3, 4, 6, 7, 8, 9, 11, 12, 14, 15}) expected[i] = buffer[i];
    EXPECT_EQ(restored, expected);
}

TEST(DatatypePack, MatchesMpiPackForEveryCombiner) {
    std::vector<std::pair<const char *, MPI_Datatype>> types;
    auto add = [&](const char *name, MPI_Datatype t) {
        MPI_Type_commit(&t);
        types.emplace_back(name, t);
    };
    MPI_Datatype t;
    MPI_Type_contiguous(3, MPI_SHORT_INT, &t);
    add("contiguous(short_int)", t);
    MPI_Type_vector(3, 2, -3, MPI_DOUBLE, &t);
    add("vector negative stride", t);
    {
        const int bl[] = {1, 3, 2};
        const int d[] = {5, 0, 9};
        MPI_Type_indexed(3, bl, d, MPI_FLOAT, &t);
        add("indexed", t);
        const int ib[] = {7, 2, 4};
        MPI_Type_create_indexed_block(3, 2, ib, MPI_INT, &t);
        add("indexed_block", t);
        const MPI_Aint hb[] = {40, 0, 17};
        MPI_Type_create_hindexed_block(3, 2, hb, MPI_CHAR, &t);
        add("hindexed_block", t);
    }
    {
        MPI_Datatype inner;
        MPI_Type_vector(2, 1, 3, MPI_INT, &inner);
        const int bl[] = {2, 1, 1};
        const MPI_Aint d[] = {0, 40, 56};
        const MPI_Datatype ts[] = {inner, MPI_DOUBLE, MPI_DOUBLE_INT};
        MPI_Type_create_struct(3, bl, d, ts, &t);
        add("struct(vector, double, double_int)", t);
        MPI_Datatype r;
        MPI_Type_create_resized(inner, -8, 40, &r);
        MPI_Type_create_hvector(3, 2, 100, r, &t);
        add("hvector(resized(vector))", t);
        MPI_Type_free(&r);
        MPI_Type_free(&inner);
    }
    {
        const int sizes[] = {5, 4, 6}, sub[] = {2, 3, 2}, st[] = {3, 1, 4};
        MPI_Type_create_subarray(3, sizes, sub, st, MPI_ORDER_C, MPI_INT, &t);
        add("subarray C", t);
        MPI_Type_create_subarray(3, sizes, sub, st, MPI_ORDER_FORTRAN, MPI_DOUBLE, &t);
        add("subarray Fortran", t);
    }
    // Types whose parts are flattened one after another with the same per-thread scratch
    // (children by depth, the grid's offset lists): a subarray of a subarray, a struct
    // of a 3-D and a 2-D subarray in both orders, and a type of more blocks than the
    // scratch keeps, followed by small ones.
    {
        const int sizes[] = {4, 5}, sub[] = {2, 3}, st[] = {1, 2};
        MPI_Datatype inner, outer2, outer3;
        MPI_Type_create_subarray(2, sizes, sub, st, MPI_ORDER_C, MPI_SHORT, &inner);
        const int sizes3[] = {3, 2, 4}, sub3[] = {2, 1, 2}, st3[] = {1, 1, 0};
        MPI_Type_create_subarray(3, sizes3, sub3, st3, MPI_ORDER_FORTRAN, inner, &t);
        add("subarray Fortran(subarray C)", t);
        MPI_Type_create_subarray(3, sizes3, sub3, st3, MPI_ORDER_C, MPI_INT, &outer3);
        MPI_Type_create_subarray(2, sizes, sub, st, MPI_ORDER_FORTRAN, MPI_INT, &outer2);
        const int bl[] = {1, 2};
        const MPI_Aint d[] = {0, 1000};
        const MPI_Datatype ts[] = {outer3, outer2};
        MPI_Type_create_struct(2, bl, d, ts, &t);
        add("struct(subarray 3-D C, subarray 2-D Fortran)", t);
        MPI_Type_free(&outer3);
        MPI_Type_free(&outer2);
        MPI_Type_free(&inner);
        MPI_Type_vector(6000, 1, 2, MPI_CHAR, &t);
        add("vector of 6000 blocks", t);
        const int big[] = {3, 3000}, bsub[] = {2, 2999}, bst[] = {1, 1};
        MPI_Type_create_subarray(2, big, bsub, bst, MPI_ORDER_FORTRAN, MPI_CHAR, &t);
        add("subarray of 2x2999 blocks", t);
        MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &t);
        add("vector after the large ones", t);
    }
    // darray for every rank of a 2x3 grid, all distributions and both orders.
    for (int rank = 0; rank < 6; ++rank) {
        const int gsizes[] = {7, 10}, psizes[] = {2, 3};
        const int d1[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
        const int a1[] = {MPI_DISTRIBUTE_DFLT_DARG, 2};
        MPI_Type_create_darray(6, rank, 2, gsizes, d1, a1, psizes, MPI_ORDER_C, MPI_INT, &t);
        add("darray block/cyclic(2) C", t);
        const int d2[] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK};
        const int a2[] = {MPI_DISTRIBUTE_DFLT_DARG, 4};
        MPI_Type_create_darray(6, rank, 2, gsizes, d2, a2, psizes, MPI_ORDER_FORTRAN, MPI_SHORT,
                               &t);
        add("darray cyclic/block(4) Fortran", t);
    }
    {
        const int gsizes[] = {9, 4}, psizes[] = {3, 1};
        const int d[] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE};
        const int a[] = {2, MPI_DISTRIBUTE_DFLT_DARG};
        MPI_Type_create_darray(3, 2, 2, gsizes, d, a, psizes, MPI_ORDER_C, MPI_DOUBLE, &t);
        add("darray cyclic(2)/none", t);
    }

    for (auto &[name, type] : types) {
        SCOPED_TRACE(name);
        const TypeLayout *l = nullptr;
        ASSERT_EQ(type_layout_get(type, &l), Status::ok);
        const int count = 3;
        MPI_Aint lb, extent, true_lb, true_extent;
        MPI_Type_get_extent(type, &lb, &extent);
        MPI_Type_get_true_extent(type, &true_lb, &true_extent);
        EXPECT_EQ(l->extent, extent);
        EXPECT_EQ(l->true_lb, true_lb);
        EXPECT_EQ(l->true_extent, true_extent);
        // Room for `count` elements whatever the signs of lb and extent.
        const std::int64_t span =
            2 * (std::abs(extent) * count + std::abs(true_lb) + true_extent) + 64;
        std::vector<unsigned char> memory(static_cast<std::size_t>(span));
        for (std::size_t i = 0; i < memory.size(); ++i)
            memory[i] = static_cast<unsigned char>(i * 131 + 7);
        unsigned char *base = memory.data() + span / 2;

        int pack_size = 0;
        MPI_Pack_size(count, type, MPI_COMM_SELF, &pack_size);
        ASSERT_EQ(static_cast<std::size_t>(pack_size), count * l->size);
        std::vector<unsigned char> theirs(static_cast<std::size_t>(pack_size));
        int position = 0;
        MPI_Pack(base, count, type, theirs.data(), pack_size, &position, MPI_COMM_SELF);
        ASSERT_EQ(position, pack_size);
        std::vector<unsigned char> ours(count * l->size);
        type_pack(*l, base, count, ours.data());
        EXPECT_EQ(ours, theirs);

        // Unpack must write exactly the bytes MPI_Unpack writes.
        std::vector<unsigned char> a(memory.size(), 0), b(memory.size(), 0);
        type_unpack(*l, ours.data(), a.data() + span / 2, count);
        position = 0;
        MPI_Unpack(theirs.data(), pack_size, &position, b.data() + span / 2, count, type,
                   MPI_COMM_SELF);
        EXPECT_EQ(a, b);
        MPI_Type_free(&type);
    }
}

TEST(DatatypeCache, SamePointerAndSurvivesFreeAndReuse) {
    MPI_Datatype v;
    MPI_Type_vector(4, 1, 3, MPI_INT, &v);
    MPI_Type_commit(&v);
    const TypeLayout *first = get(v);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(get(v), first);
    EXPECT_EQ(segs(*first), (Segs{{0, 4}, {12, 4}, {24, 4}, {36, 4}}));
    const MPI_Datatype old_handle = v;
    MPI_Type_free(&v);

    // MPICH hands freed handles out again; the new type must not see the old layout.
    MPI_Datatype c;
    MPI_Type_contiguous(5, MPI_DOUBLE, &c);
    MPI_Type_commit(&c);
    const TypeLayout *second = get(c);
    ASSERT_NE(second, nullptr);
    EXPECT_EQ(segs(*second), (Segs{{0, 40}}));
    EXPECT_EQ(second->basic, MPI_DOUBLE);
    EXPECT_EQ(second->extent, 40);
    EXPECT_TRUE(second->contiguous);
    EXPECT_EQ(get(c), second);
    RecordProperty("handle_reused", c == old_handle ? 1 : 0);  // MPICH 4.0.2 does reuse it
    MPI_Type_free(&c);

    // Predefined layouts are stable too.
    EXPECT_EQ(get(MPI_DOUBLE), get(MPI_DOUBLE));
}

// ARMCI-MPI's strided puts build the same subarray afresh around every call: a new type
// of a shape seen before (same combiner, same contents, predefined children) gets that
// shape's layout, kept after the first type was freed.
TEST(DatatypeCache, FreshTypesOfOneShapeShareItsLayout) {
    const int sizes[] = {3, 16384}, subsizes[] = {3, 8192}, starts[] = {0, 4};
    auto subarray = [&](MPI_Datatype child) {
        MPI_Datatype t;
        MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, child, &t);
        return t;
    };
    const Segs expected{{4, 8192}, {16388, 8192}, {32772, 8192}};
    Type first(subarray(MPI_BYTE));
    const TypeLayout *shared = get(first.t);
    ASSERT_NE(shared, nullptr);
    EXPECT_EQ(segs(*shared), expected);
    MPI_Type_free(&first.t);
    for (int i = 0; i < 3; ++i) {
        Type again(subarray(MPI_BYTE));
        const TypeLayout *layout = get(again.t);
        EXPECT_EQ(layout, shared) << "type " << i;
        EXPECT_EQ(segs(*layout), expected);
        EXPECT_EQ(layout->extent, 3 * 16384);
        EXPECT_EQ(layout->size, 3u * 8192);
    }
    // Another child, another shape.
    Type wider(subarray(MPI_SHORT));
    const TypeLayout *other = get(wider.t);
    ASSERT_NE(other, nullptr);
    EXPECT_NE(other, shared);
    EXPECT_EQ(segs(*other), (Segs{{8, 16384}, {32776, 16384}, {65544, 16384}}));
    EXPECT_EQ(other->basic, MPI_SHORT);
}

// A known shape does not skip the commit check, and a type with a derived child (whose
// handle may name another type later) gets a layout of its own, right for it.
TEST(DatatypeCache, ShapesNeitherSkipTheCommitCheckNorTrustDerivedChildren) {
    Type committed(MPI_DATATYPE_NULL, false);
    MPI_Type_vector(3, 2, 5, MPI_INT, &committed.t);
    MPI_Type_commit(&committed.t);
    ASSERT_NE(get(committed.t), nullptr);
    Type uncommitted(MPI_DATATYPE_NULL, false);
    MPI_Type_vector(3, 2, 5, MPI_INT, &uncommitted.t);
    const TypeLayout *l = nullptr;
    EXPECT_EQ(type_layout_get(uncommitted.t, &l), Status::err_type);

    for (int round = 0; round < 2; ++round) {
        MPI_Datatype child, parent;
        if (round == 0)
            MPI_Type_vector(2, 1, 3, MPI_INT, &child);
        else
            MPI_Type_contiguous(2, MPI_INT, &child);
        MPI_Type_contiguous(2, child, &parent);
        MPI_Type_commit(&parent);
        MPI_Type_free(&child);  // (the parent keeps it)
        const TypeLayout *layout = get(parent);
        ASSERT_NE(layout, nullptr);
        EXPECT_EQ(segs(*layout), round == 0 ? (Segs{{0, 4}, {12, 8}, {28, 4}}) : (Segs{{0, 16}}))
            << "round " << round;
        MPI_Type_free(&parent);
    }
}
