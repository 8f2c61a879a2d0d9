/*
 * bench.h — what the benchmark groups of nbrma-bench share.
 *
 * One program, test/bench/bench_{nbrma,mpich}, built twice from the same sources:
 * bench_nbrma is linked with libnbrma (and defines NBRMA_NONBLOCKING_SERIES, so it
 * also runs the MPIX_Win_i* and reorder series), bench_mpich with MPICH alone (the
 * "mpich" series: MPICH 4.0.2's own RMA, blocking calls only). Where configure finds
 * Open MPI (mpicc.openmpi and mpirun.openmpi; optional), a third build, bench_ompi, is
 * compiled with Open MPI's headers and linked with its libmpi alone (no libnbrma, no
 * MPICH; defines NBRMA_BENCH_OMPI): its blocking series is "ompi-osc-<component>", the
 * osc component mpirun was told to use (--mca osc sm: OMPI_MCA_osc=sm, series
 * "ompi-osc-sm"; "ompi" without one), and its latency group measures the RMA rows only
 * (no raw-shm, ping-pong or allreduce rows: not Open MPI's one-sided component).
 * nbrma-bench runs only its latency and bandwidth groups. bench_main.c parses the options and runs
 * one group per job:
 *
 *   bench_{nbrma,mpich,ompi} --group latency|patterns|transactions|lu|reorder|progress|
 *                                    notify|creation|strided|collectives|bandwidth|threads
 *                       [--quick] [--only NAMES] [--skip NAMES]
 *                       [--thread-multiple] [...]
 *   bench_{nbrma,mpich,ompi} --list --group G     the rows G reports, without MPI
 *
 * The driver (nbrma-bench) starts every group of both binaries under mpiexec.mpich,
 * with the ranks a group needs (latency 2, patterns 3, reorder 3, transactions 4, lu 4,
 * progress 3, notify 3, creation 4, strided 2, collectives 2, bandwidth 2, threads 2;
 * a group run with fewer ranks than it needs says so on stderr and exits 2), and
 * merges their lines:
 *
 *   RESULT <series> <benchmark> <parameter> <value> <unit>
 *   CHECK <series> ok|FAILED [<benchmark>]
 *   ROW <benchmark> <parameter> <unit>          (only with --list)
 *   # anything                                  (a comment, passed through)
 *
 * No field contains blanks. <parameter> is what the figure's x axis or row key is
 * (message bytes, a pattern's quantity such as "subsequent", a rank count, a matrix
 * size); <unit> is usec, sec, tps (transactions per second) or the like.
 * Series: "mpich", "nbrma-blocking", "nbrma-nonblocking", "nbrma-nonblocking+aaar"
 * (access_after_access_reorder on), and later ones (the progress group: "nbrma-inline",
 * "nbrma-thread", "mpich", "mpich-async", "ideal"; see progress.c; the notify group:
 * "nbrma-notify", see notify.c; the collectives group: "nbrma" and "nbrma-idle-window",
 * see collectives.c).
 * --thread-multiple starts MPI with MPI_Init_thread(MPI_THREAD_MULTIPLE) (and fails, exit
 * status 2, if MPI provides less), for the cost of thread safety (maint/bench_thread_cost.sh)
 * and for MPICH's asynchronous progress (MPICH_ASYNC_PROGRESS=1 needs it). A CHECK without a
 * benchmark covers every RESULT of that series in the job; one with a benchmark covers that
 * benchmark's rows only. Exit status 3 if a data check failed; an MPI error aborts
 * the job (status 2) naming the call, the source line and the step.
 *
 * bench_common.c defines what is declared below: the output lines, MPI error reports,
 * spending time, and the helpers more than one group uses (memory, --only, put patterns,
 * polling waits, BENCH_SYNC, rank 0's iteration loop, sample reports, windows).
 */
#ifndef NBRMA_BENCH_BENCH_H
#define NBRMA_BENCH_BENCH_H

#include <mpi.h>
#include <stddef.h>

#ifdef NBRMA_NONBLOCKING_SERIES
#include "nbrma.h"
#define BENCH_BLOCKING_SERIES "nbrma-blocking"
#elif defined(NBRMA_BENCH_OMPI)
/* "ompi-osc-<OMPI_MCA_osc>" (commas as '+'), or "ompi" (bench_common.c). */
const char *bench_ompi_series(void);
#define BENCH_BLOCKING_SERIES bench_ompi_series()
#else
#define BENCH_BLOCKING_SERIES "mpich"
#endif

struct bench_options {
    int quick;        /* --quick: the README's few-minutes run */
    int iterations;   /* --iterations N (> 0 overrides a group's own count) */
    double scale;     /* --scale X: multiplies the patterns' delays/work (default 1.0,
                         i.e. the paper's 1000 us) */
    const char *only; /* --only NAME[,NAME...]: run just these benchmarks of the group, or NULL */
    const char *skip; /* --skip NAME[,NAME...]: run none of these benchmarks, or NULL */
    int thread_multiple; /* --thread-multiple: MPI_Init_thread(MPI_THREAD_MULTIPLE) */
};

/* One group: collective over MPI_COMM_WORLD; returns 0, or 3 if a data check failed. */
typedef int (*bench_group_fn)(const struct bench_options *options);
int bench_latency(const struct bench_options *options);
int bench_patterns(const struct bench_options *options);
int bench_transactions(const struct bench_options *options);
int bench_lu(const struct bench_options *options);
int bench_reorder(const struct bench_options *options);
int bench_progress(const struct bench_options *options);
int bench_notify(const struct bench_options *options);
int bench_creation(const struct bench_options *options);
int bench_strided(const struct bench_options *options);
int bench_collectives(const struct bench_options *options);
int bench_bandwidth(const struct bench_options *options);
int bench_threads(const struct bench_options *options);

/* The rows a group reports (ROW lines, no MPI), for --list. */
void bench_list_latency(void);
void bench_list_patterns(void);
void bench_list_transactions(void);
void bench_list_lu(void);
void bench_list_reorder(void);
void bench_list_progress(void);
void bench_list_notify(void);
void bench_list_creation(void);
void bench_list_strided(void);
void bench_list_collectives(void);
void bench_list_bandwidth(void);
void bench_list_threads(void);

/* Output (any rank may call; lines are flushed at once). */
void bench_result(const char *series, const char *benchmark, const char *parameter, double value,
                  const char *unit);
void bench_check(const char *series, const char *benchmark /* or NULL */, int ok);
void bench_row(const char *benchmark, const char *parameter, const char *unit);

/* What is running, for error messages ("<series> <benchmark>"). */
void bench_set_step(const char *series, const char *benchmark);

/* Any MPI error: name the call, file:line and the step, MPI's message; MPI_Abort(2). */
void bench_check_mpi(int rc, const char *call, const char *file, int line);
#define BENCH_MPI(call) bench_check_mpi((call), #call, __FILE__, __LINE__)

/* Busy computation for about `usec` microseconds (calibrated, no MPI calls), and a
 * sleep that leaves the core to the other ranks (oversubscribed patterns). */
void bench_compute(double usec);
void bench_sleep(double usec);

/* Busy computation (the same loop, no MPI calls) until `usec` microseconds of wall time have
 * passed: work of a known duration however loaded the machine is (the progress group). */
void bench_spin(double usec);

/* ---- Helpers the groups share (bench_common.c) ---- */

/* malloc, or "<group>: out of memory" on stderr and MPI_Abort(2). */
void *bench_malloc(const char *group, size_t bytes);

/* 1 when --only is unset or names `benchmark` (one of its comma-separated names), and
 * --skip does not name it. */
int bench_selected(const struct bench_options *options, const char *benchmark);

/* A group's prologue: this rank and the job size (bench_main.c has checked the ranks); an
 * --only naming none of the `count` names: rank 0 says so, every rank exits 1 (usage). */
void bench_start_group(const char *group, const struct bench_options *options,
                       const char *const *names, int count, int *rank, int *size);

/* The byte a put of iteration `iteration` carries; `salt` tells an iteration's puts apart. */
unsigned char bench_stamp(int iteration, int salt);

/* 1 when the `bytes` bytes at p all equal `value`. */
int bench_all_equal(const unsigned char *p, int bytes, unsigned char value);

/* qsort comparison of doubles, ascending. */
int bench_compare_doubles(const void *a, const void *b);

/* Wait polling MPI_Test: bench_sleep(sleep_usec) between polls, sched_yield if it is 0. */
void bench_wait_polling(MPI_Request *request, double sleep_usec);

/* MPI_Wait, unless the request is MPI_REQUEST_NULL (a blocking call's, see BENCH_SYNC). */
void bench_finish(MPI_Request *request);

/* One synchronization call: the nonblocking twin (sets *request) if `nonblocking`, else the
 * blocking call, leaving *request = MPI_REQUEST_NULL; bench_finish completes either. The
 * mpich build compiles the blocking call only (it has no MPIX_Win_i*). */
#ifdef NBRMA_NONBLOCKING_SERIES
#define BENCH_SYNC(nonblocking, request, blocking_call, nonblocking_call) \
    do {                                                                  \
        if (nonblocking) {                                                \
            BENCH_MPI(nonblocking_call);                                  \
        } else {                                                          \
            BENCH_MPI(blocking_call);                                     \
            *(request) = MPI_REQUEST_NULL;                                \
        }                                                                 \
    } while (0)
#else
#define BENCH_SYNC(nonblocking, request, blocking_call, nonblocking_call) \
    do {                                                                  \
        (void)(nonblocking);                                              \
        BENCH_MPI(blocking_call);                                         \
        *(request) = MPI_REQUEST_NULL;                                    \
    } while (0)
#endif

/* Collective iteration boundary (MPI_Iallreduce, polled as bench_wait_polling): the
 * maximum of the ranks' `want_more`. */
int bench_boundary(int want_more, double sleep_usec);

/* Iterations driven by rank 0: `warmup` untimed ones, then timed ones until `total` ran
 * or `budget` seconds of timed ones passed. Initialize total, warmup and budget. */
struct bench_loop {
    int i, total, warmup;
    double start, budget;
};

/* Collective, every rank once an iteration: 1 with l->i the next iteration (from 1),
 * 0 when rank 0 stops (a bench_boundary with that sleep between polls). */
int bench_loop_next(struct bench_loop *l, int rank, double sleep_usec);

/* The timed iterations that ran (the loop's count minus warm-up). */
int bench_loop_timed(const struct bench_loop *l);

/* Index of the current iteration among the timed ones, or -1 (warm-up, or >= capacity). */
int bench_loop_slot(const struct bench_loop *l, int capacity);

/* Rank 0: for each row k < count, the `timed` samples (usec) at samples + k * stride:
 * "# ... median, min, max" (sorts them), then RESULT with their mean. */
void bench_report_samples(const char *series, const char *benchmark, const char *const *params,
                          int count, double *samples, int stride, int timed);

/* Collective MPI_Win_allocate over comm, with info `key`="true" (none if NULL), errors
 * returned (so BENCH_MPI reports them). */
void bench_win_allocate(MPI_Aint bytes, int disp_unit, const char *key, MPI_Comm comm, void *base,
                        MPI_Win *win);

#endif
