// Flattened views of MPI datatypes: the engine moves bytes, so every origin and
// target datatype is turned once into a list of (offset, length) byte segments plus
// the facts accumulate needs (the one basic type, its size). Layouts of predefined
// types come from a static table; layouts of derived types are cached on the type
// itself through an MPI attribute, so they die with the type and a handle value
// reused after MPI_Type_free can never hit a stale entry.
//
// Layouts are immutable once returned and stay valid until the datatype is freed
// (predefined ones: until MPI_Finalize). Not thread safe.
#ifndef NBRMA_ENGINE_DATATYPE_HPP
#define NBRMA_ENGINE_DATATYPE_HPP

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/status.hpp"

namespace nbrma::engine {

struct TypeSegment {
    std::int64_t offset;  // bytes, relative to the buffer address (may be negative)
    std::size_t length;   // bytes, never 0
};

struct TypeLayout {
    // ONE element of the type, in typemap order, adjacent segments merged.
    std::vector<TypeSegment> segments;
    std::size_t size;  // bytes of data in one element (MPI_Type_size)
    MPI_Aint extent;   // MPI_Type_get_extent (may be negative)
    // MPI_Type_get_true_extent, taken from `segments` (the lowest and the highest byte
    // of data, exactly the bytes the engine moves); 0, 0 when there is no data.
    MPI_Aint true_lb, true_extent;
    // The single predefined type every leaf uses (a pair type such as MPI_DOUBLE_INT
    // counts as one basic type); MPI_DATATYPE_NULL if leaves mix types or there are
    // no leaves at all.
    MPI_Datatype basic;
    // MPI_Type_size(basic), 0 if there is no single basic type. For pair types this
    // is the packed size (MPI_SHORT_INT: 6), which is also the element stride that
    // reduce_apply expects.
    std::size_t basic_size;
    // One segment at offset 0 whose length == extent == size: `count` elements are
    // then simply count*size bytes at the buffer address.
    bool contiguous;
};

// The lookup behind type_layout_get.
[[nodiscard]] Status type_layout_find(MPI_Datatype type, const TypeLayout **layout);

namespace detail {
// The predefined type type_layout_find found last on this thread. One RMA call asks for
// the same predefined type several times (check, range, execute); this answers those
// without a call, and answers a shared section (threads.hpp), which may not look
// further. Predefined layouts live as long as the process; derived handles may be freed
// and reused, so they are never remembered here.
__attribute__((visibility("hidden"),
               tls_model("initial-exec"))) inline thread_local MPI_Datatype last_predefined_type =
    MPI_DATATYPE_NULL;
__attribute__((
    visibility("hidden"),
    tls_model("initial-exec"))) inline thread_local const TypeLayout *last_predefined_layout =
    nullptr;
}  // namespace detail

// type_layout_get's answer when this thread looked `type` up last (a predefined type),
// else false: what a shared section may ask.
[[nodiscard]] inline bool type_layout_cached(MPI_Datatype type, const TypeLayout **layout) {
    if (type != detail::last_predefined_type || !detail::last_predefined_layout) return false;
    *layout = detail::last_predefined_layout;
    return true;
}

// err_type for MPI_DATATYPE_NULL, uncommitted derived types and types with no
// defined layout (MPI_LB, MPI_UB on their own); err_unsupported for Fortran 90
// parameterized types; err_no_memory if flattening ran out of memory.
[[nodiscard]] inline Status type_layout_get(MPI_Datatype type, const TypeLayout **layout) {
    if (type == detail::last_predefined_type && detail::last_predefined_layout) {
        *layout = detail::last_predefined_layout;
        return Status::ok;
    }
    return type_layout_find(type, layout);
}

// Bytes of data in `count` elements: false if negative or beyond MPI_Count (int64).
[[nodiscard]] inline bool type_data_bytes(const TypeLayout &layout, MPI_Aint count,
                                          std::size_t *bytes) {
    std::int64_t product = 0;
    if (count < 0 ||
        __builtin_mul_overflow(static_cast<std::int64_t>(layout.size), count, &product))
        return false;
    *bytes = static_cast<std::size_t>(product);
    return true;
}

// The bytes `count` elements reach, relative to the buffer address: [*low, *high),
// from the true bounds (element i covers [i*extent + true_lb, i*extent + true_ub), so
// the lowest byte is in the first or the last element, and so is the highest). Both 0
// when there is no data; false if a bound does not fit in 64 bits.
[[nodiscard]] inline bool type_span(const TypeLayout &layout, MPI_Aint count, std::int64_t *low,
                                    std::int64_t *high) {
    *low = *high = 0;
    if (count <= 0 || layout.size == 0) return true;
    std::int64_t stretch = 0, true_ub = 0;
    return !__builtin_mul_overflow(count - 1, layout.extent, &stretch) &&
           !__builtin_add_overflow(layout.true_lb, layout.true_extent, &true_ub) &&
           !__builtin_add_overflow(layout.true_lb, stretch < 0 ? stretch : 0, low) &&
           !__builtin_add_overflow(true_ub, stretch > 0 ? stretch : 0, high);
}

// Calls f(offset, length) for every merged segment of `count` elements (element i
// shifted by i*extent), in typemap order. Segments that touch across an element
// boundary are merged too, so contiguous data always comes out as one call. If f
// returns bool, false stops the walk (and type_for_each_segment returns false).
// Offsets must be representable: callers walk only spans type_span accepted (checked
// against the window by Window::check_range for targets, by Operation::check for the
// origin and result buffers).
template <class F>
bool type_for_each_segment(const TypeLayout &layout, std::size_t count, F &&f) {
    auto emit = [&f](std::int64_t offset, std::size_t length) {
        if constexpr (std::is_same_v<decltype(f(offset, length)), bool>) {
            return f(offset, length);
        } else {
            f(offset, length);
            return true;
        }
    };
    if (count == 0 || layout.segments.empty()) return true;
    if (layout.contiguous) return emit(std::int64_t{0}, count * layout.size);
    std::int64_t pending_offset = 0;
    std::size_t pending_length = 0;
    for (std::size_t i = 0; i < count; ++i) {
        const std::int64_t shift =
            static_cast<std::int64_t>(i) * static_cast<std::int64_t>(layout.extent);
        for (const TypeSegment &segment : layout.segments) {
            const std::int64_t offset = segment.offset + shift;
            if (pending_length != 0 &&
                pending_offset + static_cast<std::int64_t>(pending_length) == offset) {
                pending_length += segment.length;
                continue;
            }
            if (pending_length != 0 && !emit(pending_offset, pending_length)) return false;
            pending_offset = offset;
            pending_length = segment.length;
        }
    }
    return emit(pending_offset, pending_length);
}

// Gather `count` elements at `buffer` into contiguous `packed` (count*size bytes),
// and scatter back. The packed form is the typemap's data in order with no gaps,
// the form reduce_apply works on.
void type_pack(const TypeLayout &layout, const void *buffer, std::size_t count, void *packed);
void type_unpack(const TypeLayout &layout, const void *packed, void *buffer, std::size_t count);

}  // namespace nbrma::engine

#endif
