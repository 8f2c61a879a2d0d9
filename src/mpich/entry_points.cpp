// Resolves nbrma::mpich (src/mpich/entry_points.hpp): MPICH's own definitions of the functions
// nbrma interposes, looked up once when libnbrma is loaded.
//
// They are looked up in MPICH's library itself, not with RTLD_NEXT: the library is found
// from the address of a PMPI_ function nbrma does not define (PMPI_Comm_rank resolves
// to MPICH's), and dlsym on its handle searches only it and its dependencies. That is
// MPICH's definition whatever the load order: libnbrma linked before MPICH, linked after
// libmpichfort, LD_PRELOADed, or loaded with dlopen. A constructor runs after the
// libraries libnbrma depends on (libmpich among them) are relocated and before main,
// any thread or any MPI call, so the pointers are written once, before anything can
// read them, and never change: no lock and no check on the calls.
#include "mpich/entry_points.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace nbrma::mpich {

#define NBRMA_MPICH_DEFINE(name) decltype(&::PMPI_##name) name = nullptr;
NBRMA_MPICH_FUNCTIONS(NBRMA_MPICH_DEFINE)
#undef NBRMA_MPICH_DEFINE
WinGetAttrInternal Win_get_attr_internal = nullptr;

namespace {

[[noreturn]] void resolve_failed(const char *what, const char *detail) {
    std::fprintf(stderr, "nbrma: cannot reach MPICH's %s: %s\n", what, detail ? detail : "");
    std::abort();  // calling nbrma's own PMPI_ instead would recurse forever
}

// The shared object that defines `address`.
const void *object_base(const void *address) {
    Dl_info info{};
    return dladdr(address, &info) ? info.dli_fbase : nullptr;
}

__attribute__((constructor(101))) void resolve() {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void *>(&::PMPI_Comm_rank), &info) || !info.dli_fname)
        resolve_failed("library", "dladdr(PMPI_Comm_rank) failed");
    void *library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!library) resolve_failed(info.dli_fname, dlerror());
    const void *own = object_base(reinterpret_cast<void *>(&resolve));
    // dlsym gives a data pointer; POSIX guarantees it converts to a function pointer.
#define NBRMA_MPICH_RESOLVE(name)                                                           \
    {                                                                                       \
        void *symbol = dlsym(library, "PMPI_" #name);                                       \
        if (!symbol) resolve_failed("PMPI_" #name, dlerror());                              \
        if (object_base(symbol) == own) resolve_failed("PMPI_" #name, "found nbrma's own"); \
        name = reinterpret_cast<decltype(name)>(symbol);                                    \
    }
    NBRMA_MPICH_FUNCTIONS(NBRMA_MPICH_RESOLVE)
#undef NBRMA_MPICH_RESOLVE
    if (void *symbol = dlsym(library, "MPII_Win_get_attr"); symbol && object_base(symbol) != own)
        Win_get_attr_internal = reinterpret_cast<WinGetAttrInternal>(symbol);
    // The handle is kept: MPICH stays loaded as long as libnbrma, which depends on it.
}

}  // namespace

bool process_resolves_to_nbrma() {
    const void *resolved = dlsym(RTLD_DEFAULT, "MPI_Put");
    return resolved && object_base(resolved) == object_base(reinterpret_cast<void *>(&resolve));
}

}  // namespace nbrma::mpich
