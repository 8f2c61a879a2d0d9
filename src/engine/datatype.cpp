#include "engine/datatype.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <unordered_map>

namespace nbrma::engine {

namespace {

// ------------------------------------------------------------------ flattening

struct Flat {
    std::vector<TypeSegment> segments;
    MPI_Datatype basic = MPI_DATATYPE_NULL;
    bool any_leaf = false;
    bool mixed = false;
    bool overflow = false;  // an offset did not fit in 64 bits: no usable layout
};

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

void append_segment(std::vector<TypeSegment> &segments, std::int64_t offset, std::size_t length) {
    if (length == 0) return;
    if (!segments.empty()) {
        TypeSegment &last = segments.back();
        if (last.offset + static_cast<std::int64_t>(last.length) == offset) {
            last.length += length;
            return;
        }
    }
    segments.push_back(TypeSegment{offset, length});
}

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
void append_grid(Flat &into, const Flat &child, std::vector<std::vector<std::int64_t>> dims,
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
    std::vector<std::size_t> position(dims.size(), 0);
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
std::vector<std::int64_t> array_strides(Flat &flat, const int *sizes, int ndims, int order,
                                        MPI_Aint extent) {
    std::vector<std::int64_t> stride(static_cast<std::size_t>(ndims));
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
std::vector<std::vector<std::int64_t>> outermost_first(std::vector<std::vector<std::int64_t>> dims,
                                                       int order) {
    if (order == MPI_ORDER_FORTRAN) std::reverse(dims.begin(), dims.end());
    return dims;
}

// ------------------------------------------------------------------ predefined table

struct Predefined {
    std::unordered_map<MPI_Datatype, TypeLayout> layouts;
};

template <class V>
struct PairOf {
    V value;
    int index;
};

// Pair types are struct-like ({value, int} with padding); they are kept as one basic
// type because MAXLOC/MINLOC treat the pair as a unit.
template <class V>
std::vector<TypeSegment> pair_segments() {
    std::vector<TypeSegment> segments;
    append_segment(segments, 0, sizeof(V));
    append_segment(segments, static_cast<std::int64_t>(offsetof(PairOf<V>, index)), sizeof(int));
    return segments;
}

// true_lb and true_extent from the data the segments describe: the range checks then
// cover exactly the bytes the engine moves.
// False if they do not fit in 64 bits.
bool set_true_bounds(TypeLayout &layout) {
    layout.true_lb = layout.true_extent = 0;
    if (layout.segments.empty()) return true;
    std::int64_t low = layout.segments[0].offset, high = low, end = 0;
    for (const TypeSegment &s : layout.segments) {
        if (__builtin_add_overflow(s.offset, static_cast<std::int64_t>(s.length), &end))
            return false;
        low = std::min(low, s.offset);
        high = std::max(high, end);
    }
    if (__builtin_sub_overflow(high, low, &layout.true_extent)) return false;
    layout.true_lb = low;
    return true;
}

void add_predefined(Predefined &table, MPI_Datatype type, std::vector<TypeSegment> segments) {
    // MPICH leaves unavailable types (e.g. MPI_INTEGER16) at MPI_DATATYPE_NULL, and
    // MPI_LONG_LONG is an alias: skip both instead of overwriting.
    if (type == MPI_DATATYPE_NULL || table.layouts.count(type) != 0) return;
    MPI_Count size = 0;
    MPI_Aint lb = 0, extent = 0;
    if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS || size <= 0) return;
    if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS) return;
    if (segments.empty()) append_segment(segments, 0, static_cast<std::size_t>(size));
    std::size_t covered = 0;
    for (const TypeSegment &s : segments) covered += s.length;
    // A C layout that disagrees with MPICH's size would silently move wrong bytes.
    if (covered != static_cast<std::size_t>(size)) return;

    TypeLayout layout;
    layout.size = static_cast<std::size_t>(size);
    layout.extent = extent;
    layout.basic = type;
    layout.basic_size = layout.size;
    layout.contiguous = segments.size() == 1 && segments[0].offset == 0 &&
                        static_cast<MPI_Aint>(segments[0].length) == extent &&
                        segments[0].length == layout.size;
    layout.segments = std::move(segments);
    if (!set_true_bounds(layout)) return;
    table.layouts.emplace(type, std::move(layout));
}

const Predefined &predefined() {
    static const Predefined table = [] {
        Predefined t;
        const MPI_Datatype plain[] = {
            // C
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
            MPI_LONG_LONG_INT,
            MPI_LONG_LONG,
            MPI_UNSIGNED_LONG_LONG,
            MPI_FLOAT,
            MPI_DOUBLE,
            MPI_LONG_DOUBLE,
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
            MPI_C_BOOL,
            MPI_C_FLOAT_COMPLEX,
            MPI_C_COMPLEX,
            MPI_C_DOUBLE_COMPLEX,
            MPI_C_LONG_DOUBLE_COMPLEX,
            MPI_AINT,
            MPI_OFFSET,
            MPI_COUNT,
            MPI_2INT,
#ifdef MPIX_C_FLOAT16
            MPIX_C_FLOAT16,
#endif
            // C++
            MPI_CXX_BOOL,
            MPI_CXX_FLOAT_COMPLEX,
            MPI_CXX_DOUBLE_COMPLEX,
            MPI_CXX_LONG_DOUBLE_COMPLEX,
            // Fortran (usable from C; accumulate from Fortran codes lands here too)
            MPI_CHARACTER,
            MPI_LOGICAL,
            MPI_INTEGER,
            MPI_REAL,
            MPI_DOUBLE_PRECISION,
            MPI_COMPLEX,
            MPI_DOUBLE_COMPLEX,
            MPI_2INTEGER,
            MPI_2REAL,
            MPI_2DOUBLE_PRECISION,
            MPI_REAL4,
            MPI_REAL8,
            MPI_REAL16,
            MPI_COMPLEX8,
            MPI_COMPLEX16,
            MPI_COMPLEX32,
            MPI_INTEGER1,
            MPI_INTEGER2,
            MPI_INTEGER4,
            MPI_INTEGER8,
            MPI_INTEGER16,
        };
        for (MPI_Datatype type : plain) add_predefined(t, type, {});
        add_predefined(t, MPI_FLOAT_INT, pair_segments<float>());
        add_predefined(t, MPI_DOUBLE_INT, pair_segments<double>());
        add_predefined(t, MPI_LONG_INT, pair_segments<long>());
        add_predefined(t, MPI_SHORT_INT, pair_segments<short>());
        add_predefined(t, MPI_LONG_DOUBLE_INT, pair_segments<long double>());
        return t;
    }();
    return table;
}

const TypeLayout *predefined_layout(MPI_Datatype type) {
    const auto &layouts = predefined().layouts;
    auto it = layouts.find(type);
    return it == layouts.end() ? nullptr : &it->second;
}

// ------------------------------------------------------------------ derived types

// Datatype handles returned by MPI_Type_get_contents that are not predefined are new
// references the caller must free.
class ContentsGuard {
  public:
    explicit ContentsGuard(std::vector<MPI_Datatype> &types) : types_(types) {}
    ~ContentsGuard() {
        for (MPI_Datatype &t : types_) {
            int ni = 0, na = 0, nd = 0, combiner = 0;
            if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
                combiner != MPI_COMBINER_NAMED)
                (void)PMPI_Type_free(&t);
        }
    }
    ContentsGuard(const ContentsGuard &) = delete;
    ContentsGuard &operator=(const ContentsGuard &) = delete;

  private:
    std::vector<MPI_Datatype> &types_;
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

Status flatten(MPI_Datatype type, Flat &out);

Status flatten_child(MPI_Datatype child, Flat &flat, MPI_Aint &extent) {
    MPI_Aint lb = 0;
    if (PMPI_Type_get_extent(child, &lb, &extent) != MPI_SUCCESS) return Status::err_type;
    return flatten(child, flat);
}

Status flatten(MPI_Datatype type, Flat &out) {
    int ni = 0, na = 0, nd = 0, combiner = 0;
    if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS)
        return Status::err_type;
    if (combiner == MPI_COMBINER_NAMED) {
        // MPI_LB/MPI_UB are bound markers inside (legacy) struct types, not data.
        if (type == MPI_LB || type == MPI_UB) return Status::ok;
        const TypeLayout *leaf = predefined_layout(type);
        if (leaf == nullptr) return Status::err_type;
        note_leaf(out, type);
        for (const TypeSegment &s : leaf->segments)
            append_segment(out.segments, s.offset, s.length);
        return Status::ok;
    }
    if (combiner == MPI_COMBINER_F90_REAL || combiner == MPI_COMBINER_F90_COMPLEX ||
        combiner == MPI_COMBINER_F90_INTEGER)
        return Status::err_unsupported;  // no C-side type to map them to

    std::vector<int> ints(static_cast<std::size_t>(ni));
    std::vector<MPI_Aint> addrs(static_cast<std::size_t>(na));
    std::vector<MPI_Datatype> types(static_cast<std::size_t>(nd), MPI_DATATYPE_NULL);
    if (PMPI_Type_get_contents(type, ni, na, nd, ints.data(), addrs.data(), types.data()) !=
        MPI_SUCCESS)
        return Status::err_type;
    ContentsGuard guard(types);

    if (combiner == MPI_COMBINER_STRUCT || combiner == MPI_COMBINER_STRUCT_INTEGER) {
        const int count = ints[0];
        for (int i = 0; i < count; ++i) {
            Flat child;
            MPI_Aint child_extent = 0;
            Status s = flatten_child(types[i], child, child_extent);
            if (s != Status::ok) return s;
            const std::int64_t displacement = na > 0 ? addrs[i] : ints[1 + count + i];
            append_block(out, child, child_extent, displacement, ints[1 + i]);
        }
        return Status::ok;
    }

    Flat child;
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
        case MPI_COMBINER_SUBARRAY: {
            const int n = ints[0];
            const int *sizes = &ints[1], *subsizes = &ints[1 + n], *starts = &ints[1 + 2 * n];
            const int order = ints[1 + 3 * n];
            const std::vector<std::int64_t> stride = array_strides(out, sizes, n, order, e);
            // With a dense child the innermost dimension's copies are consecutive: it is
            // one offset and a row of subsize copies, never a list as long as the row
            // (an 8 KiB row of MPI_BYTE would be 8192 offsets).
            const int inner = order == MPI_ORDER_FORTRAN ? 0 : n - 1;
            const bool rows = n > 0 && dense(child, e);
            std::vector<std::vector<std::int64_t>> dims(static_cast<std::size_t>(n));
            for (int d = 0; d < n; ++d) {
                const int taken = rows && d == inner ? std::min(subsizes[d], 1) : subsizes[d];
                for (int i = 0; i < taken; ++i)
                    dims[d].push_back(mul(out, std::int64_t{starts[d]} + i, stride[d]));
            }
            append_grid(out, child, outermost_first(std::move(dims), order), e,
                        rows ? subsizes[inner] : 1);
            return Status::ok;
        }
        case MPI_COMBINER_DARRAY: {
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
            const std::vector<std::int64_t> stride = array_strides(out, gsizes, n, order, e);
            std::vector<std::vector<std::int64_t>> dims(static_cast<std::size_t>(n));
            for (int d = 0; d < n; ++d)
                for (std::int64_t i :
                     darray_indices(gsizes[d], distribs[d], dargs[d], psizes[d], coord[d]))
                    dims[d].push_back(mul(out, i, stride[d]));
            append_grid(out, child, outermost_first(std::move(dims), order), e);
            return Status::ok;
        }
        default:
            return Status::err_unsupported;
    }
}

// ------------------------------------------------------------------ cache

int type_keyval = MPI_KEYVAL_INVALID;
int finalize_keyval = MPI_KEYVAL_INVALID;
// MPI offers no query for "is this type committed"; MPI_Pack_size checks it, and on
// a private communicator set to MPI_ERRORS_RETURN the check reports instead of
// aborting through the user's error handler.
MPI_Comm probe_comm = MPI_COMM_NULL;

int delete_layout(MPI_Datatype, int, void *attribute, void *) {
    delete static_cast<TypeLayout *>(attribute);
    return MPI_SUCCESS;
}

// Runs from MPI_Finalize (attributes on MPI_COMM_SELF are deleted first), while
// MPI calls are still allowed.
int release_cache(MPI_Comm, int, void *, void *) {
    if (probe_comm != MPI_COMM_NULL) (void)PMPI_Comm_free(&probe_comm);
    if (type_keyval != MPI_KEYVAL_INVALID) (void)PMPI_Type_free_keyval(&type_keyval);
    probe_comm = MPI_COMM_NULL;
    type_keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

Status cache_setup() {
    if (type_keyval != MPI_KEYVAL_INVALID) return Status::ok;
    if (PMPI_Comm_dup(MPI_COMM_SELF, &probe_comm) != MPI_SUCCESS) return Status::err_other;
    if (PMPI_Comm_set_errhandler(probe_comm, MPI_ERRORS_RETURN) != MPI_SUCCESS ||
        PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, delete_layout, &type_keyval, nullptr) !=
            MPI_SUCCESS) {
        (void)PMPI_Comm_free(&probe_comm);
        probe_comm = MPI_COMM_NULL;
        type_keyval = MPI_KEYVAL_INVALID;
        return Status::err_other;
    }
    if (finalize_keyval == MPI_KEYVAL_INVALID &&
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, release_cache, &finalize_keyval, nullptr) ==
            MPI_SUCCESS)
        (void)PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, nullptr);
    return Status::ok;
}

Status build_layout(MPI_Datatype type, TypeLayout &layout) {
    Flat flat;
    Status s = flatten(type, flat);
    if (s != Status::ok) return s;
    if (flat.overflow) return Status::err_type;  // offsets beyond 64 bits
    MPI_Count size = 0;
    MPI_Aint lb = 0;
    if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS || size < 0) return Status::err_type;
    if (PMPI_Type_get_extent(type, &lb, &layout.extent) != MPI_SUCCESS) return Status::err_type;
    std::size_t covered = 0;
    for (const TypeSegment &seg : flat.segments) covered += seg.length;
    // Flattening and MPICH must agree on the amount of data, or we would move wrong bytes.
    if (covered != static_cast<std::size_t>(size)) return Status::err_other;

    layout.size = static_cast<std::size_t>(size);
    if (flat.any_leaf && !flat.mixed) {
        layout.basic = flat.basic;
        layout.basic_size = predefined_layout(flat.basic)->size;
    } else {
        layout.basic = MPI_DATATYPE_NULL;
        layout.basic_size = 0;
    }
    layout.contiguous = flat.segments.size() == 1 && flat.segments[0].offset == 0 &&
                        static_cast<MPI_Aint>(flat.segments[0].length) == layout.extent &&
                        flat.segments[0].length == layout.size;
    layout.segments = std::move(flat.segments);
    return set_true_bounds(layout) ? Status::ok : Status::err_type;
}

Status layout_get(MPI_Datatype type, const TypeLayout **result) {
    if (type == MPI_DATATYPE_NULL) return Status::err_type;
    if (const TypeLayout *leaf = predefined_layout(type)) {
        detail::last_predefined_type = type;  // see type_layout_get
        detail::last_predefined_layout = leaf;
        *result = leaf;
        return Status::ok;
    }
    int ni = 0, na = 0, nd = 0, combiner = 0;
    if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS)
        return Status::err_type;
    if (combiner == MPI_COMBINER_NAMED) return Status::err_type;  // MPI_LB, MPI_UB, or unknown

    Status s = cache_setup();
    if (s != Status::ok) return s;
    void *cached = nullptr;
    int found = 0;
    if (PMPI_Type_get_attr(type, type_keyval, &cached, &found) != MPI_SUCCESS)
        return Status::err_type;
    if (found) {
        *result = static_cast<const TypeLayout *>(cached);
        return Status::ok;
    }
    // Only committed types are ever cached, so the check runs once per type.
    int pack_size = 0;
    if (PMPI_Pack_size(1, type, probe_comm, &pack_size) != MPI_SUCCESS) return Status::err_type;

    auto layout = std::make_unique<TypeLayout>();
    s = build_layout(type, *layout);
    if (s != Status::ok) return s;
    if (PMPI_Type_set_attr(type, type_keyval, layout.get()) != MPI_SUCCESS)
        return Status::err_other;
    *result = layout.release();  // owned by the attribute from now on
    return Status::ok;
}

}  // namespace

Status type_layout_find(MPI_Datatype type, const TypeLayout **layout) {
    try {
        return layout_get(type, layout);
    } catch (const std::bad_alloc &) {
        return Status::err_no_memory;
    } catch (...) {
        return Status::err_other;
    }
}

void type_pack(const TypeLayout &layout, const void *buffer, std::size_t count, void *packed) {
    const auto *source = static_cast<const unsigned char *>(buffer);
    auto *destination = static_cast<unsigned char *>(packed);
    type_for_each_segment(layout, count, [&](std::int64_t offset, std::size_t length) {
        std::memcpy(destination, source + offset, length);
        destination += length;
    });
}

void type_unpack(const TypeLayout &layout, const void *packed, void *buffer, std::size_t count) {
    const auto *source = static_cast<const unsigned char *>(packed);
    auto *destination = static_cast<unsigned char *>(buffer);
    type_for_each_segment(layout, count, [&](std::int64_t offset, std::size_t length) {
        std::memcpy(destination + offset, source, length);
        source += length;
    });
}

}  // namespace nbrma::engine
