/*
 * bench.h — what the benchmark groups of nbrma-bench share.
 *
 * One program, test/bench/bench_{nbrma,mpich}, built twice from the same sources:
 * bench_nbrma is linked with libnbrma (and defines NBRMA_NONBLOCKING_SERIES, so it
 * also runs the MPIX_Win_i* and reorder series), bench_mpich with MPICH alone (the
 * "mpich" series: MPICH 4.0.2's own RMA, blocking calls only). bench_main.c parses the
 * options and runs one group per job:
 *
 *   bench_{nbrma,mpich} --group latency|patterns|transactions|lu|reorder [--quick] [...]
 *   bench_{nbrma,mpich} --list --group G     the rows G reports, without MPI
 *
 * The driver (nbrma-bench) starts every group of both binaries under mpiexec.mpich,
 * with the ranks a group needs (latency 2, patterns 3, reorder 3, transactions 4, lu 4;
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
 * (access_after_access_reorder on), and later ones. A CHECK without a benchmark
 * covers every RESULT of that series in the job; one with a benchmark covers that
 * benchmark's rows only. Exit status 3 if a data check failed; an MPI error aborts
 * the job (status 2) naming the call, the source line and the step.
 */
#ifndef NBRMA_BENCH_BENCH_H
#define NBRMA_BENCH_BENCH_H

#include <mpi.h>

#ifdef NBRMA_NONBLOCKING_SERIES
#include "nbrma.h"
#define BENCH_BLOCKING_SERIES "nbrma-blocking"
#else
#define BENCH_BLOCKING_SERIES "mpich"
#endif

struct bench_options {
    int quick;         /* --quick: the README's few-minutes run */
    int iterations;    /* --iterations N (> 0 overrides a group's own count) */
    double scale;      /* --scale X: multiplies the patterns' delays/work (default 1.0,
                          i.e. the paper's 1000 us) */
    const char *only;  /* --only NAME: run just that benchmark of the group, or NULL */
};

/* One group: collective over MPI_COMM_WORLD; returns 0, or 3 if a data check failed. */
typedef int (*bench_group_fn)(const struct bench_options *options);
int bench_latency(const struct bench_options *options);
int bench_patterns(const struct bench_options *options);
int bench_transactions(const struct bench_options *options);
int bench_lu(const struct bench_options *options);
int bench_reorder(const struct bench_options *options);

/* The rows a group reports (ROW lines, no MPI), for --list. */
void bench_list_latency(void);
void bench_list_patterns(void);
void bench_list_transactions(void);
void bench_list_lu(void);
void bench_list_reorder(void);

/* Output (any rank may call; lines are flushed at once). */
void bench_result(const char *series, const char *benchmark, const char *parameter,
                  double value, const char *unit);
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

#endif
