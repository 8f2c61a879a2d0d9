// Flattening MPI datatypes into segments (datatype_flatten.cpp), for the layouts
// datatype.cpp builds and caches. Internal to the engine.
#ifndef NBRMA_ENGINE_DATATYPE_FLATTEN_HPP
#define NBRMA_ENGINE_DATATYPE_FLATTEN_HPP

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "engine/datatype.hpp"

namespace nbrma::engine {

// A type's data while it is flattened: its segments in typemap order, and its leaves.
struct Flat {
    std::vector<TypeSegment> segments;
    MPI_Datatype basic = MPI_DATATYPE_NULL;
    bool any_leaf = false;
    bool mixed = false;
    bool overflow = false;  // an offset did not fit in 64 bits: no usable layout
};

// Appends [offset, offset + length), merged into the last segment where they touch.
inline void append_segment(std::vector<TypeSegment> &segments, std::int64_t offset, std::size_t length) {
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

// What MPI_Type_get_envelope says of a type.
struct Envelope {
    int ints = 0, addresses = 0, types = 0, combiner = 0;
};

// The segments and leaves of `type` (err_type: not a datatype, err_unsupported: a
// Fortran 90 parameterized type or an unknown combiner); overflow in `out` when an
// offset does not fit in 64 bits. The second form takes the envelope the caller read.
Status flatten(MPI_Datatype type, Flat &out);
Status flatten(MPI_Datatype type, const Envelope &envelope, Flat &out);

// The layout of a predefined type, null for any other (datatype.cpp).
const TypeLayout *predefined_layout(MPI_Datatype type);

}  // namespace nbrma::engine

#endif
