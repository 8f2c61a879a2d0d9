/*
 * bench_common.c — what every benchmark group shares (see bench.h): the output lines
 * nbrma-bench merges, error reporting for MPI calls, and the two ways a benchmark
 * spends time without MPI.
 *
 * Output: one line per call, written with a single stdio call and flushed at once, so
 * lines from different ranks of one job (they share mpiexec's stdout) never interleave
 * inside a line. Values are printed with 4 significant digits below 1000, one decimal
 * above (tps figures stay readable).
 *
 * bench_compute(usec) is work, not waiting: a dependent floating-point chain whose
 * speed is calibrated once per process (the best of several short timed runs, so a
 * preempted run does not skew it). Preempted in the middle, it takes longer in wall
 * time, as real computation would. bench_sleep(usec) gives the core away (nanosleep),
 * for the waiting sides of oversubscribed jobs (three ranks on two cores).
 *
 * Helpers more than one group uses: memory, --only, the byte patterns puts carry and
 * their checks, polling waits, blocking-or-nonblocking calls (BENCH_SYNC), the iteration
 * loop whose length rank 0 decides, the median/mean report of per-iteration samples and
 * window allocation.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

/* ---- Output --------------------------------------------------------------------- */

void bench_result(const char *series, const char *benchmark, const char *parameter, double value,
                  const char *unit) {
    if (value < 1000.0 && value > -1000.0)
        printf("RESULT %s %s %s %.4g %s\n", series, benchmark, parameter, value, unit);
    else
        printf("RESULT %s %s %s %.1f %s\n", series, benchmark, parameter, value, unit);
    fflush(stdout);
}

void bench_check(const char *series, const char *benchmark, int ok) {
    if (benchmark)
        printf("CHECK %s %s %s\n", series, ok ? "ok" : "FAILED", benchmark);
    else
        printf("CHECK %s %s\n", series, ok ? "ok" : "FAILED");
    fflush(stdout);
}

void bench_row(const char *benchmark, const char *parameter, const char *unit) {
    printf("ROW %s %s %s\n", benchmark, parameter, unit);
    fflush(stdout);
}

/* ---- Errors --------------------------------------------------------------------- */

static char current_step[128] = "setup";

void bench_set_step(const char *series, const char *benchmark) {
    snprintf(current_step, sizeof current_step, "%s %s", series, benchmark);
}

/* The peer may be blocked in a synchronization that will never match: take the whole
 * job down. Before MPI_Init (or after MPI_Finalize) there is nothing to abort. */
void bench_check_mpi(int rc, const char *call, const char *file, int line) {
    if (rc == MPI_SUCCESS) return;
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized) {
        fprintf(stderr, "bench: %s failed (%s:%d) in %s: error code %d\n", call, file, line,
                current_step, rc);
        exit(2);
    }
    char message[MPI_MAX_ERROR_STRING] = "";
    int length = 0;
    MPI_Error_string(rc, message, &length);
    int error_class = MPI_ERR_UNKNOWN;
    MPI_Error_class(rc, &error_class);
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "bench: rank %d: %s failed (%s:%d) in %s: %s%s\n", rank, call, file, line,
            current_step, message,
            error_class == MPI_ERR_UNSUPPORTED_OPERATION
                ? " [MPI_ERR_UNSUPPORTED_OPERATION: this RMA library does not implement it]"
                : "");
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2); /* not reached */
}

/* ---- Spending time -------------------------------------------------------------- */

static double now_usec(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* A dependent chain the compiler cannot drop or shorten (the result is stored in a
 * volatile); each step is a few cycles. */
static volatile double compute_sink;

static void compute_steps(long steps) {
    double x = compute_sink + 1.0;
    for (long i = 0; i < steps; i++) x = x * 0.999999 + 1e-6;
    compute_sink = x;
}

static double steps_per_usec; /* 0 until calibrated */

static void calibrate(void) {
    const long steps = 200000;
    double best = 0.0;
    compute_steps(steps / 10); /* warm the core up */
    for (int run = 0; run < 7; run++) {
        double start = now_usec();
        compute_steps(steps);
        double elapsed = now_usec() - start;
        if (elapsed > 0.0 && (best == 0.0 || elapsed < best)) best = elapsed;
    }
    steps_per_usec = best > 0.0 ? (double)steps / best : 1000.0;
}

void bench_compute(double usec) {
    if (usec <= 0.0) return;
    if (steps_per_usec == 0.0) calibrate();
    compute_steps((long)(usec * steps_per_usec + 0.5));
}

void bench_spin(double usec) {
    if (usec <= 0.0) return;
    if (steps_per_usec == 0.0) calibrate();
    long chunk = (long)(steps_per_usec + 1.0); /* about 1 us of steps between clock reads */
    double end = now_usec() + usec;
    do compute_steps(chunk);
    while (now_usec() < end);
}

void bench_sleep(double usec) {
    if (usec <= 0.0) return;
    struct timespec wait = {.tv_sec = (time_t)(usec / 1e6),
                            .tv_nsec = (long)((usec - (double)(time_t)(usec / 1e6) * 1e6) * 1e3)};
    while (nanosleep(&wait, &wait) != 0 && errno == EINTR) {
    }
}

/* ---- Helpers the groups share ---------------------------------------------------- */

void *bench_malloc(const char *group, size_t bytes) {
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "%s: out of memory\n", group);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* 1 when `name` is one of the comma-separated names of `list`. */
static int in_list(const char *list, const char *name) {
    size_t length = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == length && strncmp(p, name, n) == 0) return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

int bench_selected(const struct bench_options *options, const char *benchmark) {
    return (options->only == NULL || in_list(options->only, benchmark)) &&
           !(options->skip && in_list(options->skip, benchmark));
}

#ifdef NBRMA_BENCH_OMPI
const char *bench_ompi_series(void) {
    static char series[64] = "";
    if (!series[0]) {
        const char *osc = getenv("OMPI_MCA_osc");
        if (osc && osc[0])
            snprintf(series, sizeof series, "ompi-osc-%s", osc);
        else
            snprintf(series, sizeof series, "ompi");
        for (char *p = series; *p; p++)
            if (*p == ',')
                *p = '+';
            else if (*p == ' ')
                *p = '_';
    }
    return series;
}
#endif

void bench_start_group(const char *group, const struct bench_options *options,
                       const char *const *names, int count, int *rank, int *size) {
    BENCH_MPI(MPI_Comm_rank(MPI_COMM_WORLD, rank));
    BENCH_MPI(MPI_Comm_size(MPI_COMM_WORLD, size));
    if (!options->only) return;
    /* At least one name of the list must be one of the group's (the others may name
     * benchmarks of other groups: nbrma-bench passes one list to every group). */
    for (int b = 0; b < count; b++)
        if (bench_selected(options, names[b])) return;
    if (*rank == 0) fprintf(stderr, "%s: no benchmark among '%s'\n", group, options->only);
    MPI_Finalize();
    exit(1); /* bad usage */
}

unsigned char bench_stamp(int iteration, int salt) {
    return (unsigned char)((iteration * 37 + salt * 11 + 1) & 0xff);
}

int bench_all_equal(const unsigned char *p, int bytes, unsigned char value) {
    for (int i = 0; i < bytes; i++)
        if (p[i] != value) return 0;
    return 1;
}

int bench_compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void bench_wait_polling(MPI_Request *request, double sleep_usec) {
    int done = 0;
    for (;;) {
        BENCH_MPI(MPI_Test(request, &done, MPI_STATUS_IGNORE));
        if (done) return;
        if (sleep_usec > 0)
            bench_sleep(sleep_usec);
        else
            sched_yield();
    }
}

void bench_finish(MPI_Request *request) {
    if (*request != MPI_REQUEST_NULL) BENCH_MPI(MPI_Wait(request, MPI_STATUS_IGNORE));
}

int bench_boundary(int want_more, double sleep_usec) {
    int verdict = 0;
    MPI_Request request;
    BENCH_MPI(MPI_Iallreduce(&want_more, &verdict, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &request));
    bench_wait_polling(&request, sleep_usec);
    return verdict;
}

int bench_loop_next(struct bench_loop *l, int rank, double sleep_usec) {
    int more = 0;
    if (rank == 0) {
        more = l->i < l->total;
        if (l->i == l->warmup) l->start = MPI_Wtime();
        if (l->i > l->warmup && MPI_Wtime() - l->start > l->budget) more = 0;
    }
    if (!bench_boundary(more, sleep_usec)) return 0;
    l->i++;
    return 1;
}

int bench_loop_timed(const struct bench_loop *l) { return l->i - l->warmup; }

int bench_loop_slot(const struct bench_loop *l, int capacity) {
    int index = l->i - l->warmup - 1;
    return index >= 0 && index < capacity ? index : -1;
}

void bench_report_samples(const char *series, const char *benchmark, const char *const *params,
                          int count, double *samples, int stride, int timed) {
    for (int k = 0; k < count; k++) {
        double *v = samples + (size_t)k * stride, sum = 0;
        for (int i = 0; i < timed; i++) sum += v[i];
        if (timed > 0) {
            qsort(v, timed, sizeof *v, bench_compare_doubles);
            printf("# %s %s %s: median %.1f, min %.1f, max %.1f usec\n", series, benchmark,
                   params[k], v[timed / 2], v[0], v[timed - 1]);
        }
        bench_result(series, benchmark, params[k], timed > 0 ? sum / timed : 0.0, "usec");
    }
}

void bench_win_allocate(MPI_Aint bytes, int disp_unit, const char *key, MPI_Comm comm, void *base,
                        MPI_Win *win) {
    MPI_Info info = MPI_INFO_NULL;
    if (key) {
        BENCH_MPI(MPI_Info_create(&info));
        BENCH_MPI(MPI_Info_set(info, key, "true"));
    }
    BENCH_MPI(MPI_Win_allocate(bytes, disp_unit, info, comm, base, win));
    BENCH_MPI(MPI_Win_set_errhandler(*win, MPI_ERRORS_RETURN));
    if (info != MPI_INFO_NULL) BENCH_MPI(MPI_Info_free(&info));
}
