! fortran_rma: a Fortran program's RMA runs on nbrma, through MPICH's Fortran bindings.
!
! Built twice (test/rma/Makefile.mk): fortran_f08 with NBRMA_F08 defined (`use mpi_f08`,
! whose bindings call MPICH's PMPI_ symbols) and fortran_mpi without (`use mpi`, whose
! bindings call the C MPI_ symbols). Each rank, over an MPI_Win_allocate window and an
! MPI_Win_create window:
!   - lock / put / unlock toward the next rank, then lock / get / unlock of what it put;
!   - fence / put / fence into the next rank's MPI_Win_create memory;
!   - fence / MPI_Accumulate(MPI_SUM) of rank + 1 into every rank / fence;
!   - MPI_Fetch_and_op(MPI_SUM) of 1 and MPI_Compare_and_swap(-1 -> rank) on rank 0;
!   - MPI_Win_free of both (the handles become MPI_WIN_NULL);
!   - MPI_Win_get_group of two more MPI_Win_create windows (the group of np ranks);
!   - MPI_Win_get_attr of the MPI_Win_create window's size, disp_unit, base, flavor and
!     model (MPICH's bindings ask MPII_Win_get_attr, which nbrma answers), and a user
!     attribute set and read back;
! checks the data that arrived, and that nbrma did the work: nbrma_is_active(),
! "windows_created" grew by exactly 2 and "rma_ops" and "epochs_opened" grew by at least
! the calls made (MPICH's own RMA moves none of nbrma's counters). With the argument
! `interrupt` it sets NBRMA_PROGRESS=interrupt before MPI_Init and checks that the node's
! help table was made ("help_table_bytes" > 0): nbrma saw the initialization.
! Rank 0 prints "No Errors" only when every check passed on every rank.
program fortran_rma
#ifdef NBRMA_F08
   use mpi_f08
#else
   use mpi
#endif
   use, intrinsic :: iso_c_binding
   implicit none

   interface
      function nbrma_is_active() bind(C, name="nbrma_is_active")
         import :: c_int
         integer(c_int) :: nbrma_is_active
      end function nbrma_is_active
      function nbrma_get_counter(name, value) bind(C, name="nbrma_get_counter")
         import :: c_int, c_char, c_long_long
         character(kind=c_char), dimension(*), intent(in) :: name
         integer(c_long_long), intent(out) :: value
         integer(c_int) :: nbrma_get_counter
      end function nbrma_get_counter
      function setenv(name, value, overwrite) bind(C, name="setenv")
         import :: c_int, c_char
         character(kind=c_char), dimension(*), intent(in) :: name, value
         integer(c_int), value :: overwrite
         integer(c_int) :: setenv
      end function setenv
   end interface

   integer, parameter :: n = 8
#ifdef NBRMA_F08
   type(MPI_Win) :: awin, cwin
   type(MPI_Group) :: group
   type(c_ptr) :: baseptr
#else
   integer :: awin, cwin, group
   integer(kind=MPI_ADDRESS_KIND) :: baseptr
#endif
   integer, pointer :: abuf(:)
   integer, target, asynchronous :: cbuf(n)
   integer, asynchronous :: vals(n), got(n)
   integer :: me, np, right, left, i, t, ierr, errors, total, one, old, result, winners, gsize
   integer(kind=MPI_ADDRESS_KIND) :: bytes, value, address
   integer :: keyval
   logical :: found
   integer(c_long_long) :: windows0, ops0, epochs0, windows1, ops1, epochs1, table_bytes
   character(len=32) :: arg
   logical :: interrupt

   errors = 0
   me = -1
   interrupt = .false.
   if (command_argument_count() >= 1) then
      call get_command_argument(1, arg)
      interrupt = arg == "interrupt"
      if (.not. interrupt) then
         print '(a, a)', "unknown argument ", trim(arg)
         stop 1
      end if
   end if
   if (interrupt) then
      if (setenv("NBRMA_PROGRESS"//c_null_char, "interrupt"//c_null_char, 1_c_int) /= 0) &
         stop "setenv failed"
   end if

   call MPI_Init(ierr)
   call expect_success(ierr, "MPI_Init")
   call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
   call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
   right = mod(me + 1, np)
   left = mod(me + np - 1, np)

   call expect(nbrma_is_active() == 1, "nbrma_is_active() is not 1")
   if (interrupt) then
      table_bytes = counter("help_table_bytes")
      call expect(table_bytes > 0, "NBRMA_PROGRESS=interrupt: no help table after MPI_Init")
   end if
   windows0 = counter("windows_created")
   ops0 = counter("rma_ops")
   epochs0 = counter("epochs_opened")

   ! ---- MPI_Win_allocate: lock / put / get / unlock
   bytes = n * 4
#ifdef NBRMA_F08
   call MPI_Win_allocate(bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, baseptr, awin, ierr)
   call expect_success(ierr, "MPI_Win_allocate")
   call c_f_pointer(baseptr, abuf, [n])
#else
   call MPI_Win_allocate(bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, baseptr, awin, ierr)
   call expect_success(ierr, "MPI_Win_allocate")
   call c_f_pointer(transfer(baseptr, c_null_ptr), abuf, [n])
#endif
   call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, awin, ierr)
   abuf = -1
   call MPI_Win_unlock(me, awin, ierr)
   call MPI_Barrier(MPI_COMM_WORLD, ierr)

   vals = [(me * 100 + i, i = 1, n)]
   call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, awin, ierr)
   call expect_success(ierr, "MPI_Win_lock")
   call MPI_Put(vals, n, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, n, MPI_INTEGER, awin, ierr)
   call expect_success(ierr, "MPI_Put")
   call MPI_Win_unlock(right, awin, ierr)
   call expect_success(ierr, "MPI_Win_unlock")

   got = 0
   call MPI_Win_lock(MPI_LOCK_SHARED, right, 0, awin, ierr)
   call MPI_Get(got, n, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, n, MPI_INTEGER, awin, ierr)
   call expect_success(ierr, "MPI_Get")
   call MPI_Win_unlock(right, awin, ierr)
   call expect(all(got == vals), "MPI_Get did not return what this rank put")

   call MPI_Barrier(MPI_COMM_WORLD, ierr)
   call MPI_Win_lock(MPI_LOCK_SHARED, me, 0, awin, ierr)
   call expect(all(abuf == [(left * 100 + i, i = 1, n)]), "MPI_Put data did not arrive")
   call MPI_Win_unlock(me, awin, ierr)

   ! ---- MPI_Win_create: fence / put / fence, then an accumulate epoch
   cbuf = -1
   bytes = n * 4
   call MPI_Win_create(cbuf, bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, cwin, ierr)
   call expect_success(ierr, "MPI_Win_create")

   ! ---- the window's attributes, as a Fortran program gets them
   call MPI_Win_get_attr(cwin, MPI_WIN_SIZE, value, found, ierr)
   call expect(found .and. value == bytes, "MPI_WIN_SIZE is not the window's size")
   call MPI_Win_get_attr(cwin, MPI_WIN_DISP_UNIT, value, found, ierr)
   call expect(found .and. value == 4, "MPI_WIN_DISP_UNIT is not the window's")
   call MPI_Win_get_attr(cwin, MPI_WIN_BASE, value, found, ierr)
   call MPI_Get_address(cbuf, address, ierr)
   call expect(found .and. value == address, "MPI_WIN_BASE is not the window's base")
   call MPI_Win_get_attr(cwin, MPI_WIN_CREATE_FLAVOR, value, found, ierr)
   call expect(found .and. value == MPI_WIN_FLAVOR_CREATE, "MPI_WIN_CREATE_FLAVOR")
   call MPI_Win_get_attr(cwin, MPI_WIN_MODEL, value, found, ierr)
   call expect(found .and. value == MPI_WIN_UNIFIED, "MPI_WIN_MODEL is not unified")
   call MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, keyval, &
                              0_MPI_ADDRESS_KIND, ierr)
   call MPI_Win_set_attr(cwin, keyval, 4242_MPI_ADDRESS_KIND, ierr)
   call MPI_Win_get_attr(cwin, keyval, value, found, ierr)
   call expect(found .and. value == 4242, "a user attribute did not come back")
   call MPI_Win_delete_attr(cwin, keyval, ierr)
   call MPI_Win_free_keyval(keyval, ierr)
   call MPI_Win_fence(0, cwin, ierr)
   call expect_success(ierr, "MPI_Win_fence")
   vals = [(me * 1000 + i, i = 1, n)]
   call MPI_Put(vals, n, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, n, MPI_INTEGER, cwin, ierr)
   call expect_success(ierr, "MPI_Put (fence)")
   call MPI_Win_fence(0, cwin, ierr)
   call expect(all(cbuf == [(left * 1000 + i, i = 1, n)]), "MPI_Put in a fence epoch did not arrive")

   cbuf = 0
   call MPI_Win_fence(0, cwin, ierr)
   one = me + 1
   do t = 0, np - 1
      call MPI_Accumulate(one, 1, MPI_INTEGER, t, 1_MPI_ADDRESS_KIND, 1, MPI_INTEGER, MPI_SUM, &
                          cwin, ierr)
      call expect_success(ierr, "MPI_Accumulate")
   end do
   call MPI_Win_fence(0, cwin, ierr)
   call expect(cbuf(2) == np * (np + 1) / 2, "MPI_Accumulate(MPI_SUM) total is wrong")
   call expect(cbuf(1) == 0 .and. all(cbuf(3:) == 0), "MPI_Accumulate touched other elements")

   ! ---- fetch-and-op and compare-and-swap on rank 0's allocate window
   call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, awin, ierr)
   abuf(n) = 0
   abuf(n - 1) = -1
   call MPI_Win_unlock(me, awin, ierr)
   call MPI_Barrier(MPI_COMM_WORLD, ierr)
   one = 1
   old = -1
   call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, awin, ierr)
   call MPI_Fetch_and_op(one, result, MPI_INTEGER, 0, int(n - 1, MPI_ADDRESS_KIND), MPI_SUM, &
                         awin, ierr)
   call expect_success(ierr, "MPI_Fetch_and_op")
   call MPI_Win_flush(0, awin, ierr)
   call expect(result >= 0 .and. result < np, "MPI_Fetch_and_op fetched an impossible value")
   call MPI_Compare_and_swap(me, old, got(1), MPI_INTEGER, 0, int(n - 2, MPI_ADDRESS_KIND), &
                             awin, ierr)
   call expect_success(ierr, "MPI_Compare_and_swap")
   call MPI_Win_unlock(0, awin, ierr)
   ! every fetched value 0 .. np-1 exactly once: their sum; exactly one swap won
   call MPI_Allreduce(result, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
   call expect(total == np * (np - 1) / 2, "MPI_Fetch_and_op results are not 0 .. np-1")
   i = merge(1, 0, got(1) == -1)
   call MPI_Allreduce(i, winners, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
   call expect(winners == 1, "MPI_Compare_and_swap: not exactly one rank swapped")
   if (me == 0) then
      call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, awin, ierr)
      call expect(abuf(n) == np, "MPI_Fetch_and_op: the counter is not np")
      call expect(abuf(n - 1) >= 0 .and. abuf(n - 1) < np, "MPI_Compare_and_swap: no rank in the word")
      call MPI_Win_unlock(0, awin, ierr)
   end if

   ! ---- nbrma did it
   windows1 = counter("windows_created")
   ops1 = counter("rma_ops")
   epochs1 = counter("epochs_opened")
   call expect(windows1 - windows0 == 2, "windows_created did not grow by 2: not on nbrma")
   ! 2 puts, 1 get, np accumulates, 1 fetch-and-op, 1 compare-and-swap
   call expect(ops1 - ops0 >= 5 + np, "rma_ops did not count this rank's calls: not on nbrma")
   call expect(epochs1 - epochs0 >= 6, "epochs_opened did not count this rank's epochs")

   call MPI_Win_free(awin, ierr)
   call expect_success(ierr, "MPI_Win_free (allocate)")
   call MPI_Win_free(cwin, ierr)
   call expect_success(ierr, "MPI_Win_free (create)")
   call expect(awin == MPI_WIN_NULL .and. cwin == MPI_WIN_NULL, "MPI_Win_free left a handle")

   ! ---- MPI_Win_get_group of windows made again over the freed window's segment
   do t = 1, 2
      call MPI_Win_create(cbuf, bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, cwin, ierr)
      call MPI_Win_get_group(cwin, group, ierr)
      call MPI_Group_size(group, gsize, ierr)
      call expect(gsize == np, "MPI_Win_get_group: not the window's group")
      call MPI_Group_free(group, ierr)
      call MPI_Win_free(cwin, ierr)
   end do

   call MPI_Allreduce(errors, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
   if (me == 0) then
      if (total == 0) then
         print '(a)', " No Errors"
      else
         print '(a, i0, a)', " Found ", total, " errors"
      end if
   end if
   call MPI_Finalize(ierr)

contains

   subroutine expect(ok, what)
      logical, intent(in) :: ok
      character(len=*), intent(in) :: what
      if (.not. ok) then
         errors = errors + 1
         print '(a, i0, a, a)', "rank ", me, ": ", what
      end if
   end subroutine expect

   subroutine expect_success(code, what)
      integer, intent(in) :: code
      character(len=*), intent(in) :: what
      call expect(code == MPI_SUCCESS, what // " failed")
   end subroutine expect_success

   function counter(name) result(value)
      character(len=*), intent(in) :: name
      integer(c_long_long) :: value
      value = -1
      if (nbrma_get_counter(name // c_null_char, value) /= 0) &
         call expect(.false., "nbrma_get_counter(" // name // ") failed")
   end function counter

end program fortran_rma
