/*
 * nbrma.h — public interface of nbrma, the nonblocking-epoch RMA subsystem for MPICH.
 *
 * Include after <mpi.h>. Every function here is also callable from C++.
 * Link with -lnbrma before MPICH (mpicc.mpich app.c -lnbrma) or LD_PRELOAD libnbrma.so.
 */
#ifndef NBRMA_H
#define NBRMA_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NBRMA_VERSION_MAJOR 0
#define NBRMA_VERSION_MINOR 1

/* ---- Nonblocking passive-target synchronization (SC14 §V) -------------------------
 * Each has the arguments of its blocking twin plus an MPI_Request *. Opening calls
 * (ilock, ilock_all) return an already-complete request; closing calls (iunlock,
 * iunlock_all) and flushes return a request that completes through MPI_Wait/MPI_Test. */
int MPIX_Win_ilock(int lock_type, int rank, int assert, MPI_Win win, MPI_Request *request);
int MPIX_Win_iunlock(int rank, MPI_Win win, MPI_Request *request);
int MPIX_Win_ilock_all(int assert, MPI_Win win, MPI_Request *request);
int MPIX_Win_iunlock_all(MPI_Win win, MPI_Request *request);
int MPIX_Win_iflush(int rank, MPI_Win win, MPI_Request *request);
int MPIX_Win_iflush_local(int rank, MPI_Win win, MPI_Request *request);
int MPIX_Win_iflush_all(MPI_Win win, MPI_Request *request);
int MPIX_Win_iflush_local_all(MPI_Win win, MPI_Request *request);

/* ---- Nonblocking active-target synchronization (SC14 §V) --------------------------
 * Same arguments as MPI_Win_fence/start/complete/post/wait plus an MPI_Request *.
 * istart and ipost return an already-complete request. icomplete's request completes
 * when every target of the access epoch has been told the epoch is done; iwait's when
 * every origin of the exposure epoch has; ifence's when the fence's barrier has passed
 * (the epoch it closes is complete on every rank), without blocking the caller. */
int MPIX_Win_ifence(int assert, MPI_Win win, MPI_Request *request);
int MPIX_Win_istart(MPI_Group group, int assert, MPI_Win win, MPI_Request *request);
int MPIX_Win_icomplete(MPI_Win win, MPI_Request *request);
int MPIX_Win_ipost(MPI_Group group, int assert, MPI_Win win, MPI_Request *request);
int MPIX_Win_iwait(MPI_Win win, MPI_Request *request);

/* ---- Notified RMA ------------------------------------------------------------------------
 * Every rank of a window has notification counters (64-bit, starting at 0), a number
 * it sets itself (local calls; ranks may differ; up to the window's capacity: info key
 * "nbrma_notify_max" or NBRMA_NOTIFY_MAX at creation, default 65536, the same on every
 * rank). MPIX_Put_notify, MPIX_Get_notify and MPIX_Accumulate_notify take the arguments
 * of MPI_Put, MPI_Get and MPI_Accumulate plus a counter index: the target's counter
 * grows by one once the data is in its window (put, accumulate) or has been read from
 * it (get: the target may overwrite). They need an access epoch like their twins (any
 * kind); a call that moves no data still notifies. The R forms' requests complete at
 * the origin as MPI_Rput/MPI_Rget's do. MPIX_Win_notify_ithreshold's request completes
 * once the local counter reaches `expected` (through MPI_Wait/Test and friends, mixed
 * with other requests; MPI_Cancel and MPI_Request_free work on it). An index outside
 * the target's counters (as the origin last read their number), a count outside
 * [0, capacity], or a threshold whose counter goes away (set_num shrinks below it)
 * gives MPIX_ERR_INVALID_NOTIFICATION; a threshold pending when its window is freed
 * completes with MPI_ERR_WIN. */
int MPIX_Win_notify_set_num(MPI_Win win, int n);
int MPIX_Win_notify_get_num(MPI_Win win, int *n);
int MPIX_Win_notify_get_value(MPI_Win win, int notification_idx, MPI_Count *value);
int MPIX_Win_notify_set_value(MPI_Win win, int notification_idx, MPI_Count value);
int MPIX_Win_notify_ithreshold(MPI_Win win, int notification_idx, MPI_Count expected,
                               MPI_Request *request);
int MPIX_Put_notify(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                    int target_rank, MPI_Aint target_disp, int target_count,
                    MPI_Datatype target_datatype, int notification_idx, MPI_Win win);
int MPIX_Rput_notify(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, int notification_idx, MPI_Win win,
                     MPI_Request *request);
int MPIX_Get_notify(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                    int target_rank, MPI_Aint target_disp, int target_count,
                    MPI_Datatype target_datatype, int notification_idx, MPI_Win win);
int MPIX_Rget_notify(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, int notification_idx, MPI_Win win,
                     MPI_Request *request);
int MPIX_Accumulate_notify(const void *origin_addr, int origin_count,
                           MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                           int target_count, MPI_Datatype target_datatype, MPI_Op op,
                           int notification_idx, MPI_Win win);

/* The error class of a bad notification index or count: a class of nbrma's own, added
 * with MPI_Add_error_class at MPI_Init (valid from then on). */
extern int nbrma_err_invalid_notification;
#define MPIX_ERR_INVALID_NOTIFICATION nbrma_err_invalid_notification

/* ---- Window info keys nbrma understands (besides MPI's own) ------------------------ */
#define NBRMA_INFO_ACCESS_AFTER_ACCESS_REORDER     "access_after_access_reorder"
#define NBRMA_INFO_ACCESS_AFTER_EXPOSURE_REORDER   "access_after_exposure_reorder"
#define NBRMA_INFO_EXPOSURE_AFTER_EXPOSURE_REORDER "exposure_after_exposure_reorder"
#define NBRMA_INFO_EXPOSURE_AFTER_ACCESS_REORDER   "exposure_after_access_reorder"
#define NBRMA_INFO_NOTIFY_MAX "nbrma_notify_max" /* capacity of the notification counters */
/* MPI-defined keys nbrma honours */
#define NBRMA_INFO_ACCUMULATE_ORDERING "accumulate_ordering"
#define NBRMA_INFO_ACCUMULATE_OPS      "accumulate_ops"
#define NBRMA_INFO_NO_LOCKS            "no_locks"
#define NBRMA_INFO_ALLOC_SHARED_NONCONTIG "alloc_shared_noncontig"

/* ---- Introspection -----------------------------------------------------------------
 * Process-wide counters, so a program (or a test) can prove its RMA ran on nbrma:
 * "windows_created", "epochs_opened", "epochs_completed", "rma_ops", "lock_grants", ...
 * The names and meanings are one table (src/mpi/counter_table.cpp), also listed through the
 * MPI tool interface as the performance variables "nbrma_<name>" with their descriptions
 * (doc/design.md §11). Returns MPI_SUCCESS, or MPI_ERR_ARG for an unknown
 * name. Safe from any thread. */
int nbrma_get_counter(const char *name, unsigned long long *value);

/* Nonzero when the calling process runs its RMA on nbrma (always 1 in libnbrma). */
int nbrma_is_active(void);

#ifdef __cplusplus
}
#endif

#endif /* NBRMA_H */
