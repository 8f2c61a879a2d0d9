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
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

void bench_sleep(double usec) {
    if (usec <= 0.0) return;
    struct timespec wait = {.tv_sec = (time_t)(usec / 1e6),
                            .tv_nsec = (long)((usec - (double)(time_t)(usec / 1e6) * 1e6) * 1e3)};
    while (nanosleep(&wait, &wait) != 0 && errno == EINTR) {
    }
}
