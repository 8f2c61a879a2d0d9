# MPI RMA test suite (owned by test/rma): programs run by test/rma/runtests under mpiexec.mpich.
