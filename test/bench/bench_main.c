/*
 * bench_main.c — the program of nbrma-bench: runs one benchmark group per job.
 *
 * Built twice from the same sources (see bench.h): test/bench/bench_nbrma on nbrma,
 * test/bench/bench_mpich on MPICH's own RMA; a third time, test/bench/bench_ompi on Open
 * MPI, where configure finds it. This file parses the options, starts
 * MPI, checks the job has the ranks the group needs, runs the group and turns its
 * verdict into the exit status:
 *   0  every data check passed
 *   1  bad usage
 *   2  too few ranks, or an MPI error (bench_check_mpi aborts the job)
 *   3  a data check failed on some rank
 * Rank 0 first prints comment lines saying what runs ("# <group>: ..."), and the nbrma
 * build "# nbrma active: yes|NO" (nbrma-bench reports a NO: the binary would then
 * measure MPICH twice) and, at the end, "# nbrma counters on rank 0: ..."; the Open MPI
 * build "# MPI library: <MPI_Get_library_version's first line>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

struct group {
    const char *name;
    bench_group_fn run;
    void (*list)(void);
    int ranks; /* the ranks it needs */
};

static const struct group groups[] = {
    {"latency", bench_latency, bench_list_latency, 2},
    {"patterns", bench_patterns, bench_list_patterns, 3},
    {"reorder", bench_reorder, bench_list_reorder, 3},
    {"transactions", bench_transactions, bench_list_transactions, 4},
    {"lu", bench_lu, bench_list_lu, 4},
    {"progress", bench_progress, bench_list_progress, 3},
    {"notify", bench_notify, bench_list_notify, 3},
    {"creation", bench_creation, bench_list_creation, 4},
    {"strided", bench_strided, bench_list_strided, 2},
    {"collectives", bench_collectives, bench_list_collectives, 2},
    {"bandwidth", bench_bandwidth, bench_list_bandwidth, 2},
    {"threads", bench_threads, bench_list_threads, 2},
};
#define NUM_GROUPS ((int)(sizeof groups / sizeof groups[0]))

static void usage(FILE *to) {
    fprintf(to,
            "usage: mpiexec -n RANKS bench_{nbrma,mpich,ompi} --group G [--quick]\n"
            "           [--iterations N] [--scale X] [--only NAME[,NAME...]]\n"
            "           [--skip NAME[,NAME...]] [--thread-multiple]\n"
            "       bench_{nbrma,mpich,ompi} --list --group G\n"
            "  --group G        latency (2 ranks), patterns (3), reorder (3),\n"
            "                   transactions (4), lu (4), progress (3), notify (3),\n"
            "                   creation (4), strided (2), collectives (2), bandwidth (2)\n"
            "                   or threads (2, with --thread-multiple)\n"
            "  --quick          the short run (a fraction of the iterations and time budget)\n"
            "  --iterations N   N timed iterations wherever a benchmark counts them (no time\n"
            "                   budget)\n"
            "  --scale X        multiply the patterns' delays and work (default 1: 1000 us)\n"
            "  --only NAMES     run only these benchmarks of the group (comma separated)\n"
            "  --skip NAMES     run none of these benchmarks (comma separated)\n"
            "  --thread-multiple  start MPI with MPI_Init_thread(MPI_THREAD_MULTIPLE) (exit\n"
            "                   status 2 if MPI provides less)\n"
            "  --list           print the rows \"ROW <benchmark> <parameter> <unit>\" the group\n"
            "                   reports, in order, and exit (no MPI, no mpiexec needed)\n"
            "Output: RESULT <series> <benchmark> <parameter> <value> <unit>,\n"
            "        CHECK <series> ok|FAILED [<benchmark>], # comments.\n");
}

static const struct group *find_group(const char *name) {
    for (int g = 0; g < NUM_GROUPS; g++)
        if (strcmp(groups[g].name, name) == 0) return &groups[g];
    return NULL;
}

/* The thread level MPI runs at (MPI_Query_thread), without its MPI_THREAD_ prefix. */
static const char *thread_level_name(void) {
    int level = MPI_THREAD_SINGLE;
    BENCH_MPI(MPI_Query_thread(&level));
    return level == MPI_THREAD_MULTIPLE     ? "MULTIPLE"
           : level == MPI_THREAD_SERIALIZED ? "SERIALIZED"
           : level == MPI_THREAD_FUNNELED   ? "FUNNELED"
                                            : "SINGLE";
}

/* A positive number, all of the argument. */
static int parse_number(const char *text, double *value) {
    char *end = NULL;
    *value = strtod(text, &end);
    return end != text && *end == '\0' && *value > 0.0;
}

int main(int argc, char **argv) {
    struct bench_options options = {.quick = 0,
                                    .iterations = 0,
                                    .scale = 1.0,
                                    .only = NULL,
                                    .skip = NULL,
                                    .thread_multiple = 0};
    const char *group_name = NULL;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        double number = 0.0;
        if (strcmp(arg, "--quick") == 0) {
            options.quick = 1;
        } else if (strcmp(arg, "--thread-multiple") == 0) {
            options.thread_multiple = 1;
        } else if (strcmp(arg, "--list") == 0) {
            list = 1;
        } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (value && strcmp(arg, "--group") == 0) {
            group_name = value;
            i++;
        } else if (value && strcmp(arg, "--only") == 0) {
            options.only = value;
            i++;
        } else if (value && strcmp(arg, "--skip") == 0) {
            options.skip = value;
            i++;
        } else if (value && strcmp(arg, "--iterations") == 0) {
            if (!parse_number(value, &number) || number != (double)(int)number) {
                fprintf(stderr, "bench: --iterations needs a positive integer, not '%s'\n", value);
                return 1;
            }
            options.iterations = (int)number;
            i++;
        } else if (value && strcmp(arg, "--scale") == 0) {
            if (!parse_number(value, &number)) {
                fprintf(stderr, "bench: --scale needs a positive number, not '%s'\n", value);
                return 1;
            }
            options.scale = number;
            i++;
        } else {
            fprintf(stderr, "bench: unknown argument '%s'%s\n", arg,
                    value ? "" : " (or its value is missing)");
            usage(stderr);
            return 1;
        }
    }
    if (!group_name) {
        fprintf(stderr, "bench: --group is required\n");
        usage(stderr);
        return 1;
    }
    const struct group *group = find_group(group_name);
    if (!group) {
        fprintf(stderr, "bench: unknown group '%s'\n", group_name);
        usage(stderr);
        return 1;
    }
    if (list) {
        group->list();
        return 0;
    }

    int provided = MPI_THREAD_SINGLE;
    if (options.thread_multiple)
        BENCH_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    else
        BENCH_MPI(MPI_Init(&argc, &argv));
    int rank, size;
    BENCH_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    BENCH_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (options.thread_multiple && provided != MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            fprintf(stderr,
                    "bench: --thread-multiple: MPI provides thread level %d, not "
                    "MPI_THREAD_MULTIPLE\n",
                    provided);
        MPI_Finalize();
        return 2;
    }
    if (size < group->ranks) {
        if (rank == 0)
            fprintf(stderr, "bench: group %s needs %d ranks (mpiexec -n %d), not %d\n", group->name,
                    group->ranks, group->ranks, size);
        MPI_Finalize();
        return 2;
    }
    bench_compute(1.0); /* calibrate the busy loop now, outside any timed region */

    if (rank == 0) {
        printf("# %s: %d ranks, %s run%s%s%s, scale %g, blocking series %s, MPI_THREAD_%s\n",
               group->name, size, options.quick ? "quick" : "full",
               options.iterations > 0 ? ", iterations fixed" : "", options.only ? ", only " : "",
               options.only ? options.only : "", options.scale, BENCH_BLOCKING_SERIES,
               thread_level_name());
#ifdef NBRMA_NONBLOCKING_SERIES
        printf("# nbrma active: %s\n", nbrma_is_active() ? "yes" : "NO");
#endif
#ifdef NBRMA_BENCH_OMPI
        char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
        int length = 0;
        BENCH_MPI(MPI_Get_library_version(version, &length));
        version[strcspn(version, "\n")] = '\0';
        printf("# MPI library: %s\n", version);
#endif
        fflush(stdout);
    }
    bench_set_step(group->name, "(group)");
    int status = group->run(&options);
    int worst = 0;
    bench_set_step(group->name, "(verdict)");
    BENCH_MPI(MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));

#ifdef NBRMA_NONBLOCKING_SERIES
    if (rank == 0) {
        unsigned long long epochs = 0, operations = 0, grants = 0;
        if (nbrma_get_counter("epochs_completed", &epochs) == MPI_SUCCESS &&
            nbrma_get_counter("rma_ops", &operations) == MPI_SUCCESS &&
            nbrma_get_counter("lock_grants", &grants) == MPI_SUCCESS)
            printf(
                "# nbrma counters on rank 0: epochs_completed=%llu rma_ops=%llu "
                "lock_grants=%llu\n",
                epochs, operations, grants);
        fflush(stdout);
    }
#endif
    MPI_Finalize();
    return worst == 0 ? 0 : 3;
}
