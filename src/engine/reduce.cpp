#include "engine/reduce.hpp"

#include <complex>
#include <cstdint>
#include <cstring>
#include <new>
#include <tuple>
#include <type_traits>
#include <unordered_map>

namespace nbrma::engine {

namespace {

enum class OpKind : std::uint8_t {
    max,
    min,
    sum,
    prod,
    land,
    lor,
    lxor,
    band,
    bor,
    bxor,
    maxloc,
    minloc,
    replace,
    no_op,
    invalid
};

// MPI_Op is an int handle in MPICH, but the values are not contiguous; an if-chain
// keeps this independent of them.
OpKind op_kind(MPI_Op op) {
    if (op == MPI_SUM) return OpKind::sum;
    if (op == MPI_REPLACE) return OpKind::replace;
    if (op == MPI_NO_OP) return OpKind::no_op;
    if (op == MPI_MAX) return OpKind::max;
    if (op == MPI_MIN) return OpKind::min;
    if (op == MPI_PROD) return OpKind::prod;
    if (op == MPI_BAND) return OpKind::band;
    if (op == MPI_BOR) return OpKind::bor;
    if (op == MPI_BXOR) return OpKind::bxor;
    if (op == MPI_LAND) return OpKind::land;
    if (op == MPI_LOR) return OpKind::lor;
    if (op == MPI_LXOR) return OpKind::lxor;
    if (op == MPI_MAXLOC) return OpKind::maxloc;
    if (op == MPI_MINLOC) return OpKind::minloc;
    return OpKind::invalid;
}

// The type classes of MPI-4.0 §6.9.2 ("multi" = MPI_AINT/OFFSET/COUNT; "other" =
// predefined types no reduction accepts, such as MPI_WCHAR and MPI_PACKED). MPI_CHAR
// counts as a C integer (a signed 8-bit one), as MPICH and Open MPI treat it, and so
// does Fortran's MPI_CHARACTER, as MPICH does.
enum class Class : std::uint8_t {
    c_integer,
    f_integer,
    floating,
    complex,
    logical,
    byte,
    multi,
    pair,
    other
};

bool allowed(OpKind op, Class c) {
    switch (op) {
        case OpKind::max:
        case OpKind::min:
            return c == Class::c_integer || c == Class::f_integer || c == Class::floating ||
                   c == Class::multi;
        case OpKind::sum:
        case OpKind::prod:
            return c == Class::c_integer || c == Class::f_integer || c == Class::floating ||
                   c == Class::complex || c == Class::multi;
        case OpKind::land:
        case OpKind::lor:
        case OpKind::lxor:
            return c == Class::c_integer || c == Class::logical;
        case OpKind::band:
        case OpKind::bor:
        case OpKind::bxor:
            return c == Class::c_integer || c == Class::f_integer || c == Class::byte ||
                   c == Class::multi;
        case OpKind::maxloc:
        case OpKind::minloc:
            return c == Class::pair;
        case OpKind::replace:
        case OpKind::no_op:
            return true;
        case OpKind::invalid:
            break;
    }
    return false;
}

// ------------------------------------------------------------------ element kernels

// Storage tags: a logical stored as S (0 = false), and a {value, index} pair.
template <class S>
struct Logical {};
template <class V, class I>
struct Pair {};

template <class T>
struct Traits {
    static constexpr std::size_t size = sizeof(T);
};
template <class S>
struct Traits<Logical<S>> {
    static constexpr std::size_t size = sizeof(S);
};
template <class V, class I>
struct Traits<Pair<V, I>> {
    static constexpr std::size_t size = sizeof(V) + sizeof(I);
};

template <class T>
struct is_complex : std::false_type {};
template <class F>
struct is_complex<std::complex<F>> : std::true_type {};

// The kernel of `each` for buffers that do not overlap: written so that the compiler
// turns it into vector code (no aliasing to check; the cost model of -O2, "very cheap",
// vectorizes no loop whose count is unknown), which a bulk accumulate into mapped
// memory needs to run at memory speed.
#pragma GCC push_options
#pragma GCC optimize("vect-cost-model=cheap")
template <class T, class F>
[[gnu::always_inline]] inline void each_disjoint_loop(const unsigned char *__restrict origin,
                                                      unsigned char *__restrict target,
                                                      std::size_t count, F f) {
    for (std::size_t i = 0; i < count; ++i) {
        T a, b;
        std::memcpy(&a, origin + i * sizeof(T), sizeof(T));
        std::memcpy(&b, target + i * sizeof(T), sizeof(T));
        b = f(a, b);
        std::memcpy(target + i * sizeof(T), &b, sizeof(T));
    }
}
template <class T, class F>
void each_disjoint(const unsigned char *__restrict origin, unsigned char *__restrict target,
                   std::size_t count, F f) {
    each_disjoint_loop<T>(origin, target, count, f);
}
// The same loop compiled for AVX2 as well (x86-64): where the CPU has it, a reduction of
// cache-resident data (Global Arrays' blocks of a few KiB) runs twice as many elements an
// instruction as with the SSE2 every x86-64 has. Chosen at run time (avx2()).
#if defined(__x86_64__)
template <class T, class F>
__attribute__((target("avx2"))) void each_disjoint_avx2(const unsigned char *__restrict origin,
                                                        unsigned char *__restrict target,
                                                        std::size_t count, F f) {
    each_disjoint_loop<T>(origin, target, count, f);
}
bool avx2() {
    static const bool has = __builtin_cpu_supports("avx2");
    return has;
}
#endif
#pragma GCC pop_options

// Elements are copied in and out with memcpy: packed buffers (pair types, network
// buffers) need not be aligned.
template <class T, class F>
void each(const unsigned char *origin, unsigned char *target, std::size_t count, F f) {
    const std::size_t bytes = count * sizeof(T);
    const auto o = reinterpret_cast<std::uintptr_t>(origin);
    const auto t = reinterpret_cast<std::uintptr_t>(target);
    if (o + bytes <= t || t + bytes <= o) {
#if defined(__x86_64__)
        if (count >= 16 && avx2()) return each_disjoint_avx2<T>(origin, target, count, f);
#endif
        return each_disjoint<T>(origin, target, count, f);
    }
    for (std::size_t i = 0; i < count; ++i, origin += sizeof(T), target += sizeof(T)) {
        T a, b;
        std::memcpy(&a, origin, sizeof(T));
        std::memcpy(&b, target, sizeof(T));
        b = f(a, b);
        std::memcpy(target, &b, sizeof(T));
    }
}

using ApplyFn = void (*)(OpKind, const unsigned char *, unsigned char *, std::size_t);

// Only reached with combinations reduce_check accepted; the others are compiled out.
template <class T>
void apply(OpKind op, const unsigned char *o, unsigned char *t, std::size_t n) {
    if constexpr (std::is_integral_v<T>) {
        // Signed overflow is undefined in C++; MPI expects two's complement wrap-around.
        using W = unsigned long long;
        switch (op) {
            case OpKind::max:
                return each<T>(o, t, n, [](T a, T b) { return a > b ? a : b; });
            case OpKind::min:
                return each<T>(o, t, n, [](T a, T b) { return a < b ? a : b; });
            case OpKind::sum:
                return each<T>(o, t, n, [](T a, T b) { return static_cast<T>(W(a) + W(b)); });
            case OpKind::prod:
                return each<T>(o, t, n, [](T a, T b) { return static_cast<T>(W(a) * W(b)); });
            case OpKind::land:
                return each<T>(o, t, n, [](T a, T b) { return static_cast<T>(a != 0 && b != 0); });
            case OpKind::lor:
                return each<T>(o, t, n, [](T a, T b) { return static_cast<T>(a != 0 || b != 0); });
            case OpKind::lxor:
                return each<T>(o, t, n,
                               [](T a, T b) { return static_cast<T>((a != 0) != (b != 0)); });
            case OpKind::band:
                return each<T>(o, t, n, [](T a, T b) { return static_cast<T>(a & b); });
            case OpKind::bor:
                return each<T>(o, t, n, [](T a, T b) { return static_cast<T>(a | b); });
            case OpKind::bxor:
                return each<T>(o, t, n, [](T a, T b) { return static_cast<T>(a ^ b); });
            default:
                return;
        }
    } else if constexpr (std::is_floating_point_v<T>) {
        switch (op) {
            case OpKind::max:
                return each<T>(o, t, n, [](T a, T b) { return a > b ? a : b; });
            case OpKind::min:
                return each<T>(o, t, n, [](T a, T b) { return a < b ? a : b; });
            case OpKind::sum:
                return each<T>(o, t, n, [](T a, T b) { return a + b; });
            case OpKind::prod:
                return each<T>(o, t, n, [](T a, T b) { return a * b; });
            default:
                return;
        }
    } else {
        static_assert(is_complex<T>::value, "unexpected element type");
        switch (op) {
            case OpKind::sum:
                return each<T>(o, t, n, [](T a, T b) { return a + b; });
            case OpKind::prod:
                return each<T>(o, t, n, [](T a, T b) { return a * b; });
            default:
                return;
        }
    }
}

template <class S>
void apply_logical(OpKind op, const unsigned char *o, unsigned char *t, std::size_t n) {
    switch (op) {
        case OpKind::land:
            return each<S>(o, t, n, [](S a, S b) { return static_cast<S>(a != 0 && b != 0); });
        case OpKind::lor:
            return each<S>(o, t, n, [](S a, S b) { return static_cast<S>(a != 0 || b != 0); });
        case OpKind::lxor:
            return each<S>(o, t, n, [](S a, S b) { return static_cast<S>((a != 0) != (b != 0)); });
        default:
            return;
    }
}

// MPI's MAXLOC/MINLOC: the winning value with its index; on a tie the smaller index.
template <class V, class I>
void apply_pair(OpKind op, const unsigned char *o, unsigned char *t, std::size_t n) {
    const bool max = op == OpKind::maxloc;
    for (std::size_t k = 0; k < n; ++k, o += sizeof(V) + sizeof(I), t += sizeof(V) + sizeof(I)) {
        V u, v;
        I i, j;
        std::memcpy(&u, o, sizeof(V));
        std::memcpy(&i, o + sizeof(V), sizeof(I));
        std::memcpy(&v, t, sizeof(V));
        std::memcpy(&j, t + sizeof(V), sizeof(I));
        if (u == v) {
            if (i < j) std::memcpy(t + sizeof(V), &i, sizeof(I));
        } else if (max ? u > v : u < v) {
            std::memcpy(t, &u, sizeof(V));
            std::memcpy(t + sizeof(V), &i, sizeof(I));
        }
    }
}

// Integer kernels are instantiated per width and signedness (long and long long share
// one), so that types with the same representation share one kernel: see reduce_same_basic.
template <class T>
using FixedWidth =
    std::tuple_element_t<2 * (sizeof(T) == 2   ? 1
                              : sizeof(T) == 4 ? 2
                              : sizeof(T) == 8 ? 3
                                               : 0) +
                             std::is_signed_v<T>,
                         std::tuple<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t,
                                    std::uint32_t, std::int32_t, std::uint64_t, std::int64_t>>;

template <class T>
constexpr ApplyFn kernel() {
    if constexpr (std::is_integral_v<T>)
        return &apply<FixedWidth<T>>;
    else
        return &apply<T>;
}
template <>
constexpr ApplyFn kernel<Logical<std::uint8_t>>() {
    return &apply_logical<std::uint8_t>;
}
template <>
constexpr ApplyFn kernel<Logical<std::int32_t>>() {
    return &apply_logical<std::int32_t>;
}
template <class V, class I>
constexpr ApplyFn pair_kernel() {
    return &apply_pair<V, I>;
}

// ------------------------------------------------------------------ type table

struct TypeInfo {
    Class cls;
    ApplyFn fn;        // null: only MPI_REPLACE/MPI_NO_OP can be computed
    std::size_t size;  // MPI_Type_size
};

struct Entry {
    MPI_Datatype type;
    Class cls;
    ApplyFn fn;
    std::size_t c_size;  // what fn assumes per element; 0 for opaque types
};

template <class T>
constexpr Entry entry(MPI_Datatype type, Class cls) {
    return Entry{type, cls, kernel<T>(), Traits<T>::size};
}
template <class V, class I>
constexpr Entry pair_entry(MPI_Datatype type) {
    return Entry{type, Class::pair, pair_kernel<V, I>(), Traits<Pair<V, I>>::size};
}
constexpr Entry opaque(MPI_Datatype type, Class cls) { return Entry{type, cls, nullptr, 0}; }

using Table = std::unordered_map<MPI_Datatype, TypeInfo>;

const Table &table() {
    static const Table t = [] {
        using L8 = Logical<std::uint8_t>;
        using L32 = Logical<std::int32_t>;
        const Entry entries[] = {
            entry<signed char>(MPI_SIGNED_CHAR, Class::c_integer),
            entry<signed char>(MPI_CHAR, Class::c_integer),
            entry<signed char>(MPI_CHARACTER, Class::c_integer),
            entry<unsigned char>(MPI_UNSIGNED_CHAR, Class::c_integer),
            entry<short>(MPI_SHORT, Class::c_integer),
            entry<unsigned short>(MPI_UNSIGNED_SHORT, Class::c_integer),
            entry<int>(MPI_INT, Class::c_integer),
            entry<unsigned>(MPI_UNSIGNED, Class::c_integer),
            entry<long>(MPI_LONG, Class::c_integer),
            entry<unsigned long>(MPI_UNSIGNED_LONG, Class::c_integer),
            entry<long long>(MPI_LONG_LONG_INT, Class::c_integer),
            entry<unsigned long long>(MPI_UNSIGNED_LONG_LONG, Class::c_integer),
            entry<std::int8_t>(MPI_INT8_T, Class::c_integer),
            entry<std::int16_t>(MPI_INT16_T, Class::c_integer),
            entry<std::int32_t>(MPI_INT32_T, Class::c_integer),
            entry<std::int64_t>(MPI_INT64_T, Class::c_integer),
            entry<std::uint8_t>(MPI_UINT8_T, Class::c_integer),
            entry<std::uint16_t>(MPI_UINT16_T, Class::c_integer),
            entry<std::uint32_t>(MPI_UINT32_T, Class::c_integer),
            entry<std::uint64_t>(MPI_UINT64_T, Class::c_integer),
            entry<std::int32_t>(MPI_INTEGER, Class::f_integer),
            entry<std::int8_t>(MPI_INTEGER1, Class::f_integer),
            entry<std::int16_t>(MPI_INTEGER2, Class::f_integer),
            entry<std::int32_t>(MPI_INTEGER4, Class::f_integer),
            entry<std::int64_t>(MPI_INTEGER8, Class::f_integer),
            entry<float>(MPI_FLOAT, Class::floating),
            entry<double>(MPI_DOUBLE, Class::floating),
            entry<long double>(MPI_LONG_DOUBLE, Class::floating),
            entry<float>(MPI_REAL, Class::floating),
            entry<double>(MPI_DOUBLE_PRECISION, Class::floating),
            entry<float>(MPI_REAL4, Class::floating),
            entry<double>(MPI_REAL8, Class::floating),
            // Fortran REAL*16 is IEEE quad, not x86 long double; no portable C++ type.
            opaque(MPI_REAL16, Class::floating),
#ifdef MPIX_C_FLOAT16
            opaque(MPIX_C_FLOAT16, Class::floating),
#endif
            entry<std::complex<float>>(MPI_C_FLOAT_COMPLEX, Class::complex),
            entry<std::complex<double>>(MPI_C_DOUBLE_COMPLEX, Class::complex),
            entry<std::complex<long double>>(MPI_C_LONG_DOUBLE_COMPLEX, Class::complex),
            entry<std::complex<float>>(MPI_CXX_FLOAT_COMPLEX, Class::complex),
            entry<std::complex<double>>(MPI_CXX_DOUBLE_COMPLEX, Class::complex),
            entry<std::complex<long double>>(MPI_CXX_LONG_DOUBLE_COMPLEX, Class::complex),
            entry<std::complex<float>>(MPI_COMPLEX, Class::complex),
            entry<std::complex<double>>(MPI_DOUBLE_COMPLEX, Class::complex),
            entry<std::complex<float>>(MPI_COMPLEX8, Class::complex),
            entry<std::complex<double>>(MPI_COMPLEX16, Class::complex),
            opaque(MPI_COMPLEX32, Class::complex),
            entry<L8>(MPI_C_BOOL, Class::logical),
            entry<L8>(MPI_CXX_BOOL, Class::logical),
            entry<L32>(MPI_LOGICAL, Class::logical),
            entry<unsigned char>(MPI_BYTE, Class::byte),
            entry<MPI_Aint>(MPI_AINT, Class::multi),
            entry<MPI_Offset>(MPI_OFFSET, Class::multi),
            entry<MPI_Count>(MPI_COUNT, Class::multi),
            pair_entry<float, int>(MPI_FLOAT_INT),
            pair_entry<double, int>(MPI_DOUBLE_INT),
            pair_entry<long, int>(MPI_LONG_INT),
            pair_entry<short, int>(MPI_SHORT_INT),
            pair_entry<long double, int>(MPI_LONG_DOUBLE_INT),
            pair_entry<int, int>(MPI_2INT),
            pair_entry<std::int32_t, std::int32_t>(MPI_2INTEGER),
            pair_entry<float, float>(MPI_2REAL),
            pair_entry<double, double>(MPI_2DOUBLE_PRECISION),
            opaque(MPI_WCHAR, Class::other),
            opaque(MPI_PACKED, Class::other),
        };
        Table table;
        for (const Entry &e : entries) {
            MPI_Count size = 0;
            // Types MPICH does not provide (Fortran ones in a C-only build) are
            // MPI_DATATYPE_NULL or report no size.
            if (e.type == MPI_DATATYPE_NULL || table.count(e.type) != 0) continue;
            if (PMPI_Type_size_x(e.type, &size) != MPI_SUCCESS || size <= 0) continue;
            // A kernel whose C type disagrees with MPICH's size would corrupt memory;
            // such a type degrades to replace-only.
            const ApplyFn fn = static_cast<std::size_t>(size) == e.c_size ? e.fn : nullptr;
            table.emplace(e.type, TypeInfo{e.cls, fn, static_cast<std::size_t>(size)});
        }
        return table;
    }();
    return t;
}

// The table never changes once built, so each thread may remember its last answer (an
// accumulate asks for the same type several times per call).
const TypeInfo *type_info(MPI_Datatype type) {
    thread_local MPI_Datatype last_type = MPI_DATATYPE_NULL;
    thread_local const TypeInfo *last_info = nullptr;
    if (type == last_type && last_info) return last_info;
    const Table &t = table();
    auto it = t.find(type);
    if (it == t.end()) return nullptr;
    last_type = type;
    last_info = &it->second;
    return last_info;
}

// The integer classes differ only in which ops MPI allows; the bits are the same.
Class family(Class c) { return c == Class::f_integer || c == Class::multi ? Class::c_integer : c; }

Status check(OpKind op, const TypeInfo *info) {
    if (op == OpKind::invalid) return Status::err_op;
    if (info == nullptr) return Status::err_type;
    if (!allowed(op, info->cls)) return Status::err_op;
    if (info->fn == nullptr && op != OpKind::replace && op != OpKind::no_op)
        return Status::err_unsupported;
    return Status::ok;
}

}  // namespace

Status reduce_check(MPI_Op op, MPI_Datatype basic) {
    try {
        return check(op_kind(op), type_info(basic));
    } catch (...) {
        return Status::err_no_memory;  // only the table's first-use allocation can throw
    }
}

Status reduce_apply(MPI_Op op, MPI_Datatype basic, const void *origin, void *target,
                    std::size_t count) {
    try {
        const OpKind kind = op_kind(op);
        const TypeInfo *info = type_info(basic);
        Status s = check(kind, info);
        if (s != Status::ok || count == 0 || kind == OpKind::no_op) return s;
        if (origin == nullptr || target == nullptr) return Status::err_arg;
        if (kind == OpKind::replace) {
            std::memmove(target, origin, count * info->size);
            return Status::ok;
        }
        info->fn(kind, static_cast<const unsigned char *>(origin),
                 static_cast<unsigned char *>(target), count);
        return Status::ok;
    } catch (...) {
        return Status::err_no_memory;
    }
}

bool reduce_kernel(MPI_Op op, MPI_Datatype basic, ReduceKernel *kernel) {
    try {
        const OpKind kind = op_kind(op);
        const TypeInfo *info = type_info(basic);
        if (check(kind, info) != Status::ok || kind == OpKind::replace || kind == OpKind::no_op)
            return false;
        kernel->entry = info;
        kernel->op = static_cast<std::uint8_t>(kind);
        return true;
    } catch (...) {
        return false;
    }
}

void reduce_run(const ReduceKernel &kernel, const void *origin, void *target, std::size_t count) {
    static_cast<const TypeInfo *>(kernel.entry)
        ->fn(static_cast<OpKind>(kernel.op), static_cast<const unsigned char *>(origin),
             static_cast<unsigned char *>(target), count);
}

bool reduce_same_basic(MPI_Datatype a, MPI_Datatype b) {
    if (a == b) return true;
    try {
        const TypeInfo *x = type_info(a), *y = type_info(b);
        return x != nullptr && y != nullptr && x->fn != nullptr && x->fn == y->fn &&
               x->size == y->size && family(x->cls) == family(y->cls);
    } catch (...) {
        return false;
    }
}

Status reduce_check_op(MPI_Op op) {
    return op_kind(op) == OpKind::invalid ? Status::err_op : Status::ok;
}

Status reduce_check_compare_swap(MPI_Datatype basic) {
    try {
        const TypeInfo *info = type_info(basic);
        if (info == nullptr) return Status::err_type;
        switch (info->cls) {
            case Class::c_integer:
            case Class::f_integer:
            case Class::logical:
            case Class::byte:
            case Class::multi:
                return Status::ok;
            default:
                return Status::err_type;
        }
    } catch (...) {
        return Status::err_no_memory;
    }
}

bool reduce_by_compare_swap(MPI_Op op, MPI_Datatype basic) {
    try {
        const TypeInfo *info = type_info(basic);
        if (check(op_kind(op), info) != Status::ok) return false;
        const bool word = info->size == 8 || info->size == 4 || info->size == 2 || info->size == 1;
        return word && info->cls != Class::pair && info->cls != Class::other;
    } catch (...) {
        return false;
    }
}

bool reduce_as_atomic(MPI_Op op, MPI_Datatype basic, transport::AtomicOp *atomic_op,
                      bool *operand_zero) {
    try {
        const OpKind kind = op_kind(op);
        const TypeInfo *info = type_info(basic);
        if (check(kind, info) != Status::ok) return false;
        // Two's complement add and the bitwise ops are the same on signed and unsigned
        // words, so every integer type of 8, 4, 2 or 1 bytes maps to the transport's
        // unsigned atomics of its width.
        const bool integer = info->cls == Class::c_integer || info->cls == Class::f_integer ||
                             info->cls == Class::multi;
        const bool word = info->size == 8 || info->size == 4 || info->size == 2 || info->size == 1;
        if (!integer || !word || info->fn == nullptr) return false;
        transport::AtomicOp mapped;
        switch (kind) {
            case OpKind::sum:
            case OpKind::no_op:
                mapped = transport::AtomicOp::fetch_add;
                break;
            case OpKind::band:
                mapped = transport::AtomicOp::fetch_and;
                break;
            case OpKind::bor:
                mapped = transport::AtomicOp::fetch_or;
                break;
            case OpKind::bxor:
                mapped = transport::AtomicOp::fetch_xor;
                break;
            case OpKind::replace:
                mapped = transport::AtomicOp::swap;
                break;
            default:
                return false;
        }
        if (atomic_op != nullptr) *atomic_op = mapped;
        if (operand_zero != nullptr) *operand_zero = kind == OpKind::no_op;
        return true;
    } catch (...) {
        return false;
    }
}

}  // namespace nbrma::engine
