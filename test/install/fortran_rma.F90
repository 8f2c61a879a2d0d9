! fortran_rma.F90 — a Fortran RMA program that calls nothing of nbrma's, built against an
! installed nbrma by `mpif90.mpich -cpp [-DUSE_F08|-DUSE_MPI|-DUSE_MPIF] fortran_rma.F90
! $(pkg-config --libs nbrma)` (maint/check_install.sh), once per binding: with
! NBRMA_VERBOSE=1 its run must show nbrma's report (libnbrma stays linked under
! --as-needed). Each rank puts its rank into its right neighbour's window under a lock;
! prints "No Errors" when it arrived.
program fortran_rma
#if defined(USE_F08)
    use mpi_f08
    implicit none
    type(MPI_Win) :: win
#elif defined(USE_MPI)
    use mpi
    implicit none
    integer :: win
#else
    implicit none
    include 'mpif.h'
    integer :: win
#endif
    integer :: rank, nprocs, right, ierr, errors, total
    integer, volatile :: buffer(1)
    integer(kind=MPI_ADDRESS_KIND) :: window_size, zero
    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
    right = mod(rank + 1, nprocs)
    buffer(1) = -1
    window_size = 4
    zero = 0
    call MPI_Win_create(buffer, window_size, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
    call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win, ierr)
    call MPI_Put(rank, 1, MPI_INTEGER, right, zero, 1, MPI_INTEGER, win, ierr)
    call MPI_Win_unlock(right, win, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win, ierr)
    errors = 0
    if (buffer(1) /= mod(rank + nprocs - 1, nprocs)) errors = 1
    call MPI_Win_unlock(rank, win, ierr)
    call MPI_Win_free(win, ierr)
    call MPI_Reduce(errors, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (total == 0) then
            print '(A)', 'No Errors'
        else
            print '(A,I0,A)', 'Found ', total, ' errors'
        end if
    end if
    call MPI_Finalize(ierr)
end program fortran_rma
