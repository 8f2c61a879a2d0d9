// Datatype layouts: the predefined types' table, and the layouts of derived types
// (flattened by datatype_flatten.cpp) cached on the types themselves (an attribute,
// freed with the type or at MPI_Finalize); pack and unpack by layout.
#include "engine/datatype.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "common/copy.hpp"
#include "engine/datatype_flatten.hpp"

namespace nbrma::engine {

namespace {

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

}  // namespace

const TypeLayout *predefined_layout(MPI_Datatype type) {
    const auto &layouts = predefined().layouts;
    auto it = layouts.find(type);
    return it == layouts.end() ? nullptr : &it->second;
}

namespace {

// ------------------------------------------------------------------ cache

int type_keyval = MPI_KEYVAL_INVALID;
int finalize_keyval = MPI_KEYVAL_INVALID;
// MPI offers no query for "is this type committed"; MPI_Pack_size checks it, and on
// a private communicator set to MPI_ERRORS_RETURN the check reports instead of
// aborting through the user's error handler.
MPI_Comm probe_comm = MPI_COMM_NULL;

// The derived types layout_get found last (one RMA call asks for its origin, target and
// result types several times: check, range, execute), so those lookups skip MPICH's
// envelope and attribute calls. Read and written under the engine's lock; forgotten
// whenever any layout is deleted (`deleted` moved on: MPI_Type_free runs delete_layout
// in the application's thread, outside that lock), since a freed handle may come back
// as a new type.
struct Remembered {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    const TypeLayout *layout = nullptr;
};
std::array<Remembered, 4> remembered;
unsigned remembered_next = 0;
std::atomic<std::uint64_t> deleted{0};
std::uint64_t remembered_since = 0;  // `deleted` when `remembered` was last emptied

const TypeLayout *recall(MPI_Datatype type) {
    const std::uint64_t now = deleted.load(std::memory_order_acquire);
    if (now != remembered_since) {
        remembered = {};
        remembered_since = now;
        return nullptr;
    }
    for (const Remembered &r : remembered)
        if (r.type == type) return r.layout;
    return nullptr;
}

void remember(MPI_Datatype type, const TypeLayout *layout) {
    remembered[remembered_next] = {type, layout};
    remembered_next = (remembered_next + 1) % remembered.size();
}

int delete_layout(MPI_Datatype, int, void *attribute, void *);

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

Status build_layout(MPI_Datatype type, const Envelope &envelope, TypeLayout &layout) {
    Flat flat;
    Status s = flatten(type, envelope, flat);
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

// ------------------------------------------------------------------ shapes

// Layouts by content, for types made afresh around every call from predefined ones
// (ARMCI-MPI creates, commits and frees a subarray and a contiguous type around each
// strided put): a new type whose combiner and contents were seen before is given that
// layout, without flattening it or measuring it again. Only types whose children are
// all predefined: their contents describe them whole, where a derived child's handle
// may name another type by the next call. Kept until the process exits (a type's
// attribute points at its shape's layout), up to max_shapes shapes and
// max_shape_segments segments in all; beyond, new shapes get layouts of their own.
// Under their own lock: lookups run under the engine's, but not only.
struct Shape {
    int combiner = 0;
    std::vector<int> ints;
    std::vector<MPI_Aint> addresses;
    std::vector<MPI_Datatype> types;
    bool operator==(const Shape &other) const {
        return combiner == other.combiner && ints == other.ints && addresses == other.addresses &&
               types == other.types;
    }
};

struct ShapeHash {
    std::size_t operator()(const Shape &shape) const {
        std::size_t h = std::hash<int>()(shape.combiner);
        const auto mix = [&h](std::size_t v) {
            h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        };
        for (int v : shape.ints) mix(std::hash<int>()(v));
        for (MPI_Aint v : shape.addresses) mix(std::hash<MPI_Aint>()(v));
        for (MPI_Datatype v : shape.types) mix(std::hash<MPI_Datatype>()(v));
        return h;
    }
};

constexpr std::size_t max_shapes = 256;
constexpr std::size_t max_shape_segments = std::size_t{1} << 20;
std::mutex shapes_lock;
std::unordered_map<Shape, TypeLayout, ShapeHash> shapes;  // never erased from
std::size_t shape_segments = 0;

// A type's attribute: the layout it owns, or (this bit set) its shape's.
constexpr std::uintptr_t shape_owned = 1;
const TypeLayout *attribute_layout(void *attribute) {
    return reinterpret_cast<const TypeLayout *>(reinterpret_cast<std::uintptr_t>(attribute) &
                                                ~shape_owned);
}

// The contents of `type` as a Shape: false where a child is derived (those handles
// freed again, as MPI_Type_get_contents hands them out new) or the call fails.
bool shape_of(MPI_Datatype type, const Envelope &envelope, Shape *shape) {
    shape->combiner = envelope.combiner;
    shape->ints.resize(static_cast<std::size_t>(envelope.ints));
    shape->addresses.resize(static_cast<std::size_t>(envelope.addresses));
    shape->types.resize(static_cast<std::size_t>(envelope.types));
    if (PMPI_Type_get_contents(type, envelope.ints, envelope.addresses, envelope.types,
                               shape->ints.data(), shape->addresses.data(),
                               shape->types.data()) != MPI_SUCCESS)
        return false;
    bool predefined_children = true;
    for (MPI_Datatype &child : shape->types)
        if (!predefined_layout(child)) {
            predefined_children = false;
            (void)PMPI_Type_free(&child);
        }
    return predefined_children;
}

// The layout of `type`'s shape, built now if the shapes have room: *shared null when
// they have none (the caller builds a layout of the type's own).
Status shape_layout(MPI_Datatype type, const Envelope &envelope, const TypeLayout **shared) {
    *shared = nullptr;
    thread_local Shape shape;  // (its vectors keep their storage from one type to the next)
    if (!shape_of(type, envelope, &shape)) return Status::ok;
    {
        std::lock_guard<std::mutex> guard(shapes_lock);
        auto found = shapes.find(shape);
        if (found != shapes.end()) {
            *shared = &found->second;
            return Status::ok;
        }
        if (shapes.size() >= max_shapes) return Status::ok;
    }
    TypeLayout layout;
    Status s = build_layout(type, envelope, layout);
    if (s != Status::ok) return s;
    std::lock_guard<std::mutex> guard(shapes_lock);
    if (shapes.size() >= max_shapes || layout.segments.size() > max_shape_segments - shape_segments)
        return Status::ok;
    shape_segments += layout.segments.size();
    *shared = &shapes.emplace(shape, std::move(layout)).first->second;  // (or another thread's)
    return Status::ok;
}

int delete_layout(MPI_Datatype, int, void *attribute, void *) {
    deleted.fetch_add(1, std::memory_order_acq_rel);
    if (!(reinterpret_cast<std::uintptr_t>(attribute) & shape_owned))
        delete attribute_layout(attribute);
    return MPI_SUCCESS;
}

Status layout_get(MPI_Datatype type, const TypeLayout **result) {
    if (type == MPI_DATATYPE_NULL) return Status::err_type;
    if (const TypeLayout *leaf = predefined_layout(type)) {
        detail::last_predefined_type = type;  // see type_layout_get
        detail::last_predefined_layout = leaf;
        *result = leaf;
        return Status::ok;
    }
    if (const TypeLayout *known = recall(type)) {
        *result = known;
        return Status::ok;
    }
    Envelope envelope;
    if (PMPI_Type_get_envelope(type, &envelope.ints, &envelope.addresses, &envelope.types,
                               &envelope.combiner) != MPI_SUCCESS)
        return Status::err_type;
    if (envelope.combiner == MPI_COMBINER_NAMED)
        return Status::err_type;  // MPI_LB, MPI_UB, or unknown

    Status s = cache_setup();
    if (s != Status::ok) return s;
    void *cached = nullptr;
    int found = 0;
    if (PMPI_Type_get_attr(type, type_keyval, &cached, &found) != MPI_SUCCESS)
        return Status::err_type;
    if (found) {
        *result = attribute_layout(cached);
        remember(type, *result);
        return Status::ok;
    }
    // Only committed types are ever cached, so the check runs once per type.
    int pack_size = 0;
    if (PMPI_Pack_size(1, type, probe_comm, &pack_size) != MPI_SUCCESS) return Status::err_type;

    const TypeLayout *shared = nullptr;
    s = shape_layout(type, envelope, &shared);
    if (s != Status::ok) return s;
    if (shared) {
        void *attribute =
            reinterpret_cast<void *>(reinterpret_cast<std::uintptr_t>(shared) | shape_owned);
        if (PMPI_Type_set_attr(type, type_keyval, attribute) != MPI_SUCCESS)
            return Status::err_other;
        *result = shared;
        remember(type, shared);
        return Status::ok;
    }
    auto layout = std::make_unique<TypeLayout>();
    s = build_layout(type, envelope, *layout);
    if (s != Status::ok) return s;
    if (PMPI_Type_set_attr(type, type_keyval, layout.get()) != MPI_SUCCESS)
        return Status::err_other;
    *result = layout.release();  // owned by the attribute from now on
    remember(type, *result);
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
        copy_bytes(destination, source + offset, length);
        destination += length;
    });
}

void type_unpack(const TypeLayout &layout, const void *packed, void *buffer, std::size_t count) {
    const auto *source = static_cast<const unsigned char *>(packed);
    auto *destination = static_cast<unsigned char *>(buffer);
    type_for_each_segment(layout, count, [&](std::int64_t offset, std::size_t length) {
        copy_bytes(destination + offset, source, length);
        source += length;
    });
}

}  // namespace nbrma::engine
