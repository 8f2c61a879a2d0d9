/*
 * safe_memory: MPI_Win_create and MPI_Win_attach leave the application's memory as the
 * application made it. With the default settings nbrma never moves, remaps, unlocks or
 * splits the pages of a window over user memory, and installs no signal handler; with
 * the opt-in (the info key nbrma_share_user_memory=true) it still refuses to move locked
 * and huge-page memory. In every case the left neighbour's MPI_Put of 4 KiB must arrive.
 *
 *   registered    a buffer registered with the kernel as an io_uring fixed buffer (the
 *                 kernel pins its pages, as an RDMA registration does): after the peer's
 *                 put, a fixed write of the buffer to a memfd writes the bytes that were
 *                 put (a moved page would leave the registration on the old frames);
 *   mlock         VmLck of /proc/self/status is what it was before the window (default
 *                 and opt-in);
 *   neighbour     a second thread read()s from /dev/zero into the other half of the
 *                 window's page while windows are created and freed over the first
 *                 half: no read fails (EFAULT while a page moves);
 *   huge pages    madvise(MADV_HUGEPAGE) memory keeps its AnonHugePages (default and
 *                 opt-in), where the kernel gave huge pages at all;
 *   signals       no SIGSEGV handler in libnbrma after all of the default windows.
 *
 * Opted-in windows over locked or huge-page memory must not be counted as shared
 * (user_memory_shared). Parts the machine cannot do (io_uring disabled, no huge pages,
 * RLIMIT_MEMLOCK too small) are reported on stdout and left out.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "rmatest.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>

#define PUT_BYTES 4096

static int me, np;

/* Creates a window over [base, base + size) (create, or dynamic + attach), lets the left
 * neighbour put PUT_BYTES of its pattern at its start, checks them, frees the window. */
static void window_round(unsigned char *base, MPI_Aint size, int dynamic, const char *opt_in,
                         const char *what)
{
    MPI_Info info = MPI_INFO_NULL;
    MPI_Win win;
    MPI_Aint bases[256];
    unsigned char pattern[PUT_BYTES];
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    if (opt_in) {
        MPI_CHK(MPI_Info_create(&info));
        MPI_CHK(MPI_Info_set(info, "nbrma_share_user_memory", opt_in));
    }
    rt_win_over(base, size, 1, dynamic, info, bases, &win);
    if (info != MPI_INFO_NULL) MPI_CHK(MPI_Info_free(&info));
    for (int i = 0; i < PUT_BYTES; i++) pattern[i] = (unsigned char) (me * 31 + i * 7 + 1);
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_CHK(MPI_Put(pattern, PUT_BYTES, MPI_BYTE, right, bases[right], PUT_BYTES, MPI_BYTE, win));
    MPI_CHK(MPI_Win_unlock(right, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
    int wrong = 0;
    for (int i = 0; i < PUT_BYTES; i++) wrong += base[i] != (unsigned char) (left * 31 + i * 7 + 1);
    CHECK(wrong == 0, "%s (%s): %d of %d bytes put by rank %d are wrong", what,
          dynamic ? "dynamic" : "create", wrong, PUT_BYTES, left);
    MPI_CHK(MPI_Win_unlock(me, win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (dynamic) MPI_CHK(MPI_Win_detach(win, base));
    MPI_CHK(MPI_Win_free(&win));
}

/* ------------------------------------------------------------ io_uring fixed buffer */
struct ring {
    int fd;
    unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
};

static int ring_open(struct ring *r)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    r->fd = (int) syscall(__NR_io_uring_setup, 4, &p);
    if (r->fd < 0) return -1;
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (sq_len < cq_len) sq_len = cq_len;
    unsigned char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                             r->fd, IORING_OFF_SQ_RING);
    r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
    if (sq == MAP_FAILED || r->sqes == MAP_FAILED || !(p.features & IORING_FEAT_SINGLE_MMAP)) {
        close(r->fd);
        return -1;
    }
    r->sq_tail = (unsigned *) (sq + p.sq_off.tail);
    r->sq_mask = (unsigned *) (sq + p.sq_off.ring_mask);
    r->sq_array = (unsigned *) (sq + p.sq_off.array);
    r->cq_head = (unsigned *) (sq + p.cq_off.head);
    r->cq_tail = (unsigned *) (sq + p.cq_off.tail);
    r->cq_mask = (unsigned *) (sq + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *) (sq + p.cq_off.cqes);
    return 0;
}

/* IORING_OP_WRITE_FIXED of registered buffer 0 ([buffer, buffer + length)) to fd at
 * offset 0; the completion's result (bytes written or -errno). */
static int ring_write_fixed(struct ring *r, int fd, const void *buffer, unsigned length)
{
    const unsigned tail = *r->sq_tail, index = tail & *r->sq_mask;
    struct io_uring_sqe *sqe = &r->sqes[index];
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = IORING_OP_WRITE_FIXED;
    sqe->fd = fd;
    sqe->addr = (uint64_t) (uintptr_t) buffer;
    sqe->len = length;
    sqe->buf_index = 0;
    r->sq_array[index] = index;
    __atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, r->fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
        return -errno;
    const unsigned head = *r->cq_head;
    if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE)) return -EAGAIN;
    const int result = r->cqes[head & *r->cq_mask].res;
    __atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
    return result;
}

static void registered_buffer(int dynamic)
{
    const size_t length = 64 * 1024;
    unsigned char *buffer = NULL;
    struct ring r;
    memset(&r, 0, sizeof r);
    r.fd = -1;
    int usable = posix_memalign((void **) &buffer, 4096, length) == 0 && ring_open(&r) == 0;
    struct iovec iov = { buffer, length };
    if (usable && syscall(__NR_io_uring_register, r.fd, IORING_REGISTER_BUFFERS, &iov, 1) != 0) {
        close(r.fd);
        usable = 0;
    }
    int all = 0;
    MPI_CHK(MPI_Allreduce(&usable, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
    if (!all) {
        if (me == 0) printf("registered: io_uring fixed buffers unavailable here, left out\n");
        if (usable) close(r.fd);
        free(buffer);
        return;
    }
    memset(buffer, 0xee, length);
    window_round(buffer, (MPI_Aint) length, dynamic, NULL, "registered");
    /* what the kernel's registration sees */
    const int file = memfd_create("safe_memory", MFD_CLOEXEC);
    CHECK(file >= 0, "memfd_create: %s", strerror(errno));
    const int written = ring_write_fixed(&r, file, buffer, PUT_BYTES);
    CHECK(written == PUT_BYTES, "fixed write returned %d", written);
    unsigned char seen[PUT_BYTES];
    CHECK(pread(file, seen, PUT_BYTES, 0) == PUT_BYTES, "pread: %s", strerror(errno));
    int differ = 0;
    for (int i = 0; i < PUT_BYTES; i++) differ += seen[i] != buffer[i];
    CHECK(differ == 0, "registered (%s): the fixed write sent %d of %d bytes differently from "
          "the buffer (the registration no longer sees the window's pages)",
          dynamic ? "dynamic" : "create", differ, PUT_BYTES);
    close(file);
    close(r.fd);
    free(buffer);
}

/* --------------------------------------------------------------------------- mlock */
static void locked_memory(int dynamic, const char *opt_in)
{
    const size_t length = 64 * 1024;
    unsigned char *buffer = NULL;
    int usable = posix_memalign((void **) &buffer, 4096, length) == 0;
    memset(buffer, 0, length);
    const long unlocked = rt_status_kib("VmLck");
    /* (AddressSanitizer makes mlock a no-op: nothing is locked then) */
    usable = usable && mlock(buffer, length) == 0 && rt_status_kib("VmLck") >= unlocked + 64;
    int all = 0;
    MPI_CHK(MPI_Allreduce(&usable, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
    if (!all) {
        if (me == 0 && !dynamic && !opt_in)
            printf("mlock: nothing locked here (RLIMIT_MEMLOCK, or a sanitizer), left out\n");
        munlock(buffer, length);
        free(buffer);
        return;
    }
    const long before = rt_status_kib("VmLck");
    const unsigned long long shared = rt_counter("user_memory_shared");
    window_round(buffer, (MPI_Aint) length, dynamic, opt_in, "mlock");
    const long after = rt_status_kib("VmLck");
    CHECK(after == before, "mlock (%s, %s): VmLck %ld kB before the window, %ld kB after",
          dynamic ? "dynamic" : "create", opt_in ? "opted in" : "default", before, after);
    CHECK(rt_counter("user_memory_shared") == shared,
          "mlock (%s, %s): locked memory was moved into shared pages",
          dynamic ? "dynamic" : "create", opt_in ? "opted in" : "default");
    munlock(buffer, length);
    free(buffer);
}

/* ---------------------------------------------------------------------- huge pages */
/* AnonHugePages of the mappings overlapping [low, high), in kB. */
static long huge_kib(uintptr_t low, uintptr_t high)
{
    FILE *smaps = fopen("/proc/self/smaps", "r");
    char line[512];
    long total = 0, kib = 0;
    int inside = 0;
    while (smaps && fgets(line, sizeof line, smaps)) {
        unsigned long first, last;
        if (sscanf(line, "%lx-%lx ", &first, &last) == 2)
            inside = first < high && low < last;
        else if (inside && sscanf(line, "AnonHugePages: %ld", &kib) == 1)
            total += kib;
    }
    if (smaps) fclose(smaps);
    return total;
}

static void huge_memory(int dynamic, const char *opt_in)
{
    const size_t huge = 2u << 20, length = 2 * huge;
    unsigned char *mapping = mmap(NULL, length + huge, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(mapping != MAP_FAILED, "mmap: %s", strerror(errno));
    if (mapping == MAP_FAILED) MPI_Abort(MPI_COMM_WORLD, 1);
    unsigned char *buffer = (unsigned char *) (((uintptr_t) mapping + huge - 1) & ~(huge - 1));
    madvise(buffer, length, MADV_HUGEPAGE);
    memset(buffer, 1, length);
    const uintptr_t low = (uintptr_t) buffer, high = low + length;
    const long before = huge_kib(low, high);
    int usable = before > 0, all = 0;
    MPI_CHK(MPI_Allreduce(&usable, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
    if (all) {
        const unsigned long long shared = rt_counter("user_memory_shared");
        window_round(buffer, (MPI_Aint) length, dynamic, opt_in, "huge pages");
        const long after = huge_kib(low, high);
        CHECK(after == before, "huge pages (%s, %s): AnonHugePages %ld kB before the window, "
              "%ld kB after", dynamic ? "dynamic" : "create", opt_in ? "opted in" : "default",
              before, after);
        CHECK(rt_counter("user_memory_shared") == shared,
              "huge pages (%s, %s): huge-page memory was moved into shared pages",
              dynamic ? "dynamic" : "create", opt_in ? "opted in" : "default");
    } else if (me == 0 && !dynamic && !opt_in) {
        printf("huge pages: the kernel gave no transparent huge pages, left out\n");
    }
    munmap(mapping, length + huge);
}

/* -------------------------------------------------------------- neighbouring thread */
static unsigned char *page_under_test;
static volatile int stop_reading;
static long failed_reads, good_reads;

static void *reader(void *unused)
{
    (void) unused;
    const int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    while (!__atomic_load_n(&stop_reading, __ATOMIC_ACQUIRE)) {
        if (read(zero, page_under_test + 2048, 2048) == 2048)
            good_reads++;
        else
            failed_reads++;
    }
    close(zero);
    return NULL;
}

static void neighbouring_thread(void)
{
    unsigned char *page = NULL;
    CHECK(posix_memalign((void **) &page, 4096, 4096) == 0, "posix_memalign failed");
    page_under_test = page;
    memset(page, 0, 4096);
    pthread_t thread;
    stop_reading = 0;
    failed_reads = good_reads = 0;
    CHECK(pthread_create(&thread, NULL, reader, NULL) == 0, "pthread_create failed");
    /* windows over the first half of the page, each with one put from the left */
    for (int round = 0; round < 40; round++) {
        MPI_Win win;
        const int right = (me + 1) % np, left = (me + np - 1) % np;
        const int value = me * 1000 + round;
        MPI_CHK(MPI_Win_create(page, 2048, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
        MPI_CHK(MPI_Put(&value, 1, MPI_INT, right, 0, 1, MPI_INT, win));
        MPI_CHK(MPI_Win_unlock(right, win));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        int got;
        memcpy(&got, page, sizeof got);
        CHECK(got == left * 1000 + round, "neighbour round %d: got %d", round, got);
        MPI_CHK(MPI_Win_free(&win));
    }
    __atomic_store_n(&stop_reading, 1, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);
    CHECK(failed_reads == 0, "neighbour: %ld of %ld reads into the window's page failed",
          failed_reads, failed_reads + good_reads);
    free(page);
}

int main(int argc, char **argv)
{
    rt_init_world(&argc, &argv, &me, &np);
    if (np > 256) MPI_Abort(MPI_COMM_WORLD, 1);

    for (int dynamic = 0; dynamic < 2; dynamic++) {
        registered_buffer(dynamic);
        locked_memory(dynamic, NULL);
        huge_memory(dynamic, NULL);
    }
    neighbouring_thread();

    struct sigaction current;
    Dl_info where;
    memset(&where, 0, sizeof where);
    CHECK(sigaction(SIGSEGV, NULL, &current) == 0, "sigaction failed");
    void *handler = (current.sa_flags & SA_SIGINFO) ? (void *) current.sa_sigaction
                                                    : (void *) current.sa_handler;
    if (handler != (void *) SIG_DFL && handler != (void *) SIG_IGN && dladdr(handler, &where))
        CHECK(!where.dli_fname || !strstr(where.dli_fname, "libnbrma"),
              "signals: the SIGSEGV handler is in %s", where.dli_fname);

    /* opted in: locked and huge-page memory still stay where they are */
    for (int dynamic = 0; dynamic < 2; dynamic++) {
        locked_memory(dynamic, "true");
        huge_memory(dynamic, "true");
    }
    return rt_finalize();
}
