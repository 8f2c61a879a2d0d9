# maint/man/Makefile.mk — the man pages, included from Makefile.am.
#
# One source per page, maint/man/<page>.<section>.txt (its format: the head of
# maint/man/make_page.pl), written into the build tree as man/<page>.<section> by
# maint/man/make_page.pl at `make` time; nothing generated is distributed, so a VPATH
# build of `make distdir` (check-asan, check-tsan, distcheck) writes them again.
# Section 3: every MPIX_ and nbrma_ function of include/nbrma.h; section 1: the tools;
# nbrma(7): the overview, whose ENVIRONMENT and WINDOW INFO KEYS sections are the output
# of `src/tools/nbrma-info --man` (generated from the settings table,
# src/common/settings.cpp) and whose error classes are read from src/mpi/errors.cpp.
# maint/check_man.sh (make check) checks that every function has its page, that each
# page's SYNOPSIS is the header's prototype and that every page renders without warnings.
nodist_man3_MANS = \
	man/MPIX_Accumulate_notify.3 \
	man/MPIX_Get_notify.3 \
	man/MPIX_Put_notify.3 \
	man/MPIX_Rget_notify.3 \
	man/MPIX_Rput_notify.3 \
	man/MPIX_Win_icomplete.3 \
	man/MPIX_Win_ifence.3 \
	man/MPIX_Win_iflush.3 \
	man/MPIX_Win_iflush_all.3 \
	man/MPIX_Win_iflush_local.3 \
	man/MPIX_Win_iflush_local_all.3 \
	man/MPIX_Win_ilock.3 \
	man/MPIX_Win_ilock_all.3 \
	man/MPIX_Win_ipost.3 \
	man/MPIX_Win_istart.3 \
	man/MPIX_Win_iunlock.3 \
	man/MPIX_Win_iunlock_all.3 \
	man/MPIX_Win_iwait.3 \
	man/MPIX_Win_notify_get_num.3 \
	man/MPIX_Win_notify_get_value.3 \
	man/MPIX_Win_notify_ithreshold.3 \
	man/MPIX_Win_notify_set_num.3 \
	man/MPIX_Win_notify_set_value.3 \
	man/nbrma_get_counter.3 \
	man/nbrma_is_active.3
nodist_man1_MANS = man/nbrma-bench.1 man/nbrma-info.1
nodist_man7_MANS = man/nbrma.7
CLEANFILES = $(nodist_man3_MANS) $(nodist_man1_MANS) $(nodist_man7_MANS)

EXTRA_DIST += maint/man/Makefile.mk maint/man/make_page.pl maint/check_man.sh \
	$(nodist_man3_MANS:man/%=maint/man/%.txt) $(nodist_man1_MANS:man/%=maint/man/%.txt) \
	$(nodist_man7_MANS:man/%=maint/man/%.txt)
TESTS += maint/check_man.sh

# What every page depends on: the generator, and the files @error-classes reads.
MAN_PAGE_DEPS = maint/man/make_page.pl include/nbrma.h src/mpi/errors.cpp \
	src/common/status.cpp
MAN_PAGE = perl $(srcdir)/maint/man/make_page.pl --version $(PACKAGE_VERSION) --errors $(srcdir)

man/%.3: maint/man/%.3.txt $(MAN_PAGE_DEPS)
	@$(MKDIR_P) man
	$(AM_V_GEN)$(MAN_PAGE) $< > $@.tmp && mv $@.tmp $@

man/%.1: maint/man/%.1.txt $(MAN_PAGE_DEPS)
	@$(MKDIR_P) man
	$(AM_V_GEN)$(MAN_PAGE) $< > $@.tmp && mv $@.tmp $@

man/nbrma.7: maint/man/nbrma.7.txt $(MAN_PAGE_DEPS) src/tools/nbrma-info$(EXEEXT)
	@$(MKDIR_P) man
	$(AM_V_GEN)src/tools/nbrma-info$(EXEEXT) --man > $@.settings && \
	$(MAN_PAGE) --splice $@.settings $< > $@.tmp && mv $@.tmp $@ && rm -f $@.settings
