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
#include <time.h>

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
/* Labelled scenarios (check_races, check_tsan): whether the command line's `name` chooses
 * the scenario `scenario` (labelled racy or not): its own name, "racy" for every racy
 * one, "clean" for every other. */
static inline int rt_scenario_chosen(const char *name, const char *scenario, int racy)
{
    return strcmp(scenario, name) == 0 || strcmp(name, racy ? "racy" : "clean") == 0;
}

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

/* Aborts the job, after printing `message` on every rank, unless MPI_COMM_WORLD has at
 * least `min` processes. */
static inline void rt_require_procs(int min, const char *message)
{
    if (rt_nprocs() < min) {
        fprintf(stderr, "%s\n", message);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
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

/* MPI_Win_get_info on `win` reports `key` = `value`; messages start with `context`. */
static inline void rt_expect_info(MPI_Win win, const char *key, const char *value,
                                  const char *context)
{
    MPI_Info used;
    char got[MPI_MAX_INFO_VAL + 1] = "";
    int flag = 0;
    MPI_CHK(MPI_Win_get_info(win, &used));
    MPI_CHK(MPI_Info_get(used, key, MPI_MAX_INFO_VAL, got, &flag));
    MPI_CHK(MPI_Info_free(&used));
    CHECK(flag, "%s: MPI_Win_get_info lacks \"%s\"", context, key);
    if (flag)
        CHECK(strcmp(got, value) == 0, "%s: MPI_Win_get_info: %s = \"%s\", expected \"%s\"",
              context, key, got, value);
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

/* CLOCK_MONOTONIC in seconds: one clock for every process of the node (MPI_Wtime need not
 * be global, and is an MPI call). */
static inline double rt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
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

/* Runs body(&w, flavor, mode) for every mode from 0 to nmodes - 1 in turn on a window of
 * each flavor the command line selects, made as rt_each_flavor makes them. */
typedef void (*rt_mode_body_t)(rt_win_t *w, int flavor, int mode);
typedef struct {
    int nmodes;
    rt_mode_body_t body;
} rt_modes_t_;
static inline void rt_modes_(rt_win_t *w, int flavor, void *arg)
{
    const rt_modes_t_ *m = (const rt_modes_t_ *) arg;
    for (int mode = 0; mode < m->nmodes; mode++)
        m->body(w, flavor, mode);
}
static inline void rt_each_flavor_mode(int argc, char **argv, MPI_Aint size, int disp_unit,
                                       int nmodes, rt_mode_body_t body)
{
    rt_modes_t_ m = { nmodes, body };
    rt_each_flavor(argc, argv, size, disp_unit, rt_modes_, &m);
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

/* For ranks 0 and 1 of the window, the group (from the window's group) of the other one
 * of the two, their partner in PSCW epochs; MPI_GROUP_NULL on the other ranks. Free it
 * with MPI_Group_free. */
static inline MPI_Group rt_peer_group(const rt_win_t *w)
{
    MPI_Group wgroup, peer_g = MPI_GROUP_NULL;
    int me;
    MPI_Comm_rank(w->comm, &me);
    MPI_CHK(MPI_Win_get_group(w->win, &wgroup));
    if (me <= 1) {
        int peer = 1 - me;
        MPI_CHK(MPI_Group_incl(wgroup, 1, &peer, &peer_g));
    }
    MPI_CHK(MPI_Group_free(&wgroup));
    return peer_g;
}

/* ------------------------------------------------------------------ a window of int slots */
/* Initial content of int slot k of rank r's window memory. */
static inline int rt_init_slot_val(int r, int k)
{
    return -(r * 100 + k) - 1;
}

/* Fills the first n ints of this rank's window memory with rt_init_slot_val(rank, k), in
 * an epoch on itself, then waits for the window's other ranks to do the same (barrier). */
static inline void rt_init_slots(const rt_win_t *w, int n)
{
    int me, *mem = (int *) w->base;
    MPI_Comm_rank(w->comm, &me);
    rt_lock_self(w);
    for (int k = 0; k < n; k++)
        mem[k] = rt_init_slot_val(me, k);
    rt_unlock_self(w);
    MPI_CHK(MPI_Barrier(w->comm));
}

/* What rank r puts into slot k in verification round `round`: a correct epoch after an
 * erroneous call, which shows that the window still moves the right data. */
static inline int rt_verify_val(int round, int r, int k)
{
    return round * 1000 + r * 100 + k;
}

/* Checks this rank's first n int slots after verification round `round`, in which rank
 * `from` put rt_verify_val(round, from, k) into slots [0, nput): those must hold it, the
 * others still rt_init_slot_val. The caller synchronizes; `after` names the case the
 * round follows, for the messages. */
static inline void rt_check_verified(const rt_win_t *w, int n, int nput, int round, int from,
                                     const char *after)
{
    int me;
    const int *mem = (const int *) w->base;
    MPI_Comm_rank(w->comm, &me);
    for (int k = 0; k < n; k++) {
        int exp = k < nput ? rt_verify_val(round, from, k) : rt_init_slot_val(me, k);
        CHECK(mem[k] == exp, "%s after %s: window slot %d = %d, expected %d",
              rt_flavor_names[w->flavor], after, k, mem[k], exp);
    }
}

/* ------------------------------------------------------------------ blocks of int slots */
/* A target's window memory holds one block of int slots for each origin rank, so that
 * concurrent origins never touch the same slot. */

/* Initial content of slot k of origin o's block at target t. */
static inline int rt_init_block_val(int t, int o, int k)
{
    return 1000000 + 10000 * t + 100 * o + k;
}

/* What origin o writes into slot k of its block at target t in mode m. */
static inline int rt_put_val(int m, int t, int o, int k)
{
    return 2000000 + 100000 * m + 10000 * t + 100 * o + k;
}

/* Fills this rank's window memory, one block of `slots` ints for each rank of the window,
 * with rt_init_block_val(rank, o, k), in an epoch on itself, then waits for the window's
 * other ranks to do the same (barrier). */
static inline void rt_init_blocks(const rt_win_t *w, int slots)
{
    int me, *mem = (int *) w->base;
    MPI_Comm_rank(w->comm, &me);
    rt_lock_self(w);
    for (int o = 0; o < w->nprocs; o++)
        for (int k = 0; k < slots; k++)
            mem[o * slots + k] = rt_init_block_val(me, o, k);
    rt_unlock_self(w);
    MPI_CHK(MPI_Barrier(w->comm));
}

/* Where rt_issue_calls puts each communication call in an origin's block: a slot index,
 * or -1 (no slot) for a request-based call that is not issued. */
typedef struct {
    int slots;                  /* ints in an origin's block */
    int put;                    /* MPI_Put of 2 ints: slots put and put + 1 */
    int acc, gacc, fop;         /* Accumulate, Get_accumulate, Fetch_and_op, all MPI_SUM */
    int cas;                    /* Compare_and_swap whose compare value matches */
    int rput, racc, rgacc;      /* Rput, Raccumulate, Rget_accumulate (MPI_SUM) */
    int get, rget;              /* Get, Rget */
    int cas_nomatch;            /* Compare_and_swap whose compare value never matches */
    int fop_noop, acc_replace;  /* Fetch_and_op(MPI_NO_OP), Accumulate(MPI_REPLACE) */
} rt_calls_t;

/* Issues every communication call of layout c from this rank toward target t, each on its
 * own slot of this rank's block at t (c->slots ints from element rank * c->slots on), in
 * this order: Put, Accumulate, Get_accumulate, Fetch_and_op, Compare_and_swap, [Rput,
 * Raccumulate, Rget_accumulate], Get, [Rget], the never matching Compare_and_swap,
 * Fetch_and_op(MPI_NO_OP), Accumulate(MPI_REPLACE). The bracketed request-based calls are
 * issued only when reqs is not NULL (passive target), their requests into reqs[0..3].
 * ob[k] holds the value for slot k; rb[k] receives slot k's fetched value (set to -1
 * first); cmp[0] and cmp[1] are set to the compare values of the two swaps, assuming the
 * target's memory holds rt_init_block_val. The buffers must stay valid until the calls
 * complete. */
static inline void rt_issue_calls(const rt_win_t *w, int t, const rt_calls_t *c, const int *ob,
                                  int *rb, int *cmp, MPI_Request *reqs)
{
    const MPI_Win win = w->win;
    int me;
    MPI_Comm_rank(w->comm, &me);
    const MPI_Aint block = (MPI_Aint) me * c->slots;
    for (int k = 0; k < c->slots; k++)
        rb[k] = -1;
    cmp[0] = rt_init_block_val(t, me, c->cas);
    cmp[1] = rt_init_block_val(t, me, c->cas_nomatch) + 1; /* never matches */
#define RT_D_(k) rt_disp(w, t, block + (k))
    MPI_CHK(MPI_Put(&ob[c->put], 2, MPI_INT, t, RT_D_(c->put), 2, MPI_INT, win));
    MPI_CHK(MPI_Accumulate(&ob[c->acc], 1, MPI_INT, t, RT_D_(c->acc), 1, MPI_INT, MPI_SUM, win));
    MPI_CHK(MPI_Get_accumulate(&ob[c->gacc], 1, MPI_INT, &rb[c->gacc], 1, MPI_INT, t,
                               RT_D_(c->gacc), 1, MPI_INT, MPI_SUM, win));
    MPI_CHK(MPI_Fetch_and_op(&ob[c->fop], &rb[c->fop], MPI_INT, t, RT_D_(c->fop), MPI_SUM, win));
    MPI_CHK(MPI_Compare_and_swap(&ob[c->cas], &cmp[0], &rb[c->cas], MPI_INT, t, RT_D_(c->cas),
                                 win));
    if (reqs) {
        MPI_CHK(MPI_Rput(&ob[c->rput], 1, MPI_INT, t, RT_D_(c->rput), 1, MPI_INT, win, &reqs[0]));
        MPI_CHK(MPI_Raccumulate(&ob[c->racc], 1, MPI_INT, t, RT_D_(c->racc), 1, MPI_INT, MPI_SUM,
                                win, &reqs[1]));
        MPI_CHK(MPI_Rget_accumulate(&ob[c->rgacc], 1, MPI_INT, &rb[c->rgacc], 1, MPI_INT, t,
                                    RT_D_(c->rgacc), 1, MPI_INT, MPI_SUM, win, &reqs[2]));
    }
    MPI_CHK(MPI_Get(&rb[c->get], 1, MPI_INT, t, RT_D_(c->get), 1, MPI_INT, win));
    if (reqs)
        MPI_CHK(MPI_Rget(&rb[c->rget], 1, MPI_INT, t, RT_D_(c->rget), 1, MPI_INT, win, &reqs[3]));
    MPI_CHK(MPI_Compare_and_swap(&ob[c->cas_nomatch], &cmp[1], &rb[c->cas_nomatch], MPI_INT, t,
                                 RT_D_(c->cas_nomatch), win));
    MPI_CHK(MPI_Fetch_and_op(NULL, &rb[c->fop_noop], MPI_INT, t, RT_D_(c->fop_noop), MPI_NO_OP,
                             win));
    MPI_CHK(MPI_Accumulate(&ob[c->acc_replace], 1, MPI_INT, t, RT_D_(c->acc_replace), 1, MPI_INT,
                           MPI_REPLACE, win));
#undef RT_D_
}

/* Whether slot k of layout c receives a fetched value. */
static inline int rt_call_fetches(const rt_calls_t *c, int k)
{
    return k == c->gacc || k == c->fop || k == c->cas || k == c->rgacc || k == c->get ||
        k == c->rget || k == c->cas_nomatch || k == c->fop_noop;
}

/* The value slot k of layout c holds at the target once the calls completed, when it held
 * `init` and the origin's value for it was `put`. */
static inline int rt_call_expected(const rt_calls_t *c, int k, int init, int put)
{
    if (k == c->put || k == c->put + 1 || k == c->cas || k == c->rput || k == c->acc_replace)
        return put;
    if (k == c->acc || k == c->gacc || k == c->fop || k == c->racc || k == c->rgacc)
        return init + put;
    return init;
}

/* Checks, once the calls completed, the values this rank fetched from its block at
 * target t: every fetching slot of layout c must have read rt_init_block_val. rb is
 * rt_issue_calls' result buffer; messages start with `context`. */
static inline void rt_check_fetched(const rt_win_t *w, int t, const rt_calls_t *c, const int *rb,
                                    const char *context)
{
    int me;
    MPI_Comm_rank(w->comm, &me);
    for (int k = 0; k < c->slots; k++)
        if (rt_call_fetches(c, k))
            CHECK(rb[k] == rt_init_block_val(t, me, k),
                  "%s: origin %d fetched %d from target %d slot %d, expected %d", context, me,
                  rb[k], t, k, rt_init_block_val(t, me, k));
}

#endif /* RMATEST_H */
