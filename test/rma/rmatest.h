/*
 * rmatest.h — tiny shared helpers for the nbrma MPI RMA test programs (test/rma).
 *
 * Style follows MPICH's test/mpi/rma: every program counts its errors, rank 0 prints
 * exactly "No Errors" on success, or "Found N errors", and exits nonzero on error.
 *
 * Build with -DNO_NBRMA to run a program against plain MPICH (no libnbrma): the MPIX_
 * nonblocking synchronization calls are then mapped onto their blocking twins, and the
 * introspection calls report "not active". This is only for checking the tests
 * themselves; the suite proper links libnbrma. The stand-ins block like their twins, so
 * a program that opens epochs ahead of their partners (an exposure posted and waited for
 * before the origin starts) must order its calls differently under NO_NBRMA.
 */
#ifndef RMATEST_H
#define RMATEST_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MPICH's MPI_STATUS(ES)_IGNORE are small non-NULL constants that recent GCC mistakes
 * for zero-sized arrays passed to MPI_Waitall & co. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#ifndef NO_NBRMA
#include "nbrma.h"
#else
/* ---- plain-MPICH stand-ins (only for checking the tests themselves) ---- */
static inline int rt_req_null_(MPI_Request *r, int rc)
{
    if (r == NULL)
        return MPI_ERR_REQUEST;
    *r = MPI_REQUEST_NULL;
    return rc;
}
#define MPIX_Win_ilock(t, r, a, w, q) rt_req_null_((q), MPI_Win_lock((t), (r), (a), (w)))
#define MPIX_Win_iunlock(r, w, q) rt_req_null_((q), MPI_Win_unlock((r), (w)))
#define MPIX_Win_ilock_all(a, w, q) rt_req_null_((q), MPI_Win_lock_all((a), (w)))
#define MPIX_Win_iunlock_all(w, q) rt_req_null_((q), MPI_Win_unlock_all((w)))
#define MPIX_Win_iflush(r, w, q) rt_req_null_((q), MPI_Win_flush((r), (w)))
#define MPIX_Win_iflush_local(r, w, q) rt_req_null_((q), MPI_Win_flush_local((r), (w)))
#define MPIX_Win_iflush_all(w, q) rt_req_null_((q), MPI_Win_flush_all((w)))
#define MPIX_Win_iflush_local_all(w, q) rt_req_null_((q), MPI_Win_flush_local_all((w)))
#define MPIX_Win_ifence(a, w, q) rt_req_null_((q), MPI_Win_fence((a), (w)))
#define MPIX_Win_istart(g, a, w, q) rt_req_null_((q), MPI_Win_start((g), (a), (w)))
#define MPIX_Win_icomplete(w, q) rt_req_null_((q), MPI_Win_complete((w)))
#define MPIX_Win_ipost(g, a, w, q) rt_req_null_((q), MPI_Win_post((g), (a), (w)))
#define MPIX_Win_iwait(w, q) rt_req_null_((q), MPI_Win_wait((w)))
static inline int nbrma_get_counter(const char *name, unsigned long long *value)
{
    (void) name;
    *value = 0;
    return MPI_SUCCESS;
}
static inline int nbrma_is_active(void)
{
    return 0;
}
#endif

/* ------------------------------------------------------------------ error counting */
static int rt_errs = 0;          /* errors found by this process */
static int rt_max_print = 10;    /* print at most this many error lines per process */

static inline int rt_rank(void)
{
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

static inline int rt_nprocs(void)
{
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

/* CHECK(cond, printf-args): count an error (and print it, up to rt_max_print) unless cond. */
#define CHECK(cond, ...)                                                                \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            if (rt_errs < rt_max_print) {                                               \
                fprintf(stderr, "[%d] %s:%d: check failed: %s: ", rt_rank(), __FILE__,   \
                        __LINE__, #cond);                                               \
                fprintf(stderr, __VA_ARGS__);                                           \
                fprintf(stderr, "\n");                                                  \
                fflush(stderr);                                                         \
            }                                                                           \
            rt_errs++;                                                                  \
        }                                                                               \
    } while (0)

/* MPI_CHK(call): an MPI call that must succeed. On failure it prints the call, the
 * location and MPI's message, then aborts (continuing would only hang the others). */
#define MPI_CHK(call)                                                                   \
    do {                                                                                \
        int rt_rc_ = (call);                                                            \
        if (rt_rc_ != MPI_SUCCESS) {                                                    \
            char rt_msg_[MPI_MAX_ERROR_STRING];                                         \
            int rt_len_ = 0;                                                            \
            MPI_Error_string(rt_rc_, rt_msg_, &rt_len_);                                \
            fprintf(stderr, "[%d] %s:%d: %s failed: %s\n", rt_rank(), __FILE__,         \
                    __LINE__, #call, rt_msg_);                                          \
            fflush(stderr);                                                             \
            MPI_Abort(MPI_COMM_WORLD, 1);                                               \
        }                                                                               \
    } while (0)

/* One of nbrma's process-wide counters (nbrma_get_counter(3); 0 without nbrma); a
 * refused name is a check failure. */
static inline unsigned long long rt_counter(const char *name)
{
    unsigned long long v = 0;
    int rc = nbrma_get_counter(name, &v);
    CHECK(rc == MPI_SUCCESS, "nbrma_get_counter(\"%s\") returned %d", name, rc);
    return v;
}

/* MPI_Init + make window calls return errors to MPI_CHK (which reports them). */
static inline void rt_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

/* rt_init, then this rank and the size of MPI_COMM_WORLD. */
static inline void rt_init_world(int *argc, char ***argv, int *rank, int *size)
{
    rt_init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
}

/* Sum the errors over all ranks, report from rank 0, finalize. Use as
 * `return rt_finalize();` from main. */
static inline int rt_finalize(void)
{
    int toterrs = 0;
    MPI_Allreduce(&rt_errs, &toterrs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rt_rank() == 0) {
        if (toterrs == 0)
            printf("No Errors\n");
        else
            printf("Found %d errors\n", toterrs);
        fflush(stdout);
    }
    MPI_Finalize();
    return toterrs != 0;
}

/* ------------------------------------------------------------------ expected errors */
/* Name of an error class (MPI's string for it), or "class N". The result lives in a
 * static buffer, overwritten by the next call. */
static inline const char *rt_class_name(int cls)
{
    static char buf[MPI_MAX_ERROR_STRING];
    int len;
    if (MPI_Error_string(cls, buf, &len) != MPI_SUCCESS)
        snprintf(buf, sizeof(buf), "class %d", cls);
    return buf;
}

/* An erroneous call returned `rc`: count an error unless it failed with error class
 * `cls` and an error string that is non-empty and mentions `call` (the function's name,
 * e.g. "MPI_Win_unlock"). Messages start with `context` (e.g. the flavor and the case). */
static inline void rt_expect_error(int rc, int cls, const char *call, const char *context)
{
    CHECK(rc != MPI_SUCCESS, "%s: %s succeeded, expected %s", context, call, rt_class_name(cls));
    if (rc == MPI_SUCCESS)
        return;
    int got = -1, len = 0;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_CHK(MPI_Error_class(rc, &got));
    if (got != cls) {
        char gname[MPI_MAX_ERROR_STRING];
        snprintf(gname, sizeof(gname), "%s", rt_class_name(got));
        CHECK(got == cls, "%s: %s returned class %d (%s), expected %d (%s)", context, call, got,
              gname, cls, rt_class_name(cls));
    }
    msg[0] = '\0';
    MPI_CHK(MPI_Error_string(rc, msg, &len));
    CHECK(len > 0 && msg[0] != '\0', "%s: empty error string", context);
    CHECK(strstr(msg, call) != NULL, "%s: error string \"%s\" does not mention %s", context, msg,
          call);
}

/* ------------------------------------------------------------------ window flavors */
enum { RT_CREATE = 0, RT_ALLOCATE, RT_SHARED, RT_DYNAMIC, RT_NFLAVORS };

static const char *const rt_flavor_names[RT_NFLAVORS] = { "create", "allocate", "shared",
                                                          "dynamic" };

/* Index of a flavor name, or -1. */
static inline int rt_flavor_from_name(const char *s)
{
    for (int f = 0; f < RT_NFLAVORS; f++)
        if (strcmp(s, rt_flavor_names[f]) == 0)
            return f;
    return -1;
}

/* Flavors selected by the command line: none given = all four; otherwise each argv
 * entry that names a flavor. Sets sel[f]; returns how many are selected (0 means an
 * unknown argument was given, which is reported as an error). */
static inline int rt_select_flavors(int argc, char **argv, int sel[RT_NFLAVORS])
{
    int n = 0, any = 0;
    for (int f = 0; f < RT_NFLAVORS; f++)
        sel[f] = 0;
    for (int i = 1; i < argc; i++) {
        int f = rt_flavor_from_name(argv[i]);
        if (f < 0)
            continue;
        any = 1;
        if (!sel[f])
            n++;
        sel[f] = 1;
    }
    if (!any) {
        for (int f = 0; f < RT_NFLAVORS; f++)
            sel[f] = 1;
        n = RT_NFLAVORS;
    }
    return n;
}

typedef struct {
    MPI_Win win;
    MPI_Comm comm;
    int flavor;
    char *base;        /* this rank's window memory */
    MPI_Aint size;     /* its size in bytes */
    int disp_unit;     /* disp_unit of the window (1 for dynamic) */
    int elem;          /* the disp_unit asked for: rt_disp() scales indices by it */
    int nprocs;
    MPI_Aint *addrs;   /* dynamic: attached address of every rank's buffer */
    void *own;         /* memory the helper allocated itself (create, dynamic) */
} rt_win_t;

/* rt_expect_error with the window's flavor and `what` (the case) as the context. */
static inline void rt_expect_win_error(const rt_win_t *w, int rc, int cls, const char *call,
                                       const char *what)
{
    char context[256];
    snprintf(context, sizeof(context), "%s %s", rt_flavor_names[w->flavor], what);
    rt_expect_error(rc, cls, call, context);
}

/* A field of /proc/self/status in kB ("VmRSS", "VmLck"), -1 if it cannot be read. */
static inline long rt_status_kib(const char *field)
{
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    const size_t length = strlen(field);
    while (status && fgets(line, sizeof line, status))
        if (strncmp(line, field, length) == 0 && line[length] == ':' &&
            sscanf(line + length + 1, "%ld", &kib) == 1)
            break;
    if (status) fclose(status);
    return kib;
}

/* A window over the caller's memory [base, base + size) on MPI_COMM_WORLD:
 * MPI_Win_create with disp_unit, or (dynamic) MPI_Win_create_dynamic + MPI_Win_attach.
 * bases[r] (room for every rank) is where rank r's memory starts as a displacement:
 * its address on a dynamic window, 0 otherwise. */
static inline void rt_win_over(void *base, MPI_Aint size, int disp_unit, int dynamic,
                               MPI_Info info, MPI_Aint *bases, MPI_Win *win)
{
    MPI_Aint mine = 0;
    if (dynamic) {
        MPI_CHK(MPI_Win_create_dynamic(info, MPI_COMM_WORLD, win));
        MPI_CHK(MPI_Win_attach(*win, base, size));
        MPI_CHK(MPI_Get_address(base, &mine));
    } else {
        MPI_CHK(MPI_Win_create(base, size, disp_unit, info, MPI_COMM_WORLD, win));
    }
    MPI_CHK(MPI_Allgather(&mine, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD));
}

/* Create a window of the given flavor with `size` bytes of memory on this rank and
 * displacement unit `disp_unit` (dynamic windows always use 1; rt_disp hides it).
 * Memory starts zeroed. The window's error handler is MPI_ERRORS_RETURN, so pair calls
 * with MPI_CHK. `info` may be MPI_INFO_NULL. */
static inline void rt_win_create(int flavor, MPI_Aint size, int disp_unit, MPI_Info info,
                                 MPI_Comm comm, rt_win_t *w)
{
    memset(w, 0, sizeof(*w));
    w->flavor = flavor;
    w->comm = comm;
    w->size = size;
    w->elem = disp_unit;
    w->disp_unit = disp_unit;
    MPI_Comm_size(comm, &w->nprocs);
    switch (flavor) {
    case RT_CREATE:
        w->own = calloc(1, size > 0 ? (size_t) size : 1);
        w->base = w->own;
        MPI_CHK(MPI_Win_create(w->base, size, disp_unit, info, comm, &w->win));
        break;
    case RT_ALLOCATE:
        MPI_CHK(MPI_Win_allocate(size, disp_unit, info, comm, &w->base, &w->win));
        break;
    case RT_SHARED:
        MPI_CHK(MPI_Win_allocate_shared(size, disp_unit, info, comm, &w->base, &w->win));
        break;
    case RT_DYNAMIC: {
        MPI_Aint addr;
        w->disp_unit = 1;
        w->own = calloc(1, size > 0 ? (size_t) size : 1);
        w->base = w->own;
        MPI_CHK(MPI_Win_create_dynamic(info, comm, &w->win));
        MPI_CHK(MPI_Win_attach(w->win, w->base, size > 0 ? size : 1));
        MPI_CHK(MPI_Get_address(w->base, &addr));
        w->addrs = malloc(sizeof(MPI_Aint) * (size_t) w->nprocs);
        MPI_CHK(MPI_Allgather(&addr, 1, MPI_AINT, w->addrs, 1, MPI_AINT, comm));
        break;
    }
    default:
        fprintf(stderr, "rt_win_create: bad flavor %d\n", flavor);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_CHK(MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN));
    if (size > 0 && flavor != RT_CREATE && flavor != RT_DYNAMIC) {
        /* allocated memory: zero it inside an epoch on ourselves */
        int me;
        MPI_Comm_rank(comm, &me);
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->win));
        memset(w->base, 0, (size_t) size);
        MPI_CHK(MPI_Win_unlock(me, w->win));
    }
    MPI_CHK(MPI_Barrier(comm));
}

/* target_disp for element `index` (in units of the disp_unit asked for) of rank's buffer. */
static inline MPI_Aint rt_disp(const rt_win_t *w, int rank, MPI_Aint index)
{
    if (w->flavor == RT_DYNAMIC)
        return w->addrs[rank] + index * (MPI_Aint) w->elem;
    return index;
}

static inline void rt_win_free(rt_win_t *w)
{
    if (w->flavor == RT_DYNAMIC)
        MPI_CHK(MPI_Win_detach(w->win, w->base));
    MPI_CHK(MPI_Win_free(&w->win));
    free(w->own);
    free(w->addrs);
    w->own = NULL;
    w->addrs = NULL;
    w->base = NULL;
}

/* Runs body(&w, flavor, arg) on a window over MPI_COMM_WORLD of each flavor the command
 * line selects (rt_select_flavors: all four by default), of `size` bytes a rank with
 * displacement unit `disp_unit`, and frees it after. */
typedef void (*rt_flavor_body_t)(rt_win_t *w, int flavor, void *arg);
static inline void rt_each_flavor(int argc, char **argv, MPI_Aint size, int disp_unit,
                                  rt_flavor_body_t body, void *arg)
{
    int sel[RT_NFLAVORS];
    rt_select_flavors(argc, argv, sel);
    for (int f = 0; f < RT_NFLAVORS; f++) {
        rt_win_t w;
        if (!sel[f])
            continue;
        rt_win_create(f, size, disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        body(&w, f, arg);
        rt_win_free(&w);
    }
}

/* Open/close an exclusive epoch on this rank's own window memory, for initializing or
 * reading it while other ranks may access it with RMA (MPI unified model). */
static inline void rt_lock_self(const rt_win_t *w)
{
    int me;
    MPI_Comm_rank(w->comm, &me);
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->win));
}

static inline void rt_unlock_self(const rt_win_t *w)
{
    int me;
    MPI_Comm_rank(w->comm, &me);
    MPI_CHK(MPI_Win_unlock(me, w->win));
}

#endif /* RMATEST_H */
