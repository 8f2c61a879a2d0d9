# Models (owned by test/model): nbrma's engine over the sim transport with modelled
# costs, for job sizes this machine cannot run. Not measurements. Included by the top
# Makefile.am; built by plain `make`, not installed.
#
# transactions_model: the transactions workload (SC14 Fig 12) on 64-512
# simulated ranks.
# scale_model: synchronization traffic a rank generates as jobs grow, p up
# to 1024 simulated ranks (nbrma-bench's scale group; --check asserts the bounds).
noinst_PROGRAMS = test/model/transactions_model test/model/scale_model
test_model_transactions_model_SOURCES = test/model/transactions_model.cpp
test_model_transactions_model_LDADD = libnbrma_core.la $(MPICH_LIBS) $(UCX_LIBS)
test_model_scale_model_SOURCES = test/model/scale_model.cpp test/unit/engine/rma_calls.hpp
test_model_scale_model_LDADD = libnbrma_core.la $(MPICH_LIBS) $(UCX_LIBS)

# check_model.sh: make check runs the model small (8 and 32 ranks) and checks its sums
# and that reordered nonblocking epochs beat blocking ones there. check_scale_model.sh:
# the scale model up to 1024 ranks with its bounds checked.
TESTS += test/model/check_model.sh test/model/check_scale_model.sh
EXTRA_DIST += test/model/check_model.sh test/model/check_scale_model.sh
