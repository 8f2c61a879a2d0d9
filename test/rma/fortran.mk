# Fortran programs of the MPI RMA suite (run by test/rma/runtests from test/rma/testlist):
# one source, test/rma/fortran_rma.F90, built with MPICH's mpifort.mpich (configure's FC)
# as fortran_f08 (`use mpi_f08`, -DNBRMA_F08) and fortran_mpi (`use mpi`). Linked like
# the C programs: libnbrma before the MPICH libraries the wrapper appends.
# Non-recursive fragment included from the top Makefile.am; paths are relative to the top.

check_PROGRAMS += test/rma/fortran_f08 test/rma/fortran_mpi

test_rma_fortran_f08_SOURCES = test/rma/fortran_rma.F90
test_rma_fortran_f08_CPPFLAGS = -DNBRMA_F08
test_rma_fortran_f08_LDADD = libnbrma.la

test_rma_fortran_mpi_SOURCES = test/rma/fortran_rma.F90
# its own (empty) flags give it its own object file
test_rma_fortran_mpi_CPPFLAGS =
test_rma_fortran_mpi_LDADD = libnbrma.la
