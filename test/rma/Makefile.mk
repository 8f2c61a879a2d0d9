# MPI RMA test suite (owned by test/rma): programs run by test/rma/runtests under mpiexec.mpich.
# Non-recursive fragment included from the top Makefile.am; paths are relative to the top.

RMATEST_CPPFLAGS = -I$(top_srcdir)/include -I$(top_srcdir)/test/rma $(MPICH_CFLAGS)
RMATEST_LDADD = libnbrma.la $(MPICH_LIBS)

check_PROGRAMS += \
	test/rma/put_get_flavors \
	test/rma/nonblocking_sync \
	test/rma/large_count \
	test/rma/datatypes \
	test/rma/accumulate_ops \
	test/rma/atomicity \
	test/rma/accumulate_whole \
	test/rma/lock_fairness \
	test/rma/lock_at_once \
	test/rma/segment_reuse \
	test/rma/user_memory \
	test/rma/user_memory_churn \
	test/rma/safe_memory \
	test/rma/alloc_mem \
	test/rma/fd_limit \
	test/rma/settings_check \
	test/rma/error_messages \
	test/rma/oversubscribed_loop \
	test/rma/complete_requests \
	test/rma/unaligned_atomics \
	test/rma/many_pending \
	test/rma/mixed_requests \
	test/rma/errors \
	test/rma/on_nbrma \
	test/rma/win_attrs \
	test/rma/active_target \
	test/rma/gats_many \
	test/rma/exposures_ahead \
	test/rma/late_post \
	test/rma/collective_progress \
	test/rma/collective_forms \
	test/rma/ifence_chain \
	test/rma/reorder \
	test/rma/at_errors \
	test/rma/shared_progress \
	test/rma/ucx_errors \
	test/rma/ucx_allocated \
	test/rma/cross_memory_batches \
	test/rma/ucx_unreachable \
	test/rma/compat \
	test/rma/die_at \
	test/rma/cma_forbid \
	test/rma/cma_ptracer \
	test/rma/dynamic_many \
	test/rma/bad_input \
	test/rma/remote_completion \
	test/rma/threads_rma \
	test/rma/threads_requests \
	test/rma/progress_thread \
	test/rma/helper_life \
	test/rma/request_get_status \
	test/rma/notify

test_rma_put_get_flavors_SOURCES = test/rma/put_get_flavors.c
test_rma_put_get_flavors_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_put_get_flavors_LDADD = $(RMATEST_LDADD)

test_rma_nonblocking_sync_SOURCES = test/rma/nonblocking_sync.c
test_rma_nonblocking_sync_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_nonblocking_sync_LDADD = $(RMATEST_LDADD)

test_rma_large_count_SOURCES = test/rma/large_count.c
test_rma_large_count_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_large_count_LDADD = $(RMATEST_LDADD)

test_rma_datatypes_SOURCES = test/rma/datatypes.c
test_rma_datatypes_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_datatypes_LDADD = $(RMATEST_LDADD)

test_rma_accumulate_ops_SOURCES = test/rma/accumulate_ops.c
test_rma_accumulate_ops_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_accumulate_ops_LDADD = $(RMATEST_LDADD)

test_rma_atomicity_SOURCES = test/rma/atomicity.c
test_rma_atomicity_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_atomicity_LDADD = $(RMATEST_LDADD)

test_rma_accumulate_whole_SOURCES = test/rma/accumulate_whole.c
test_rma_accumulate_whole_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_accumulate_whole_LDADD = $(RMATEST_LDADD)

test_rma_lock_fairness_SOURCES = test/rma/lock_fairness.c
test_rma_lock_fairness_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_lock_fairness_LDADD = $(RMATEST_LDADD)

test_rma_many_pending_SOURCES = test/rma/many_pending.c
test_rma_many_pending_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_many_pending_LDADD = $(RMATEST_LDADD)

test_rma_mixed_requests_SOURCES = test/rma/mixed_requests.c
test_rma_mixed_requests_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_mixed_requests_LDADD = $(RMATEST_LDADD)

test_rma_errors_SOURCES = test/rma/errors.c
test_rma_errors_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_errors_LDADD = $(RMATEST_LDADD)

test_rma_on_nbrma_SOURCES = test/rma/on_nbrma.c
test_rma_on_nbrma_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_on_nbrma_LDADD = $(RMATEST_LDADD)

test_rma_win_attrs_SOURCES = test/rma/win_attrs.c
test_rma_win_attrs_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_win_attrs_LDADD = $(RMATEST_LDADD)

test_rma_active_target_SOURCES = test/rma/active_target.c
test_rma_active_target_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_active_target_LDADD = $(RMATEST_LDADD)

test_rma_lock_at_once_SOURCES = test/rma/lock_at_once.c
test_rma_lock_at_once_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_lock_at_once_LDADD = $(RMATEST_LDADD)

test_rma_segment_reuse_SOURCES = test/rma/segment_reuse.c
test_rma_segment_reuse_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_segment_reuse_LDADD = $(RMATEST_LDADD)
test_rma_user_memory_SOURCES = test/rma/user_memory.c
test_rma_user_memory_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_user_memory_LDADD = $(RMATEST_LDADD)
test_rma_error_messages_SOURCES = test/rma/error_messages.c
test_rma_error_messages_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_error_messages_LDADD = $(RMATEST_LDADD)
test_rma_oversubscribed_loop_SOURCES = test/rma/oversubscribed_loop.c
test_rma_oversubscribed_loop_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_oversubscribed_loop_LDADD = $(RMATEST_LDADD)
test_rma_settings_check_SOURCES = test/rma/settings_check.c
test_rma_settings_check_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_settings_check_LDADD = $(RMATEST_LDADD)
test_rma_fd_limit_SOURCES = test/rma/fd_limit.c
test_rma_fd_limit_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_fd_limit_LDADD = $(RMATEST_LDADD)
test_rma_alloc_mem_SOURCES = test/rma/alloc_mem.c
test_rma_alloc_mem_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_alloc_mem_LDADD = $(RMATEST_LDADD)
test_rma_safe_memory_SOURCES = test/rma/safe_memory.c
test_rma_safe_memory_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_safe_memory_CFLAGS = $(AM_CFLAGS) -pthread
test_rma_safe_memory_LDFLAGS = -pthread
test_rma_safe_memory_LDADD = $(RMATEST_LDADD)
test_rma_user_memory_churn_SOURCES = test/rma/user_memory_churn.c
test_rma_user_memory_churn_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_user_memory_churn_LDADD = $(RMATEST_LDADD)

test_rma_complete_requests_SOURCES = test/rma/complete_requests.c
test_rma_complete_requests_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_complete_requests_LDADD = $(RMATEST_LDADD)
test_rma_unaligned_atomics_SOURCES = test/rma/unaligned_atomics.c
test_rma_unaligned_atomics_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_unaligned_atomics_LDADD = $(RMATEST_LDADD)
test_rma_gats_many_SOURCES = test/rma/gats_many.c
test_rma_gats_many_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_gats_many_LDADD = $(RMATEST_LDADD)

test_rma_exposures_ahead_SOURCES = test/rma/exposures_ahead.c
test_rma_exposures_ahead_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_exposures_ahead_LDADD = $(RMATEST_LDADD)

test_rma_collective_progress_SOURCES = test/rma/collective_progress.c
test_rma_collective_progress_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_collective_progress_LDADD = $(RMATEST_LDADD)
test_rma_collective_forms_SOURCES = test/rma/collective_forms.c
test_rma_collective_forms_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_collective_forms_LDADD = $(RMATEST_LDADD)

test_rma_late_post_SOURCES = test/rma/late_post.c
test_rma_late_post_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_late_post_LDADD = $(RMATEST_LDADD)

test_rma_ifence_chain_SOURCES = test/rma/ifence_chain.c
test_rma_ifence_chain_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_ifence_chain_LDADD = $(RMATEST_LDADD)

test_rma_reorder_SOURCES = test/rma/reorder.c
test_rma_reorder_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_reorder_LDADD = $(RMATEST_LDADD)

test_rma_at_errors_SOURCES = test/rma/at_errors.c
test_rma_at_errors_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_at_errors_LDADD = $(RMATEST_LDADD)

test_rma_ucx_errors_SOURCES = test/rma/ucx_errors.c
test_rma_ucx_errors_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_ucx_errors_LDADD = $(RMATEST_LDADD)
test_rma_cross_memory_batches_SOURCES = test/rma/cross_memory_batches.c
test_rma_cross_memory_batches_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_cross_memory_batches_LDADD = $(RMATEST_LDADD)
test_rma_ucx_allocated_SOURCES = test/rma/ucx_allocated.c
test_rma_ucx_allocated_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_ucx_allocated_LDADD = $(RMATEST_LDADD)

test_rma_ucx_unreachable_SOURCES = test/rma/ucx_unreachable.c
test_rma_ucx_unreachable_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_ucx_unreachable_LDADD = $(RMATEST_LDADD)

TESTS += test/rma/runtests test/rma/runtests-ucx test/rma/runtests-ucx-shm test/rma/runtests-mixed test/rma/runtests-thread \
	test/rma/runtests-check

EXTRA_DIST += test/rma/testlist test/rma/rmatest.h test/rma/runtests.in test/rma/runtests-ucx test/rma/runtests-ucx-shm test/rma/runtests-mixed test/rma/runtests-thread \
	test/rma/runtests-check

test_rma_shared_progress_SOURCES = test/rma/shared_progress.c
test_rma_shared_progress_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_shared_progress_LDADD = $(RMATEST_LDADD)

test_rma_compat_SOURCES = test/rma/compat.c
test_rma_compat_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_compat_LDADD = $(RMATEST_LDADD)

# a rank killed during window creation leaves nothing in /dev/shm
test_rma_die_at_SOURCES = test/rma/die_at.c
test_rma_die_at_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_die_at_LDADD = $(RMATEST_LDADD)
TESTS += test/rma/die_cleanup
EXTRA_DIST += test/rma/die_cleanup.in

# the SmartInterrupts helper's life and its bad input
test_rma_helper_life_SOURCES = test/rma/helper_life.c
test_rma_helper_life_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_helper_life_LDADD = $(RMATEST_LDADD)
TESTS += test/rma/helper_lifecycle
EXTRA_DIST += test/rma/helper_lifecycle.in

# cross-memory attach permission
test_rma_cma_forbid_SOURCES = test/rma/cma_forbid.c
test_rma_cma_forbid_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_cma_forbid_LDADD = $(RMATEST_LDADD)

test_rma_cma_ptracer_SOURCES = test/rma/cma_ptracer.c
test_rma_cma_ptracer_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_cma_ptracer_LDADD = $(RMATEST_LDADD)

test_rma_dynamic_many_SOURCES = test/rma/dynamic_many.c
test_rma_dynamic_many_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_dynamic_many_LDADD = $(RMATEST_LDADD)

test_rma_bad_input_SOURCES = test/rma/bad_input.c
test_rma_bad_input_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_bad_input_LDADD = $(RMATEST_LDADD)

test_rma_remote_completion_SOURCES = test/rma/remote_completion.c
test_rma_remote_completion_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_remote_completion_LDADD = $(RMATEST_LDADD)

# threads (pthreads; MPI_THREAD_MULTIPLE, NBRMA_PROGRESS=thread)
RMATEST_PTHREAD = -pthread

test_rma_threads_rma_SOURCES = test/rma/threads_rma.c test/rma/rmathreads.h
test_rma_threads_rma_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_threads_rma_CFLAGS = $(AM_CFLAGS) $(RMATEST_PTHREAD)
test_rma_threads_rma_LDFLAGS = $(RMATEST_PTHREAD)
test_rma_threads_rma_LDADD = $(RMATEST_LDADD)

test_rma_threads_requests_SOURCES = test/rma/threads_requests.c test/rma/rmathreads.h
test_rma_threads_requests_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_threads_requests_CFLAGS = $(AM_CFLAGS) $(RMATEST_PTHREAD)
test_rma_threads_requests_LDFLAGS = $(RMATEST_PTHREAD)
test_rma_threads_requests_LDADD = $(RMATEST_LDADD)

test_rma_progress_thread_SOURCES = test/rma/progress_thread.c test/rma/rmathreads.h
test_rma_progress_thread_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_progress_thread_CFLAGS = $(AM_CFLAGS) $(RMATEST_PTHREAD)
test_rma_progress_thread_LDFLAGS = $(RMATEST_PTHREAD)
test_rma_progress_thread_LDADD = $(RMATEST_LDADD)

test_rma_request_get_status_SOURCES = test/rma/request_get_status.c test/rma/rmathreads.h
test_rma_request_get_status_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_request_get_status_CFLAGS = $(AM_CFLAGS) $(RMATEST_PTHREAD)
test_rma_request_get_status_LDFLAGS = $(RMATEST_PTHREAD)
test_rma_request_get_status_LDADD = $(RMATEST_LDADD)

test_rma_notify_SOURCES = test/rma/notify.c
test_rma_notify_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_notify_LDADD = $(RMATEST_LDADD)

# MPI_T: nbrma's counters and settings after MPICH's (src/mpi/tool_interface.cpp)
check_PROGRAMS += test/rma/mpi_t
test_rma_mpi_t_SOURCES = test/rma/mpi_t.c test/rma/rmathreads.h
test_rma_mpi_t_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_mpi_t_CFLAGS = $(AM_CFLAGS) $(RMATEST_PTHREAD)
test_rma_mpi_t_LDFLAGS = $(RMATEST_PTHREAD)
test_rma_mpi_t_LDADD = $(RMATEST_LDADD)

# the run-time RMA race checker (NBRMA_CHECK=races): labelled scenarios, one a line
check_PROGRAMS += test/rma/check_races
test_rma_check_races_SOURCES = test/rma/check_races.c
test_rma_check_races_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_check_races_CFLAGS = $(AM_CFLAGS) $(RMATEST_PTHREAD)
test_rma_check_races_LDFLAGS = $(RMATEST_PTHREAD)
test_rma_check_races_LDADD = $(RMATEST_LDADD)

# the race checker's ThreadSanitizer replay: loads and stores against RMA calls
check_PROGRAMS += test/rma/check_tsan
test_rma_check_tsan_SOURCES = test/rma/check_tsan.c
test_rma_check_tsan_CPPFLAGS = $(RMATEST_CPPFLAGS)
test_rma_check_tsan_CFLAGS = $(AM_CFLAGS) $(TSAN_TEST_FLAGS) -g
test_rma_check_tsan_LDFLAGS = $(TSAN_TEST_FLAGS)
test_rma_check_tsan_LDADD = $(RMATEST_LDADD)
