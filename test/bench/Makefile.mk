# Benchmark suite (owned by test/bench). Included by the top Makefile.am; paths are
# relative to the top. Built by plain `make`; run with test/bench/nbrma-bench.
#
# latency.c is built twice: latency_nbrma runs on nbrma (and adds the MPIX_Win_i*
# series), latency_mpich on MPICH's own RMA, so both sides of every comparison come
# from the same source.
noinst_PROGRAMS = test/bench/latency_nbrma test/bench/latency_mpich

test_bench_latency_nbrma_SOURCES = test/bench/latency.c
test_bench_latency_nbrma_CPPFLAGS = $(AM_CPPFLAGS) -DNBRMA_NONBLOCKING_SERIES
test_bench_latency_nbrma_LDADD = libnbrma.la $(MPICH_LIBS)
# A real executable (rpath to .libs), not a libtool wrapper script that relinks on
# first run: mpiexec starts it twice at once.
test_bench_latency_nbrma_LDFLAGS = -no-install

test_bench_latency_mpich_SOURCES = test/bench/latency.c
test_bench_latency_mpich_LDADD = $(MPICH_LIBS)

EXTRA_DIST += test/bench/nbrma-bench.in
