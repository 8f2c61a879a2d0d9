/*
 * rmathreads.h — helpers for the threaded nbrma RMA tests: include after
 * rmatest.h.
 *
 *   TCHECK(cond, ...)   CHECK that may be used from several threads at once (the error
 *                       count is bumped atomically; lines may interleave).
 *   rt_init_multiple()  MPI_Init_thread(MPI_THREAD_MULTIPLE) + MPI_ERRORS_RETURN; aborts
 *                       if MPI provides less. An argument "thread" among the program's
 *                       arguments sets NBRMA_PROGRESS=thread first (nbrma's progress
 *                       thread beside the application's threads).
 *   rt_has_arg(argc, argv, word)  whether one of the arguments is `word`.
 *   rt_compute(s)       burns the CPU for s seconds without any MPI call (timed with
 *                       rmatest.h's rt_now()).
 *   rt_shared_page()    a page of memory shared by every process of MPI_COMM_WORLD
 *                       (POSIX shared memory, not an MPI window), for flags a process
 *                       reads while another computes without calling MPI. All the
 *                       suite's processes run on one machine (mpiexec on localhost).
 *
 * Build with -pthread.
 */
#ifndef RMATHREADS_H
#define RMATHREADS_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TCHECK(cond, ...)                                                               \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            int rt_n_ = __atomic_fetch_add(&rt_errs, 1, __ATOMIC_RELAXED);              \
            if (rt_n_ < rt_max_print) {                                                 \
                char rt_line_[768];                                                     \
                int rt_off_ = snprintf(rt_line_, sizeof(rt_line_),                      \
                                       "[%d] %s:%d: check failed: %s: ", rt_rank(),     \
                                       __FILE__, __LINE__, #cond);                      \
                if (rt_off_ > 0 && (size_t) rt_off_ < sizeof(rt_line_))                 \
                    snprintf(rt_line_ + rt_off_, sizeof(rt_line_) - (size_t) rt_off_,   \
                             __VA_ARGS__);                                              \
                fprintf(stderr, "%s\n", rt_line_);                                      \
                fflush(stderr);                                                         \
            }                                                                           \
        }                                                                               \
    } while (0)

static inline int rt_has_arg(int argc, char **argv, const char *word)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], word) == 0)
            return 1;
    return 0;
}

static inline void rt_init_multiple(int *argc, char ***argv)
{
    int provided = -1;
    if (rt_has_arg(*argc, *argv, "thread"))
        setenv("NBRMA_PROGRESS", "thread", 1);
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (provided != MPI_THREAD_MULTIPLE) {
        /* the rest of the program would be erroneous: report and stop */
        fprintf(stderr, "[%d] MPI_Init_thread provided %d, not MPI_THREAD_MULTIPLE\n",
                rt_rank(), provided);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static volatile unsigned long rt_sink;

/* Computes for `seconds` (no MPI call, no sleep: the CPU is busy). Returns the number
 * of work iterations done. */
static inline long rt_compute(double seconds)
{
    double end = rt_now() + seconds;
    long iters = 0;
    unsigned long x = rt_sink;
    while (rt_now() < end) {
        for (int i = 0; i < 1000; i++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
        iters++;
    }
    rt_sink = x;
    return iters;
}

/* A zeroed page of shared memory mapped by every process of MPI_COMM_WORLD (collective).
 * Rank 0 creates it under a name with its pid and unlinks it once everyone has it. */
static inline void *rt_shared_page(size_t size)
{
    char name[64];
    int pid = (int) getpid(), me = rt_rank(), fd;
    void *p;
    MPI_CHK(MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD));
    snprintf(name, sizeof(name), "/nbrma-test-%d", pid);
    if (me == 0) {
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, (off_t) size) != 0) {
            fprintf(stderr, "[0] shm_open/ftruncate %s: %s\n", name, strerror(errno));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me != 0) {
        fd = shm_open(name, O_RDWR, 0600);
        if (fd < 0) {
            fprintf(stderr, "[%d] shm_open %s: %s\n", me, name, strerror(errno));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "[%d] mmap %s: %s\n", me, name, strerror(errno));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    close(fd);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0)
        shm_unlink(name);
    return p;
}

/* Atomic accesses to an int flag (in a shared page or shared between threads). */
static inline int rt_flag_get(const volatile int *f)
{
    return __atomic_load_n(f, __ATOMIC_ACQUIRE);
}

static inline void rt_flag_set(volatile int *f, int v)
{
    __atomic_store_n(f, v, __ATOMIC_RELEASE);
}

/* Starts n threads running fn(&args[i]) and joins them. */
static inline void rt_run_threads(int n, void *(*fn)(void *), void *args, size_t arg_size)
{
    pthread_t tid[64];
    for (int i = 0; i < n; i++) {
        int rc = pthread_create(&tid[i], NULL, fn, (char *) args + (size_t) i * arg_size);
        if (rc != 0) {
            fprintf(stderr, "[%d] pthread_create: %s\n", rt_rank(), strerror(rc));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
}

#endif /* RMATHREADS_H */
