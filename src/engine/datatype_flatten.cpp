// Flattening an MPI datatype into its data: MPI_Type_get_envelope/get_contents walked
// down to the predefined leaves, each block of the typemap a segment (offset, length)
// in typemap order, touching segments merged, every offset overflow-checked.
#include "engine/datatype_flatten.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>

namespace nbrma::engine {

namespace {
// Offsets come from user displacements and extents: overflow marks the flattening
// failed instead of wrapping.
std::int64_t add(Flat &flat, std::int64_t a, std::int64_t b) {
    std::int64_t sum = 0;
    flat.overflow |= __builtin_add_overflow(a, b, &sum);
    return sum;
}

std::int64_t mul(Flat &flat, std::int64_t a, std::int64_t b) {
    std::int64_t product = 0;
    flat.overflow |= __builtin_mul_overflow(a, b, &product);
    return product;
}

// Flattening allocates nothing once warm: the children's Flats (one per nesting level,
// reused by the members of a struct) and the grid's offset lists live in per-thread
// storage that keeps its capacity from type to type (ARMCI-MPI flattens a fresh subarray
// type for every strided call). What grew past `kept_segments` is released.
constexpr std::size_t kept_segments = 4096;

struct Scratch {
    std::vector<std::unique_ptr<Flat>> children;  // by nesting depth
    std::size_t depth = 0;
    std::vector<std::vector<std::int64_t>> dims;  // the grid's offsets per dimension
    std::vector<std::int64_t> stride;
    std::vector<std::size_t> position;
};
thread_local Scratch scratch;

void trim(std::vector<TypeSegment> &segments) {
    segments.clear();
    if (segments.capacity() > kept_segments) std::vector<TypeSegment>().swap(segments);
}

// A child's Flat, empty, for the scope of one flatten level.
class ChildFlat {
  public:
    explicit ChildFlat(Scratch &scratch) : scratch_(scratch) {
        if (scratch.depth == scratch.children.size())
            scratch.children.push_back(std::make_unique<Flat>());
        flat_ = scratch.children[scratch.depth++].get();
        reset();
    }
    ~ChildFlat() {
        trim(flat_->segments);
        --scratch_.depth;
    }
    ChildFlat(const ChildFlat &) = delete;
    ChildFlat &operator=(const ChildFlat &) = delete;
    Flat &operator*() { return *flat_; }
    // Empties it again (the next member of a struct).
    void reset() {
        trim(flat_->segments);
        flat_->basic = MPI_DATATYPE_NULL;
        flat_->any_leaf = flat_->mixed = flat_->overflow = false;
    }

  private:
    Scratch &scratch_;
    Flat *flat_;
};

void note_leaf(Flat &flat, MPI_Datatype basic) {
    if (!flat.any_leaf) {
        flat.any_leaf = true;
        flat.basic = basic;
    } else if (flat.basic != basic) {
        flat.mixed = true;
    }
}

void merge_leaves(Flat &into, const Flat &from) {
    if (from.mixed) {
        into.any_leaf = true;
        into.mixed = true;
    } else if (from.any_leaf) {
        note_leaf(into, from.basic);
    }
}

// `blocklength` consecutive copies of `child` starting at byte `base`. A zero-length
// block contributes no leaves: MPI's typemap then has no entry of that type, so it
// must not make the basic type look mixed.
// A child whose one segment fills its extent: n consecutive copies of it are one
// segment, so flattening costs O(blocks), never O(bytes) (a 128 KiB block of MPI_BYTE is
// one segment, not 131072 merged ones).
bool dense(const Flat &child, MPI_Aint child_extent) {
    return child.segments.size() == 1 &&
           static_cast<std::int64_t>(child.segments[0].length) == child_extent;
}

// `count` dense copies of `child` from byte `base`: exactly the segment the copy-by-copy
// loop would merge, with the same overflow checks (its last copy's offset).
void append_dense(Flat &into, const Flat &child, MPI_Aint child_extent, std::int64_t base,
                  std::int64_t count) {
    const TypeSegment &s = child.segments[0];
    const std::int64_t start = add(into, s.offset, base);
    (void)add(into, start, mul(into, count - 1, child_extent));
    const std::int64_t length = mul(into, count, child_extent);
    if (!into.overflow) append_segment(into.segments, start, static_cast<std::size_t>(length));
}

void append_block(Flat &into, const Flat &child, MPI_Aint child_extent, std::int64_t base,
                  std::int64_t blocklength) {
    if (blocklength <= 0) return;
    merge_leaves(into, child);
    into.overflow |= child.overflow;
    if (dense(child, child_extent)) return append_dense(into, child, child_extent, base, blocklength);
    for (std::int64_t j = 0; j < blocklength && !into.overflow; ++j) {
        const std::int64_t shift = add(into, base, mul(into, j, child_extent));
        for (const TypeSegment &s : child.segments)
            append_segment(into.segments, add(into, s.offset, shift), s.length);
    }
}

// Visits every point of a multi-dimensional index grid (subarray, darray); `dims` is
// ordered outermost first, each entry the byte offsets taken along that dimension,
// so typemap order is plain odometer order; at each point `row` consecutive copies of
// the child start (1 unless the caller folded the innermost dimension in).
// When the child is dense and the innermost dimension takes consecutive copies (offsets
// o, o + extent, o + 2 extent, ...), each row is one segment: the odometer runs over the
// outer dimensions only.
void append_grid(Flat &into, const Flat &child, std::vector<std::vector<std::int64_t>> &dims,
                 MPI_Aint child_extent, std::int64_t row = 1) {
    for (const auto &d : dims)
        if (d.empty()) return;
    if (row <= 0) return;
    merge_leaves(into, child);
    into.overflow |= child.overflow;
    const bool dense_child = dense(child, child_extent);
    if (row == 1 && dense_child && !dims.empty()) {
        std::vector<std::int64_t> &inner = dims.back();
        bool consecutive = true;
        for (std::size_t i = 1; i < inner.size() && consecutive; ++i) {
            std::int64_t step = 0;
            consecutive = !__builtin_sub_overflow(inner[i], inner[i - 1], &step) &&
                          step == child_extent;
        }
        if (consecutive) {
            row = static_cast<std::int64_t>(inner.size());
            inner.resize(1);
        }
    }
    std::vector<std::size_t> &position = scratch.position;
    position.assign(dims.size(), 0);
    while (!into.overflow) {
        std::int64_t base = 0;
        for (std::size_t d = 0; d < dims.size(); ++d) base = add(into, base, dims[d][position[d]]);
        if (dense_child) {
            append_dense(into, child, child_extent, base, row);
        } else {
            for (std::int64_t j = 0; j < row && !into.overflow; ++j) {
                const std::int64_t shift = add(into, base, mul(into, j, child_extent));
                for (const TypeSegment &s : child.segments)
                    append_segment(into.segments, add(into, s.offset, shift), s.length);
            }
        }
        std::size_t d = dims.size();
        while (d > 0) {
            --d;
            if (++position[d] < dims[d].size()) break;
            position[d] = 0;
            if (d == 0) return;
        }
        if (dims.empty()) return;
    }
}

// Byte strides of an array of `sizes` elements of extent `extent` in `order`.
const std::vector<std::int64_t> &array_strides(Flat &flat, const int *sizes, int ndims, int order,
                                               MPI_Aint extent) {
    std::vector<std::int64_t> &stride = scratch.stride;
    stride.assign(static_cast<std::size_t>(ndims), 0);
    std::int64_t s = extent;
    if (order == MPI_ORDER_FORTRAN) {
        for (int d = 0; d < ndims; ++d) {
            stride[d] = s;
            s = mul(flat, s, sizes[d]);
        }
    } else {
        for (int d = ndims - 1; d >= 0; --d) {
            stride[d] = s;
            s = mul(flat, s, sizes[d]);
        }
    }
    return stride;
}

// Reorders per-dimension offset lists (indexed by dimension) outermost first.
std::vector<std::vector<std::int64_t>> &outermost_first(
    std::vector<std::vector<std::int64_t>> &dims, int order) {
    if (order == MPI_ORDER_FORTRAN) std::reverse(dims.begin(), dims.end());
    return dims;
}

// The grid's offset lists for `n` dimensions, empty (their capacity kept).
std::vector<std::vector<std::int64_t>> &grid_dims(int n) {
    std::vector<std::vector<std::int64_t>> &dims = scratch.dims;
    dims.resize(static_cast<std::size_t>(n));
    for (auto &d : dims) {
        d.clear();
        if (d.capacity() > kept_segments) std::vector<std::int64_t>().swap(d);
    }
    return dims;
}

// `count` elements of T, inline up to 16 (a type's contents nearly always fit: no
// allocation), on the heap beyond.
template <typename T>
class Contents {
  public:
    explicit Contents(int count, T fill = T{}) {
        if (count > inline_count) {
            heap_.assign(static_cast<std::size_t>(count), fill);
            data_ = heap_.data();
        } else {
            std::fill(inline_, inline_ + inline_count, fill);
        }
    }
    Contents(const Contents &) = delete;
    Contents &operator=(const Contents &) = delete;
    T *data() { return data_; }
    T &operator[](std::size_t i) { return data_[i]; }

  private:
    static constexpr int inline_count = 16;
    T inline_[inline_count];
    std::vector<T> heap_;
    T *data_ = inline_;
};

// Datatype handles returned by MPI_Type_get_contents that are not predefined are new
// references the caller must free.
class ContentsGuard {
  public:
    ContentsGuard(Contents<MPI_Datatype> &types, int count) : types_(types), count_(count) {}
    ~ContentsGuard() {
        for (int i = 0; i < count_; ++i) {
            MPI_Datatype &t = types_[static_cast<std::size_t>(i)];
            if (predefined_layout(t)) continue;
            int ni = 0, na = 0, nd = 0, combiner = 0;
            if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
                combiner != MPI_COMBINER_NAMED)
                (void)PMPI_Type_free(&t);
        }
    }
    ContentsGuard(const ContentsGuard &) = delete;
    ContentsGuard &operator=(const ContentsGuard &) = delete;

  private:
    Contents<MPI_Datatype> &types_;
    int count_;
};

// Local indices along one darray dimension, in increasing order (MPI-4.0 §5.1.4).
std::vector<std::int64_t> darray_indices(int gsize, int distrib, int darg, int psize, int coord) {
    std::vector<std::int64_t> indices;
    if (distrib == MPI_DISTRIBUTE_NONE) {
        for (int i = 0; i < gsize; ++i) indices.push_back(i);
    } else if (distrib == MPI_DISTRIBUTE_BLOCK) {
        const std::int64_t block =
            darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + psize - 1) / psize : darg;
        const std::int64_t start = coord * block;
        const std::int64_t end = std::min<std::int64_t>(start + block, gsize);
        for (std::int64_t i = start; i < end; ++i) indices.push_back(i);
    } else {
        const std::int64_t block = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
        for (std::int64_t s = coord * block; s < gsize;
             s += static_cast<std::int64_t>(psize) * block)
            for (std::int64_t i = s; i < std::min<std::int64_t>(s + block, gsize); ++i)
                indices.push_back(i);
    }
    return indices;
}

// A subarray of the child's array (MPI_Type_create_subarray's integers: ndims, sizes,
// subsizes, starts, order).
void append_subarray(Flat &out, const Flat &child, MPI_Aint e, const int *ints) {
    const int n = ints[0];
    const int *sizes = &ints[1], *subsizes = &ints[1 + n], *starts = &ints[1 + 2 * n];
    const int order = ints[1 + 3 * n];
    const std::vector<std::int64_t> &stride = array_strides(out, sizes, n, order, e);
    // With a dense child the innermost dimension's copies are consecutive: it is
    // one offset and a row of subsize copies, never a list as long as the row
    // (an 8 KiB row of MPI_BYTE would be 8192 offsets).
    const int inner = order == MPI_ORDER_FORTRAN ? 0 : n - 1;
    const bool rows = n > 0 && dense(child, e);
    std::vector<std::vector<std::int64_t>> &dims = grid_dims(n);
    for (int d = 0; d < n; ++d) {
        const int taken = rows && d == inner ? std::min(subsizes[d], 1) : subsizes[d];
        for (int i = 0; i < taken; ++i)
            dims[d].push_back(mul(out, std::int64_t{starts[d]} + i, stride[d]));
    }
    append_grid(out, child, outermost_first(dims, order), e, rows ? subsizes[inner] : 1);
}

// This process's part of a distributed array (MPI_Type_create_darray's integers: size,
// rank, ndims, gsizes, distribs, dargs, psizes, order).
void append_darray(Flat &out, const Flat &child, MPI_Aint e, const int *ints) {
    const int rank = ints[1], n = ints[2];
    const int *gsizes = &ints[3], *distribs = &ints[3 + n], *dargs = &ints[3 + 2 * n];
    const int *psizes = &ints[3 + 3 * n];
    const int order = ints[3 + 4 * n];
    // The process grid is row-major whatever the array order (MPI-4.0 §5.1.4).
    std::vector<int> coord(static_cast<std::size_t>(n));
    for (int d = n - 1, r = rank; d >= 0; --d) {
        coord[d] = r % psizes[d];
        r /= psizes[d];
    }
    const std::vector<std::int64_t> &stride = array_strides(out, gsizes, n, order, e);
    std::vector<std::vector<std::int64_t>> &dims = grid_dims(n);
    for (int d = 0; d < n; ++d)
        for (std::int64_t i :
             darray_indices(gsizes[d], distribs[d], dargs[d], psizes[d], coord[d]))
            dims[d].push_back(mul(out, i, stride[d]));
    append_grid(out, child, outermost_first(dims, order), e);
}

// A predefined type's data and leaf, from its table entry (no MPI call).
void flatten_leaf(MPI_Datatype type, const TypeLayout &leaf, Flat &out) {
    note_leaf(out, type);
    for (const TypeSegment &s : leaf.segments) append_segment(out.segments, s.offset, s.length);
}

Status flatten_child(MPI_Datatype child, Flat &flat, MPI_Aint &extent) {
    if (const TypeLayout *leaf = predefined_layout(child)) {
        extent = leaf->extent;
        flatten_leaf(child, *leaf, flat);
        return Status::ok;
    }
    MPI_Aint lb = 0;
    if (PMPI_Type_get_extent(child, &lb, &extent) != MPI_SUCCESS) return Status::err_type;
    return flatten(child, flat);
}

}  // namespace

Status flatten(MPI_Datatype type, Flat &out) {
    if (const TypeLayout *leaf = predefined_layout(type)) {
        flatten_leaf(type, *leaf, out);
        return Status::ok;
    }
    Envelope envelope;
    if (PMPI_Type_get_envelope(type, &envelope.ints, &envelope.addresses, &envelope.types,
                               &envelope.combiner) != MPI_SUCCESS)
        return Status::err_type;
    return flatten(type, envelope, out);
}

Status flatten(MPI_Datatype type, const Envelope &envelope, Flat &out) {
    const int ni = envelope.ints, na = envelope.addresses, nd = envelope.types;
    const int combiner = envelope.combiner;
    if (combiner == MPI_COMBINER_NAMED) {
        // MPI_LB/MPI_UB are bound markers inside (legacy) struct types, not data.
        if (type == MPI_LB || type == MPI_UB) return Status::ok;
        return Status::err_type;  // (predefined types were handled above)
    }
    if (combiner == MPI_COMBINER_F90_REAL || combiner == MPI_COMBINER_F90_COMPLEX ||
        combiner == MPI_COMBINER_F90_INTEGER)
        return Status::err_unsupported;  // no C-side type to map them to

    Contents<int> ints(ni);
    Contents<MPI_Aint> addrs(na);
    Contents<MPI_Datatype> types(nd, MPI_DATATYPE_NULL);
    if (PMPI_Type_get_contents(type, ni, na, nd, ints.data(), addrs.data(), types.data()) !=
        MPI_SUCCESS)
        return Status::err_type;
    ContentsGuard guard(types, nd);

    if (combiner == MPI_COMBINER_STRUCT || combiner == MPI_COMBINER_STRUCT_INTEGER) {
        const int count = ints[0];
        ChildFlat child(scratch);
        for (int i = 0; i < count; ++i) {
            if (i > 0) child.reset();
            MPI_Aint child_extent = 0;
            Status s = flatten_child(types[i], *child, child_extent);
            if (s != Status::ok) return s;
            const std::int64_t displacement = na > 0 ? addrs[i] : ints[1 + count + i];
            append_block(out, *child, child_extent, displacement, ints[1 + i]);
        }
        return Status::ok;
    }

    ChildFlat child_flat(scratch);
    Flat &child = *child_flat;
    MPI_Aint e = 0;  // child extent
    Status s = flatten_child(types[0], child, e);
    if (s != Status::ok) return s;

    switch (combiner) {
        case MPI_COMBINER_DUP:
        case MPI_COMBINER_RESIZED:  // only lb/extent change; the data stays put
            append_block(out, child, e, 0, 1);
            return Status::ok;
        case MPI_COMBINER_CONTIGUOUS:
            append_block(out, child, e, 0, ints[0]);
            return Status::ok;
        case MPI_COMBINER_VECTOR:
            for (int i = 0; i < ints[0]; ++i)
                append_block(out, child, e, mul(out, mul(out, i, ints[2]), e), ints[1]);
            return Status::ok;
        case MPI_COMBINER_HVECTOR:
        case MPI_COMBINER_HVECTOR_INTEGER: {
            const std::int64_t stride = na > 0 ? addrs[0] : ints[2];
            for (int i = 0; i < ints[0]; ++i)
                append_block(out, child, e, mul(out, i, stride), ints[1]);
            return Status::ok;
        }
        case MPI_COMBINER_INDEXED: {
            const int count = ints[0];
            for (int i = 0; i < count; ++i)
                append_block(out, child, e, mul(out, ints[1 + count + i], e), ints[1 + i]);
            return Status::ok;
        }
        case MPI_COMBINER_HINDEXED:
        case MPI_COMBINER_HINDEXED_INTEGER: {
            const int count = ints[0];
            for (int i = 0; i < count; ++i) {
                const std::int64_t displacement = na > 0 ? addrs[i] : ints[1 + count + i];
                append_block(out, child, e, displacement, ints[1 + i]);
            }
            return Status::ok;
        }
        case MPI_COMBINER_INDEXED_BLOCK:
            for (int i = 0; i < ints[0]; ++i)
                append_block(out, child, e, mul(out, ints[2 + i], e), ints[1]);
            return Status::ok;
        case MPI_COMBINER_HINDEXED_BLOCK:
            for (int i = 0; i < ints[0]; ++i) append_block(out, child, e, addrs[i], ints[1]);
            return Status::ok;
        case MPI_COMBINER_SUBARRAY:
            append_subarray(out, child, e, ints.data());
            return Status::ok;
        case MPI_COMBINER_DARRAY:
            append_darray(out, child, e, ints.data());
            return Status::ok;
        default:
            return Status::err_unsupported;
    }
}

}  // namespace nbrma::engine
