/*
 * lu.c — LU decomposition over GATS epochs (SC14 §VIII-B, Fig 13), group "lu" of
 * nbrma-bench (see bench.h). Runs on the driver's 4 ranks (bench_main.c requires them;
 * the code itself works with 2 or more).
 *
 * A is N × N, diagonally dominant (a_ij pseudo-random in [0,1), a_ii = N + a_ii), so
 * Gaussian elimination without pivoting is stable: no pivoting is done. Rows are
 * distributed 1D cyclically (row i on rank i mod P). Step k (k = 0 .. N-2): the owner
 * of row k broadcasts it one-sidedly — it PUTS the row's entries k..N-1 into every other
 * rank's window (a GATS epoch: MPI_Win_start on the others, one put each,
 * MPI_Win_complete; the others MPI_Win_post / MPI_Win_wait toward the owner) — and every
 * rank updates its rows below k with it (l_ik = a_ik / a_kk stored in place of a_ik,
 * a_ij -= l_ik a_kj). Two pivot slots in the window alternate, so the broadcast of
 * row k+1 can proceed while row k is in use.
 *
 * Pipeline (all series): at step k the owner of row k+1 first updates that row, opens
 * the epoch for row k+1 and puts it; the others open their exposure for it; then
 * everyone does the trailing update with row k (the computation is overlapped with
 * the epoch of row k+1), and only then the epoch is finished:
 *   blocking (mpich, nbrma-blocking): MPI_Win_start, puts, [update], MPI_Win_complete;
 *       MPI_Win_post, [update], MPI_Win_wait. The overlap is inside the epoch, so the
 *       owner's update delays the others' wait (the paper's Late Complete).
 *   nbrma-nonblocking: MPIX_Win_istart, puts, MPIX_Win_icomplete, [update], MPI_Wait;
 *       MPIX_Win_ipost, MPIX_Win_iwait, [update], MPI_Wait: the epoch is closed before
 *       the update. nbrma has no progress thread, so the update runs in chunks of rows
 *       (65536 matrix elements, some tens of us) with an MPI_Testall on the pending
 *       requests between them (what an application does to progress a nonblocking
 *       operation).
 * Reported: time to solution, RESULT <series> lu <N> <seconds> sec = from a barrier
 * before step 0 to the last rank's end of the factorization (the node's one clock),
 * the mean of the paper's 3 runs (fewer when 3 would take over 1 s with --quick, 30 s
 * otherwise; MPICH's runs are slow on an oversubscribed node).
 * N: 256 and 512 with --quick, also 1024 and 2048 otherwise (the paper's 8k and 16k on
 * hundreds of cores would take far too long on two); --iterations is not used.
 *
 * Check: ‖A − LU‖_F / ‖A‖_F < 1e-12 with L and U gathered on every rank (each
 * computes its own rows of LU); CHECK <series> ok|FAILED lu.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum style { BLOCKING, NONBLOCKING };

/* The quick sizes are the first full ones, so --list's rows serve both modes. */
static const int sizes[] = {256, 512, 1024, 2048};
#define NUM_QUICK 2
#define NUM_SIZES 4
/* nonblocking: about this many matrix elements updated between two MPI_Testall
 * (some 20-40 us of work) */
#define CHUNK_ELEMENTS 65536

/* The matrix, entry by entry, the same on every rank. */
static double a_entry(int i, int j, int n) {
    unsigned long long x = (unsigned long long)i * 2654435761ULL +
                           (unsigned long long)j * 40503ULL + 0x9E3779B97F4A7C15ULL;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    double v = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
    return i == j ? n + v : v;
}

struct lu_run {
    const char *series;
    enum style style;
    int rank, size, n;
    int local_rows; /* rows i with i % size == rank */
    double *rows;   /* local_rows × n, local row r is global row rank + r*size */
    double *slots;  /* the window: 2 pivot slots of n doubles */
    MPI_Win win;
    MPI_Group *group_of;    /* {r} */
    MPI_Group *others_of;   /* everyone but r */
    MPI_Request pending[3]; /* the epoch in progress (opening, closing) */
    MPI_Status statuses[3];
    int npending;
};

static int owner(const struct lu_run *r, int row) { return row % r->size; }
static double *local_row(const struct lu_run *r, int row) {
    return r->rows + (size_t)(row / r->size) * r->n;
}

/* Update global row i (owned here) with pivot row `pivot` (entries k..n-1 valid). */
static void update_row(const struct lu_run *r, int i, int k, const double *pivot) {
    double *a = local_row(r, i);
    double l = a[k] / pivot[k];
    a[k] = l;
    for (int j = k + 1; j < r->n; j++) a[j] -= l * pivot[j];
}

static void progress(struct lu_run *r) {
    if (r->npending == 0) return;
    int flag;
    BENCH_MPI(MPI_Testall(r->npending, r->pending, &flag, r->statuses));
    if (flag) r->npending = 0;
}

/* Trailing update of all local rows > k except `skip`, with pivot row k. */
static void trailing_update(struct lu_run *r, int k, const double *pivot, int skip) {
    int count = 0, chunk = CHUNK_ELEMENTS / r->n > 0 ? CHUNK_ELEMENTS / r->n : 1;
    for (int i = r->rank; i < r->n; i += r->size) {
        if (i <= k || i == skip) continue;
        update_row(r, i, k, pivot);
        if (r->style == NONBLOCKING && ++count % chunk == 0) progress(r);
    }
}

/* Open the epoch that delivers row `row` (already final on its owner). */
static void open_epoch(struct lu_run *r, int row) {
    int o = owner(r, row);
    int slot = row % 2;
    r->npending = 0;
    if (r->rank == o) {
        double *a = local_row(r, row);
        int count = r->n - row;
#ifdef NBRMA_NONBLOCKING_SERIES
        if (r->style == NONBLOCKING)
            BENCH_MPI(MPIX_Win_istart(r->others_of[o], 0, r->win, &r->pending[r->npending++]));
        else
#endif
            BENCH_MPI(MPI_Win_start(r->others_of[o], 0, r->win));
        for (int p = 0; p < r->size; p++) {
            if (p == o) continue;
            BENCH_MPI(MPI_Put(a + row, count, MPI_DOUBLE, p, (MPI_Aint)slot * r->n + row, count,
                              MPI_DOUBLE, r->win));
        }
#ifdef NBRMA_NONBLOCKING_SERIES
        if (r->style == NONBLOCKING)
            BENCH_MPI(MPIX_Win_icomplete(r->win, &r->pending[r->npending++]));
#endif
    } else {
#ifdef NBRMA_NONBLOCKING_SERIES
        if (r->style == NONBLOCKING) {
            BENCH_MPI(MPIX_Win_ipost(r->group_of[o], 0, r->win, &r->pending[r->npending++]));
            BENCH_MPI(MPIX_Win_iwait(r->win, &r->pending[r->npending++]));
            return;
        }
#endif
        BENCH_MPI(MPI_Win_post(r->group_of[o], 0, r->win));
    }
}

/* Finish the epoch of row `row`: afterwards the row is in every rank's slot. */
static void finish_epoch(struct lu_run *r, int row) {
    if (r->style == NONBLOCKING) {
        if (r->npending > 0) BENCH_MPI(MPI_Waitall(r->npending, r->pending, r->statuses));
        r->npending = 0;
        return;
    }
    if (r->rank == owner(r, row))
        BENCH_MPI(MPI_Win_complete(r->win));
    else
        BENCH_MPI(MPI_Win_wait(r->win));
}

static const double *pivot_row(const struct lu_run *r, int row) {
    return r->rank == owner(r, row) ? local_row(r, row) : r->slots + (size_t)(row % 2) * r->n;
}

/* Collective: factorizes, returns the time to solution (rank 0) and checks. */
static int factorize(struct lu_run *r, double *seconds, int check) {
    int n = r->n;
    for (int i = r->rank; i < n; i += r->size)
        for (int j = 0; j < n; j++) local_row(r, i)[j] = a_entry(i, j, n);
    memset(r->slots, 0, 2 * (size_t)n * sizeof(double));
    BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();

    open_epoch(r, 0); /* row 0 is final from the start */
    finish_epoch(r, 0);
    for (int k = 0; k < n - 1; k++) {
        const double *pivot = pivot_row(r, k);
        int next = k + 1;
        int skip = -1;
        if (next < n - 1) {
            if (r->rank == owner(r, next)) {
                update_row(r, next, k, pivot); /* look-ahead: row k+1 is final now */
                skip = next;
            }
            open_epoch(r, next);
        } else if (r->rank == owner(r, next)) {
            update_row(r, next, k, pivot);
            skip = next;
        }
        trailing_update(r, k, pivot, skip);
        if (next < n - 1) finish_epoch(r, next);
    }
    double t1 = MPI_Wtime();
    double times[2] = {-t0, t1}, extremes[2] = {0, 0};
    BENCH_MPI(MPI_Reduce(times, extremes, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    *seconds = extremes[1] + extremes[0];
    if (!check) return 1;

    /* Check: every rank gets all rows, computes its rows of L·U. */
    double *all = bench_malloc("lu", (size_t)n * n * sizeof(double));
    int per = r->local_rows; /* n % size == 0 (checked) */
    double *gathered = bench_malloc("lu", (size_t)n * n * sizeof(double));
    BENCH_MPI(
        MPI_Allgather(r->rows, per * n, MPI_DOUBLE, gathered, per * n, MPI_DOUBLE, MPI_COMM_WORLD));
    for (int p = 0; p < r->size; p++)
        for (int q = 0; q < per; q++)
            memcpy(all + (size_t)(p + q * r->size) * n, gathered + ((size_t)p * per + q) * n,
                   (size_t)n * sizeof(double));
    free(gathered);
    double err = 0, norm = 0;
    double *lu_row = bench_malloc("lu", (size_t)n * sizeof(double));
    for (int i = r->rank; i < n; i += r->size) {
        const double *li = all + (size_t)i * n;
        for (int j = 0; j < n; j++) lu_row[j] = 0;
        for (int m = 0; m <= i; m++) {
            double l = m == i ? 1.0 : li[m];
            const double *um = all + (size_t)m * n;
            for (int j = m; j < n; j++) lu_row[j] += l * um[j];
        }
        for (int j = 0; j < n; j++) {
            double a = a_entry(i, j, n), d = a - lu_row[j];
            err += d * d;
            norm += a * a;
        }
    }
    free(lu_row);
    free(all);
    double sums[2] = {err, norm}, totals[2];
    BENCH_MPI(MPI_Allreduce(sums, totals, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    double residual = sqrt(totals[0]) / sqrt(totals[1]);
    int ok = residual < 1e-12;
    if (r->rank == 0) {
        printf("# %s lu %d: residual ||A-LU||_F/||A||_F = %.3e\n", r->series, n, residual);
        if (!ok)
            fprintf(stderr, "lu: %s N=%d: residual %.3e is too large\n", r->series, n, residual);
    }
    return ok;
}

/* Collective: the paper's 3 runs (mean reported), fewer when they would exceed the
 * budget; the first run's factors are checked. */
static int run_series(struct lu_run *r, double budget) {
    char step[32];
    snprintf(step, sizeof step, "lu N=%d", r->n);
    bench_set_step(r->series, step);
    double total = 0, seconds = 0;
    int runs = 0, ok = 1, more = 1;
    while (more) {
        ok = factorize(r, &seconds, runs == 0) && ok;
        total += seconds;
        runs++;
        more = runs < 3 && total / runs * (runs + 1) <= budget;
        BENCH_MPI(MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD));
    }
    if (r->rank == 0) {
        char param[16];
        snprintf(param, sizeof param, "%d", r->n);
        printf("# %s lu %d: mean of %d run(s)\n", r->series, r->n, runs);
        bench_check(r->series, "lu", ok);
        bench_result(r->series, "lu", param, total / runs, "sec");
    }
    return ok;
}

static const char *const benchmark_names[] = {"lu"};

int bench_lu(const struct bench_options *options) {
    int rank, size;
    bench_start_group("lu", options, benchmark_names, 1, &rank, &size);
    int num_sizes = options->quick ? NUM_QUICK : NUM_SIZES;
    double budget = options->quick ? 1.0 : 30.0; /* seconds of runs of one N and series */
    MPI_Group world_group;
    BENCH_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    MPI_Group *group_of = bench_malloc("lu", size * sizeof(MPI_Group));
    MPI_Group *others_of = bench_malloc("lu", size * sizeof(MPI_Group));
    for (int p = 0; p < size; p++) {
        BENCH_MPI(MPI_Group_incl(world_group, 1, &p, &group_of[p]));
        BENCH_MPI(MPI_Group_excl(world_group, 1, &p, &others_of[p]));
    }
    if (rank == 0) {
        printf(
            "# lu: %d ranks, 1D cyclic rows, GATS put broadcast of each pivot row, no "
            "pivoting (diagonally dominant A)\n",
            size);
        fflush(stdout);
    }
    int ok = 1;
    for (int s = 0; s < num_sizes; s++) {
        int n = sizes[s];
        if (n % size != 0) {
            if (rank == 0) printf("# lu N=%d skipped: not a multiple of %d ranks\n", n, size);
            continue;
        }
        struct lu_run r = {
            .rank = rank, .size = size, .n = n, .group_of = group_of, .others_of = others_of};
        r.local_rows = n / size;
        r.rows = bench_malloc("lu", (size_t)r.local_rows * n * sizeof(double));
        bench_set_step("setup", "lu window");
        bench_win_allocate(2 * (MPI_Aint)n * sizeof(double), sizeof(double), NULL, MPI_COMM_WORLD,
                           &r.slots, &r.win);
        r.series = BENCH_BLOCKING_SERIES;
        r.style = BLOCKING;
        ok &= run_series(&r, budget);
#ifdef NBRMA_NONBLOCKING_SERIES
        r.series = "nbrma-nonblocking";
        r.style = NONBLOCKING;
        ok &= run_series(&r, budget);
#endif
        bench_set_step("teardown", "lu window");
        BENCH_MPI(MPI_Win_free(&r.win));
        free(r.rows);
    }
    for (int p = 0; p < size; p++) {
        BENCH_MPI(MPI_Group_free(&group_of[p]));
        BENCH_MPI(MPI_Group_free(&others_of[p]));
    }
    free(group_of);
    free(others_of);
    BENCH_MPI(MPI_Group_free(&world_group));
    return ok ? 0 : 3;
}

void bench_list_lu(void) {
    /* --list has no --quick: all sizes are rows (a quick run fills the first two). */
    char param[16];
    for (int s = 0; s < NUM_SIZES; s++) {
        snprintf(param, sizeof param, "%d", sizes[s]);
        bench_row("lu", param, "sec");
    }
}
