// GoogleTest main for nbrma's unit tests. MPI is initialized (as a singleton, no
// mpiexec needed) because the datatype and reduction units use MPICH's datatype
// engine; the engine and lock-protocol tests run over the sim transport.
#include <gtest/gtest.h>
#include <mpi.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    testing::InitGoogleTest(&argc, argv);
    int result = RUN_ALL_TESTS();
    MPI_Finalize();
    return result;
}
