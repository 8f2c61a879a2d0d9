# Benchmark suite (owned by test/bench). Included by the top Makefile.am; paths are
# relative to the top. Built by plain `make`; run with test/bench/nbrma-bench.
#
# One program built twice from the same sources (see test/bench/bench.h): bench_nbrma
# runs on nbrma (and adds the MPIX_Win_i* and reorder series), bench_mpich on MPICH's
# own RMA, so both sides of every comparison come from the same code; where Open MPI is
# installed, bench_ompi on Open MPI's (see below). `make install` installs the driver in
# $(bindir) and the programs in $(pkglibexecdir), where the installed driver looks for
# them.
bench_sources = test/bench/bench.h test/bench/bench_main.c test/bench/bench_common.c \
	test/bench/latency.c test/bench/patterns.c test/bench/transactions.c \
	test/bench/lu.c test/bench/reorder.c test/bench/progress.c test/bench/notify.c \
	test/bench/creation.c test/bench/strided.c test/bench/collectives.c \
	test/bench/bandwidth.c test/bench/threads.c

pkglibexec_PROGRAMS = test/bench/bench_nbrma test/bench/bench_mpich

test_bench_bench_nbrma_SOURCES = $(bench_sources)
test_bench_bench_nbrma_CPPFLAGS = $(AM_CPPFLAGS) -DNBRMA_NONBLOCKING_SERIES
test_bench_bench_nbrma_LDADD = libnbrma.la $(MPICH_LIBS) -lm
# A real executable (rpath to .libs), not a libtool wrapper script that relinks on
# first run: mpiexec starts it several times at once.
test_bench_bench_nbrma_LDFLAGS = -no-install

test_bench_bench_mpich_SOURCES = $(bench_sources)
test_bench_bench_mpich_LDADD = $(MPICH_LIBS) -lm

# The Open MPI build (configure: only where mpicc.openmpi and mpirun.openmpi exist):
# compiled and linked with the flags mpicc.openmpi gives (--showme), not AM_CPPFLAGS (no
# MPICH headers, no nbrma.h), linked with Open MPI's libmpi alone. nbrma-bench runs its
# latency and bandwidth groups under mpirun.openmpi (series ompi-osc-sm, ompi-osc-rdma).
if NBRMA_OMPI_BENCH
pkglibexec_PROGRAMS += test/bench/bench_ompi
test_bench_bench_ompi_SOURCES = $(bench_sources)
test_bench_bench_ompi_CPPFLAGS = $(OPENMPI_CFLAGS) -DNBRMA_BENCH_OMPI
test_bench_bench_ompi_LDADD = $(OPENMPI_LIBS) -lm
endif

bin_SCRIPTS = test/bench/nbrma-bench

EXTRA_DIST += test/bench/nbrma-bench.in
