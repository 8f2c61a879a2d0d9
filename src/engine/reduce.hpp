// Element-wise reduction for MPI_Accumulate / MPI_Get_accumulate / MPI_Fetch_and_op:
// which predefined op may be applied to which predefined type (MPI-4.0 §6.9.2), the
// reduction itself, and the cases a single 64-bit transport atomic can perform.
//
// Buffers hold elements in packed form: element i of `basic` starts at byte
// i * MPI_Type_size(basic) and may be unaligned. For plain types that is the native
// array layout. Pair types (MPI_DOUBLE_INT, ...) are {value, index} with no padding,
// i.e. what type_pack produces, not the padded C struct; note that a segment of an
// MPI_SHORT_INT layout can split a pair, so such data must be packed first.
#ifndef NBRMA_ENGINE_REDUCE_HPP
#define NBRMA_ENGINE_REDUCE_HPP

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "common/status.hpp"
#include "transport/transport.hpp"

namespace nbrma::engine {

// target[i] = origin[i] (op) target[i] for `count` elements of predefined `basic`
// type. MPI_REPLACE: target = origin. MPI_NO_OP: nothing. Validates like
// reduce_check; origin and target must not overlap partially.
[[nodiscard]] Status reduce_apply(MPI_Op op, MPI_Datatype basic, const void *origin, void *target,
                                  std::size_t count);

// The kernel reduce_apply runs for `op` on `basic`, for a caller that applies one shape
// many times (the at-once path keeps it with the window's last atomic shape): what
// reduce_apply does, without looking the op and the type up again.
struct ReduceKernel {
    const void *entry = nullptr;  // the type's entry in reduce.cpp's table
    std::uint8_t op = 0;
};
// False where reduce_apply would refuse the pair, and for MPI_REPLACE and MPI_NO_OP (no
// arithmetic).
[[nodiscard]] bool reduce_kernel(MPI_Op op, MPI_Datatype basic, ReduceKernel *kernel);
// reduce_apply's arithmetic with a kernel reduce_kernel gave.
void reduce_run(const ReduceKernel &kernel, const void *origin, void *target, std::size_t count);

// MPI's rules for which predefined op goes with which type class (MPI_CHAR and
// Fortran's MPI_CHARACTER count as a signed 8-bit C integer, as in MPICH):
//   MPI_MAX/MIN: C integer, Fortran integer, floating point, MPI_AINT/OFFSET/COUNT
//   MPI_SUM/PROD: the above plus complex
//   MPI_LAND/LOR/LXOR: C integer, logical (MPI_C_BOOL, MPI_CXX_BOOL, MPI_LOGICAL)
//   MPI_BAND/BOR/BXOR: C integer, Fortran integer, MPI_BYTE, MPI_AINT/OFFSET/COUNT
//   MPI_MAXLOC/MINLOC: pair types only
//   MPI_REPLACE/NO_OP: any predefined type
// err_op for user-defined ops (MPI forbids them in RMA), MPI_OP_NULL and mismatches;
// err_type when `basic` is not a predefined type (e.g. MPI_DATATYPE_NULL from a mixed
// layout); err_unsupported for valid combinations we cannot compute in C++ (e.g.
// MPI_REAL16, MPI_COMPLEX32, MPIX_C_FLOAT16 arithmetic).
[[nodiscard]] Status reduce_check(MPI_Op op, MPI_Datatype basic);

// Whether accumulate may combine data of basic type `a` with data of basic type `b`.
// MPI wants the same basic type on every side; two handles count as the same when
// they are, or when they are integer types of the same width and signedness (MPI_INT,
// MPI_INT32_T, MPI_INTEGER; MPI_LONG, MPI_LONG_LONG, MPI_INT64_T, MPI_AINT; MPI_CHAR,
// MPI_SIGNED_CHAR, MPI_INT8_T, MPI_CHARACTER) or types with the same C representation
// (MPI_FLOAT and MPI_REAL, MPI_C_BOOL and MPI_CXX_BOOL, MPI_2INT and MPI_2INTEGER),
// which MPICH accepts and programs mix. MPI_INT with MPI_FLOAT or MPI_UNSIGNED, and
// MPI_BYTE with any other type, do not match.
[[nodiscard]] bool reduce_same_basic(MPI_Datatype a, MPI_Datatype b);

// err_op unless `op` is one of the predefined ops RMA accepts (MPI_REPLACE and
// MPI_NO_OP included): the check that remains when a call moves no data.
[[nodiscard]] Status reduce_check_op(MPI_Op op);

// MPI_Compare_and_swap's types (MPI-4.0 §12.3.4): C integer, Fortran integer,
// logical, byte and multi-language (MPI_AINT/OFFSET/COUNT) types; err_type otherwise
// (floating point, complex, pairs, MPI_WCHAR, derived types).
[[nodiscard]] Status reduce_check_compare_swap(MPI_Datatype basic);

// True (and *atomic_op set) when op on `basic` can be one 64-bit (32-bit) network/CPU
// atomic: 8-byte (4-byte) integer types with MPI_SUM (fetch_add), MPI_BAND/BOR/BXOR (fetch_and/or/xor),
// MPI_REPLACE (swap) and MPI_NO_OP (fetch_add whose operand must be 0, reported
// through *operand_zero so the caller ignores the origin value).
bool reduce_as_atomic(MPI_Op op, MPI_Datatype basic, transport::AtomicOp *atomic_op,
                      bool *operand_zero);

// True when op on `basic` can be done element by element with a compare-and-swap of the
// element's width (read it, reduce, swap the result in if the element is unchanged, again
// if not: floating-point sums, MPI_MAX, MPI_PROD, logical ops, ...): every predefined type
// of 8, 4, 2 or 1 bytes but the pairs (MPI_2INT, ...), with an op reduce_check accepts.
// A superset of reduce_as_atomic; with MPI_REPLACE, the types whose compare-and-swap may
// be the transport's.
bool reduce_by_compare_swap(MPI_Op op, MPI_Datatype basic);

}  // namespace nbrma::engine

#endif
