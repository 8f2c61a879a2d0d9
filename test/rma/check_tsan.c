/*
 * check_tsan: labelled programs for the race checker's ThreadSanitizer replay (loads and
 * stores of window memory against RMA calls; NBRMA_CHECK=races in a program built with
 * -fsanitize=thread).
 *
 * `check_tsan racy|clean|<scenario>` sets NBRMA_CHECK=races before MPI_Init and runs each
 * scenario chosen on a new window of 64 bytes a rank (MPI_Win_allocate; rank 0 is the
 * target and loads or stores its own window memory, rank 1 the origin), frees the window,
 * and sums over the ranks the ThreadSanitizer reports made meanwhile (counted by this
 * program's __tsan_on_report). A RACE scenario passes iff that sum is > 0, a NONE
 * scenario iff it is 0: TSan must report the load or store that no MPI synchronization
 * orders against an RMA call to the same bytes, and nothing else (MPICH and UCX are not
 * instrumented; nbrma's replay is the only RMA TSan sees).
 *
 * Each label is what the MPI standard says (MPI 4.0 §12.7: a window location updated by a
 * put or accumulate must not be accessed by a load or store until the update completed
 * and that completion is ordered before the access, and a store must be ordered before
 * an RMA access to the same location). Built without ThreadSanitizer (the ASan build) the
 * program prints SKIP.
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "rmatest.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

enum { NONE = 0, RACE = 1 };

typedef struct {
    const char *name;
    int label; /* RACE or NONE */
    void (*run)(void);
    const char *description;
} scenario_t;

#define TARGET 0
#define ORIGIN 1
#define WIN_BYTES 64

static int me;
static MPI_Win win;
static volatile int64_t *mem; /* this rank's window memory */
static int64_t obuf[2], rbuf[2];

/* ThreadSanitizer's reports, counted (TSan calls this for each one it prints). */
static volatile int reports;
void __tsan_on_report(void *report);
void __tsan_on_report(void *report) {
    (void)report;
    reports++;
}
/* Every report counts (windows of successive scenarios may share addresses and stacks);
 * the exit status is this program's. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) {
    return "exitcode=0:suppress_equal_addresses=0:suppress_equal_stacks=0:history_size=4:"
           "ignore_noninstrumented_modules=1";
}

/* Origin: a put of one int64_t at displacement `disp` of the target, in a shared lock
 * epoch. */
static void locked_put(MPI_Aint disp) {
    obuf[0] = 1000 + disp;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, TARGET, 0, win));
    MPI_CHK(MPI_Put(&obuf[0], 1, MPI_INT64_T, TARGET, disp, 1, MPI_INT64_T, win));
    MPI_CHK(MPI_Win_unlock(TARGET, win));
}

static void locked_get(MPI_Aint disp) {
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, TARGET, 0, win));
    MPI_CHK(MPI_Get(&rbuf[0], 1, MPI_INT64_T, TARGET, disp, 1, MPI_INT64_T, win));
    MPI_CHK(MPI_Win_unlock(TARGET, win));
}

/* ------------------------------------------------------------------ RACE */
static void store_during_put(void) {
    if (me == TARGET) mem[0] = 7;
    if (me == ORIGIN) locked_put(0);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void load_during_put(void) {
    int64_t seen = 0;
    if (me == TARGET) seen = mem[0];
    if (me == ORIGIN) locked_put(0);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    (void)seen;
}

static void store_during_get(void) {
    if (me == TARGET) mem[0] = 7;
    if (me == ORIGIN) locked_get(0);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void store_in_fence_epoch(void) {
    MPI_CHK(MPI_Win_fence(0, win));
    if (me == ORIGIN) {
        obuf[0] = 11;
        MPI_CHK(MPI_Put(&obuf[0], 1, MPI_INT64_T, TARGET, 0, 1, MPI_INT64_T, win));
    }
    if (me == TARGET) mem[0] = 7;
    MPI_CHK(MPI_Win_fence(0, win));
}

static void load_during_accumulate(void) {
    int64_t seen = 0;
    if (me == TARGET) seen = mem[1];
    if (me == ORIGIN) {
        obuf[1] = 3;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, TARGET, 0, win));
        MPI_CHK(MPI_Accumulate(&obuf[1], 1, MPI_INT64_T, TARGET, 8, 1, MPI_INT64_T, MPI_SUM, win));
        MPI_CHK(MPI_Win_unlock(TARGET, win));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    (void)seen;
}

/* PSCW between ranks 0 and 1: the group of the other one. */
static MPI_Group pscw_peer(void) {
    MPI_Group world, peer;
    const int other = me == TARGET ? ORIGIN : TARGET;
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_CHK(MPI_Group_incl(world, 1, &other, &peer));
    MPI_CHK(MPI_Group_free(&world));
    return peer;
}

/* The origin's side of the PSCW scenarios: start, put 12 at displacement 0, complete. */
static void start_put_complete(MPI_Group peer) {
    obuf[0] = 12;
    MPI_CHK(MPI_Win_start(peer, 0, win));
    MPI_CHK(MPI_Put(&obuf[0], 1, MPI_INT64_T, TARGET, 0, 1, MPI_INT64_T, win));
    MPI_CHK(MPI_Win_complete(win));
}

static void load_before_wait(void) {
    MPI_Group peer = pscw_peer();
    int64_t seen = 0;
    if (me == TARGET) {
        MPI_CHK(MPI_Win_post(peer, 0, win));
        seen = mem[0]; /* the exposure is open: the put may land now */
        MPI_CHK(MPI_Win_wait(win));
    } else if (me == ORIGIN) {
        start_put_complete(peer);
    }
    MPI_CHK(MPI_Group_free(&peer));
    (void)seen;
}

/* ------------------------------------------------------------------ NONE */
static void put_barrier_load(void) {
    int64_t seen = 0;
    if (me == ORIGIN) locked_put(0);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == TARGET) seen = mem[0];
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == TARGET) CHECK(seen == 1000, "read %lld, the put wrote 1000", (long long)seen);
}

static void store_barrier_put(void) {
    if (me == TARGET) mem[0] = 7;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == ORIGIN) locked_put(0);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void fences_between(void) {
    int64_t seen = 0;
    if (me == TARGET) mem[0] = 7;
    MPI_CHK(MPI_Win_fence(0, win));
    if (me == ORIGIN) {
        obuf[0] = 11;
        MPI_CHK(MPI_Put(&obuf[0], 1, MPI_INT64_T, TARGET, 0, 1, MPI_INT64_T, win));
    }
    MPI_CHK(MPI_Win_fence(0, win));
    if (me == TARGET) seen = mem[0];
    if (me == TARGET) CHECK(seen == 11, "read %lld, the put wrote 11", (long long)seen);
}

static void disjoint_bytes(void) {
    if (me == TARGET) mem[2] = 7; /* bytes [16, 24); the put writes [0, 8) */
    if (me == ORIGIN) locked_put(0);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static void load_during_get(void) {
    int64_t seen = 0;
    if (me == TARGET) seen = mem[0];
    if (me == ORIGIN) locked_get(0);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    (void)seen;
}

/* The target's side of the clean PSCW scenarios: store, post, wait, load the put's 12. */
static void store_post_wait_load(MPI_Group peer) {
    mem[0] = 7; /* before the post */
    MPI_CHK(MPI_Win_post(peer, 0, win));
    MPI_CHK(MPI_Win_wait(win));
    const int64_t seen = mem[0];
    CHECK(seen == 12, "read %lld, the put wrote 12", (long long)seen);
}

static void post_then_wait(void) {
    MPI_Group peer = pscw_peer();
    if (me == TARGET) {
        store_post_wait_load(peer);
    } else if (me == ORIGIN) {
        start_put_complete(peer);
    }
    MPI_CHK(MPI_Group_free(&peer));
}

/* The origin starts, then the target posts while the origin sleeps (nothing progresses
 * nbrma there): the origin's put sees the grant itself, no progress sweep saw it first. */
static void post_seen_by_the_put(void) {
    MPI_Group peer = pscw_peer();
    int token = 0;
    if (me == TARGET) {
        MPI_CHK(MPI_Recv(&token, 1, MPI_INT, ORIGIN, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        store_post_wait_load(peer);
    } else if (me == ORIGIN) {
        obuf[0] = 12;
        MPI_CHK(MPI_Win_start(peer, 0, win));
        MPI_CHK(MPI_Send(&token, 1, MPI_INT, TARGET, 0, MPI_COMM_WORLD));
        usleep(300 * 1000);
        MPI_CHK(MPI_Put(&obuf[0], 1, MPI_INT64_T, TARGET, 0, 1, MPI_INT64_T, win));
        MPI_CHK(MPI_Win_complete(win));
    }
    MPI_CHK(MPI_Group_free(&peer));
}

static void put_send_recv_load(void) {
    int64_t seen = 0;
    int token = 0;
    if (me == ORIGIN) {
        locked_put(0);
        MPI_CHK(MPI_Send(&token, 1, MPI_INT, TARGET, 0, MPI_COMM_WORLD));
    } else if (me == TARGET) {
        MPI_CHK(MPI_Recv(&token, 1, MPI_INT, ORIGIN, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        seen = mem[0];
        CHECK(seen == 1000, "read %lld, the put wrote 1000", (long long)seen);
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ------------------------------------------------------------------ the table */
#define S(name, label, description) \
    { #name, label, name, description }
static const scenario_t scenarios[] = {
    S(store_during_put, RACE, "rank 0 stores, rank 1 puts the same bytes; barrier"),
    S(load_during_put, RACE, "rank 0 loads, rank 1 puts the same bytes; barrier"),
    S(store_during_get, RACE, "rank 0 stores, rank 1 gets the same bytes; barrier"),
    S(store_in_fence_epoch, RACE, "fence; rank 1 puts, rank 0 stores the same bytes; fence"),
    S(load_during_accumulate, RACE, "rank 0 loads, rank 1 accumulates the same bytes"),
    S(load_before_wait, RACE, "rank 0 posts, loads, waits; rank 1 puts in start/complete"),
    S(put_barrier_load, NONE, "rank 1 puts, unlocks; barrier; rank 0 loads"),
    S(store_barrier_put, NONE, "rank 0 stores; barrier; rank 1 puts"),
    S(fences_between, NONE, "rank 0 stores; fence; rank 1 puts; fence; rank 0 loads"),
    S(disjoint_bytes, NONE, "rank 0 stores bytes [16,24), rank 1 puts [0,8)"),
    S(load_during_get, NONE, "rank 0 loads, rank 1 gets the same bytes"),
    S(post_then_wait, NONE, "rank 0 stores, posts, waits, loads; rank 1 puts"),
    S(post_seen_by_the_put, NONE, "rank 1 starts, sends, sleeps; rank 0 receives, stores, posts"),
    S(put_send_recv_load, NONE, "rank 1 puts, unlocks, sends; rank 0 receives, loads"),
};
#undef S
#define NSCENARIOS ((int)(sizeof scenarios / sizeof scenarios[0]))

static void run_scenario(const scenario_t *s) {
    void *base;
    const int before = reports;
    MPI_CHK(MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    mem = base;
    s->run();
    MPI_CHK(MPI_Win_free(&win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    int found = reports - before, total = 0;
    MPI_CHK(MPI_Allreduce(&found, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (me != 0) return;
    printf("scenario %-28s %s, ThreadSanitizer reports: %d\n", s->name,
           s->label == RACE ? "RACE" : "NONE", total);
    if (s->label == RACE && total == 0) {
        fprintf(stderr, "scenario %s: expected a race, ThreadSanitizer reported none\n", s->name);
        rt_errs++;
    } else if (s->label == NONE && total != 0) {
        fprintf(stderr, "scenario %s: expected no race, ThreadSanitizer reported %d\n", s->name,
                total);
        rt_errs++;
    }
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : NULL;
    int chosen[NSCENARIOS], n = 0, np = 0;
    for (int i = 0; name && i < NSCENARIOS; i++) {
        chosen[i] = rt_scenario_chosen(name, scenarios[i].name, scenarios[i].label == RACE);
        n += chosen[i];
    }
#ifdef UNDER_TSAN
    /* UCX's memory hooks (MPICH's ch4:ucx loads them) crash under ThreadSanitizer; UCX
     * reads these as it loads, before main: set, the program starts again */
    if (!getenv("UCX_MEM_MALLOC_HOOKS")) {
        setenv("UCX_MEM_MALLOC_HOOKS", "no", 1);
        setenv("UCX_MEM_MMAP_HOOK_MODE", "none", 1);
        setenv("UCX_MEM_EVENTS", "no", 1);
        setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
        execv("/proc/self/exe", argv);
        perror("check_tsan: execv /proc/self/exe");
        return 1;
    }
#endif
    setenv("NBRMA_CHECK", "races", 1);
    rt_init_world(&argc, &argv, &me, &np);
#ifndef UNDER_TSAN
    if (me == 0) printf("SKIP: not built with ThreadSanitizer\n");
    return rt_finalize();
#endif
    if (n == 0 || np < 2) {
        if (me == 0) {
            fprintf(stderr, "check_tsan: give 2 ranks and racy, clean, or one of:\n");
            for (int i = 0; i < NSCENARIOS; i++)
                fprintf(stderr, "  %-28s %s  %s\n", scenarios[i].name,
                        scenarios[i].label == RACE ? "RACE" : "NONE", scenarios[i].description);
            rt_errs++;
        }
        return rt_finalize();
    }
    for (int i = 0; i < NSCENARIOS; i++)
        if (chosen[i]) run_scenario(&scenarios[i]);
    return rt_finalize();
}
