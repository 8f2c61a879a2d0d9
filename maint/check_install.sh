#!/bin/sh
# check_install.sh — part of `make check`: nbrma as a user gets it after `make install`.
# Installs the build into a scratch directory (make install DESTDIR=...), checks the
# installed tree holds the library, header, pkg-config file, helper, tools and man pages,
# runs the installed nbrma-info, builds test/install/app.c with
# `mpicc.mpich app.c $(pkg-config --cflags --libs nbrma)` against the installed tree only,
# runs it on 2 ranks (inline, and interrupt mode, whose helper the installed library must
# find beside itself); builds programs that call nothing of nbrma's the same way (a C
# one, a Fortran one per binding) and checks their RMA ran on nbrma; checks that with
# MPICH linked first nbrma says so; runs app.c linked with -Wl,-rpath without
# LD_LIBRARY_PATH; and runs the installed nbrma-bench with its results in the current
# directory, its summary's peers: line naming the peers that ran or why they were skipped
# (where configure built bench_ompi, it measured the row under Open MPI's osc/sm,
# osc/rdma and osc/ucx, and the summary has their ratios).
#
# Skipped (exit 77) in sanitizer builds (make check-asan): a program linked by plain
# mpicc.mpich cannot load an ASan-built libnbrma. Ends with "N passed, N failed".
set -u
top_srcdir=$(cd "${top_srcdir:-.}" && pwd)
top_builddir=$(cd "${top_builddir:-.}" && pwd)
case "${CXXFLAGS:-} $(sed -n 's/^CXXFLAGS = //p' "$top_builddir/Makefile")" in
    *-fsanitize=*) echo "sanitizer build: skipped"; exit 77 ;;
esac
MPICC=$(sed -n 's/^MPICC = //p' "$top_builddir/Makefile")
MPIFORT=$(sed -n 's/^MPIFORT = //p' "$top_builddir/Makefile")
MPIEXEC=$(sed -n 's/^MPIEXEC = //p' "$top_builddir/Makefile")
prefix=$(sed -n 's/^prefix = //p' "$top_builddir/Makefile")
MPIRUN_OPENMPI=$(sed -n 's/^MPIRUN_OPENMPI = //p' "$top_builddir/Makefile")
passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/nbrma-install.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
root=$scratch/root
tree=$root$prefix

# 1. make install into the scratch root (not the jobserver of the make check around us).
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top_builddir" install DESTDIR="$root" \
    >"$scratch/install.log" 2>&1; then
    ok
else
    fail "make install DESTDIR=$root:"
    tail -20 "$scratch/install.log"
    echo "$passed passed, $failed failed"
    exit 1
fi

# 2. The installed tree.
missing=""
for file in lib/libnbrma.so include/nbrma.h lib/pkgconfig/nbrma.pc libexec/nbrma-helper \
    bin/nbrma-info bin/nbrma-bench libexec/nbrma/bench_nbrma libexec/nbrma/bench_mpich \
    share/man/man1/nbrma-info.1 share/man/man1/nbrma-bench.1 share/man/man7/nbrma.7 \
    share/man/man3/MPIX_Win_ilock.3 share/man/man3/nbrma_get_counter.3 \
    ${MPIRUN_OPENMPI:+libexec/nbrma/bench_ompi}; do
    [ -e "$tree/$file" ] || missing="$missing $file"
done
if [ -z "$missing" ]; then ok; else fail "not installed:$missing"; fi

# 3. The installed nbrma-info, its JSON parsed.
if "$tree/bin/nbrma-info" --json >"$scratch/info.json" 2>&1 &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["settings"]' \
        "$scratch/info.json"; then
    ok
else
    fail "installed nbrma-info --json: $(head -3 "$scratch/info.json")"
fi

# 4. An application built against the installed tree with pkg-config, run on nbrma.
flags=$(PKG_CONFIG_PATH="$tree/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root" \
    pkg-config --cflags --libs nbrma)
case "$flags" in *"$root"*) ok ;; *) fail "pkg-config nbrma gave '$flags'" ;; esac
if (cd "$scratch" && $MPICC "$top_srcdir/test/install/app.c" $flags -o app) \
    >"$scratch/build.log" 2>&1; then
    ok
else
    fail "building app.c against the installed tree: $(cat "$scratch/build.log")"
fi
for progress in inline interrupt; do
    if [ -x "$scratch/app" ] &&
        LD_LIBRARY_PATH="$tree/lib" NBRMA_PROGRESS=$progress timeout 60 \
            $MPIEXEC -n 2 "$scratch/app" >"$scratch/run.log" 2>&1 &&
        grep -q "^No Errors" "$scratch/run.log"; then
        ok
    else
        fail "app on the installed library, NBRMA_PROGRESS=$progress: $(head -5 "$scratch/run.log")"
    fi
done

# 4b. The same built with the installed library's directory as its run path, as the README
#     shows (-Wl,-rpath), runs with no LD_LIBRARY_PATH at all.
if (cd "$scratch" && $MPICC "$top_srcdir/test/install/app.c" $flags -Wl,-rpath,"$tree/lib" \
    -o app_rpath) >"$scratch/build_rpath.log" 2>&1 &&
    env -u LD_LIBRARY_PATH timeout 60 $MPIEXEC -n 2 "$scratch/app_rpath" \
        >"$scratch/run_rpath.log" 2>&1 && grep -q "^No Errors" "$scratch/run_rpath.log"; then
    ok
else
    fail "app linked with -Wl,-rpath, run without LD_LIBRARY_PATH: $(cat "$scratch/build_rpath.log")$(head -5 "$scratch/run_rpath.log" 2>/dev/null)"
fi

# 5. Programs that call nothing of nbrma's, built exactly as the README says with the
#    toolchain's defaults (Debian's links with --as-needed): stock.c, and fortran_rma.F90
#    with each Fortran binding. libnbrma must stay linked and run their RMA: each rank's
#    NBRMA_VERBOSE report names the window it created.
libs=$(PKG_CONFIG_PATH="$tree/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root" \
    pkg-config --libs nbrma)
run_on_nbrma() {  # name: runs $scratch/name on 2 ranks, checks data and nbrma's report
    if LD_LIBRARY_PATH="$tree/lib" NBRMA_VERBOSE=1 timeout 60 $MPIEXEC -n 2 "$scratch/$1" \
        >"$scratch/$1.log" 2>&1 && grep -q "^No Errors" "$scratch/$1.log" &&
        [ "$(grep -o 'windows_created=1 ' "$scratch/$1.log" | wc -l)" -eq 2 ]; then
        ok
    else
        fail "$1 did not run its RMA on nbrma: $(readelf -d "$scratch/$1" 2>&1 | grep NEEDED |
            tr -s ' ' | cut -d' ' -f6 | tr '\n' ' ') $(head -5 "$scratch/$1.log")"
    fi
}
if (cd "$scratch" && $MPICC "$top_srcdir/test/install/stock.c" $libs -o stock) \
    >"$scratch/build-stock.log" 2>&1; then
    run_on_nbrma stock
else
    fail "building stock.c: $(cat "$scratch/build-stock.log")"
fi
for binding in F08 MPI MPIF; do
    if (cd "$scratch" && $MPIFORT -cpp -DUSE_$binding "$top_srcdir/test/install/fortran_rma.F90" \
        $libs -o fortran_$binding) >"$scratch/build-f.log" 2>&1; then
        run_on_nbrma fortran_$binding
    else
        fail "building fortran_rma.F90 ($binding): $(cat "$scratch/build-f.log")"
    fi
done

# 5b. Static: libnbrma.a linked into stock.c, with what `pkg-config --static --libs nbrma`
#     adds for it (Libs.private: UCX, the C++ runtime, ...); the program needs no
#     libnbrma.so and runs its RMA on nbrma.
static_libs=$(PKG_CONFIG_PATH="$tree/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root" \
    pkg-config --static --libs nbrma | sed 's/ -lnbrma / /')
if [ ! -f "$tree/lib/libnbrma.a" ]; then
    ok  # configured --disable-static: nothing to link
elif (cd "$scratch" && $MPICC "$top_srcdir/test/install/stock.c" "$tree/lib/libnbrma.a" \
    $static_libs -o stock_static) >"$scratch/build-static.log" 2>&1 &&
    ! readelf -d "$scratch/stock_static" | grep -q 'NEEDED.*libnbrma'; then
    run_on_nbrma stock_static
else
    fail "linking libnbrma.a with pkg-config --static: $(grep -c 'undefined reference' \
        "$scratch/build-static.log") undefined references; $(head -3 "$scratch/build-static.log")"
fi

# 6. MPICH before libnbrma on the link line: nbrma_is_active() says 0, and an MPIX_ call
#    says how to link.
if (cd "$scratch" && $MPICC "$top_srcdir/test/install/wrong_order.c" -lmpich $flags \
    -o wrong_order) >"$scratch/build-wrong.log" 2>&1 &&
    LD_LIBRARY_PATH="$tree/lib" timeout 60 $MPIEXEC -n 2 "$scratch/wrong_order" \
        >"$scratch/wrong.log" 2>&1 && grep -q "^No Errors" "$scratch/wrong.log"; then
    ok
else
    fail "MPICH linked first: $(cat "$scratch/build-wrong.log") $(head -5 "$scratch/wrong.log")"
fi

# 6b. An erroneous call under the default (fatal) error handler names itself and the
#     offending value.
if (cd "$scratch" && $MPICC "$top_srcdir/test/install/fatal.c" $libs -o fatal) \
    >"$scratch/build-fatal.log" 2>&1; then
    # (Run again once if nothing came out: on a loaded machine hydra may tear the job down
    # before it forwarded the output of the ranks that called MPI_Abort.)
    for attempt in 1 2; do
        LD_LIBRARY_PATH="$tree/lib" timeout 60 $MPIEXEC -n 2 "$scratch/fatal" \
            >"$scratch/fatal.log" 2>&1
        rc=$?
        [ -s "$scratch/fatal.log" ] && break
    done
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
        grep -q "Fatal error in MPI_Put: " "$scratch/fatal.log" &&
        grep -q "target rank 5 of a window of 2 ranks" "$scratch/fatal.log" &&
        ! grep -q "MPI_Win_call_errhandler" "$scratch/fatal.log"; then
        ok
    else
        fail "fatal error (exit $rc): $(head -5 "$scratch/fatal.log")"
    fi
else
    fail "building fatal.c: $(cat "$scratch/build-fatal.log")"
fi

# 7. The installed nbrma-bench finds its programs, runs one row on both in two alternated
#    rounds (each job after a second of idle, NBRMA_BENCH_SETTLE), and writes their
#    medians into the current directory, each round's logs too.
mkdir -p "$scratch/cwd"
if (cd "$scratch/cwd" && LD_LIBRARY_PATH="$tree/lib" NBRMA_BENCH_SETTLE=1 "$tree/bin/nbrma-bench" \
    --groups latency --only osu_put_lock --iterations 200 --rounds 2 --plots bench \
    --csv results.csv) >"$scratch/bench.log" 2>&1 &&
    [ -f "$scratch/cwd/bench/logs/latency-nbrma.r2.out" ] &&
    [ "$(grep -c '^# running .*, after 1 s idle\]' "$scratch/bench.log")" -eq "$(grep -c '^# running ' "$scratch/bench.log")" ] &&
    grep -q "^# medians over 2 rounds" "$scratch/cwd/bench/logs/latency-nbrma.out" &&
    grep -q "^osu_put_lock,nbrma-blocking," "$scratch/cwd/results.csv" &&
    grep -q "^osu_put_lock,mpich," "$scratch/cwd/results.csv"; then
    ok
else
    fail "installed nbrma-bench: $(tail -5 "$scratch/bench.log")"
fi
# A settle time that is not a whole number of seconds is a usage error (exit 2), named.
if (cd "$scratch/cwd" && LD_LIBRARY_PATH="$tree/lib" NBRMA_BENCH_SETTLE=3s "$tree/bin/nbrma-bench" \
    --groups latency --no-plots) >"$scratch/settle.log" 2>&1; then
    fail "installed nbrma-bench ran with NBRMA_BENCH_SETTLE=3s"
elif [ $? -eq 2 ] && grep -q "NBRMA_BENCH_SETTLE must be a whole number of seconds" "$scratch/settle.log"; then
    ok
else
    fail "installed nbrma-bench with NBRMA_BENCH_SETTLE=3s: $(tail -3 "$scratch/settle.log")"
fi
# Its summary's peers: line says which peers ran, or why they were skipped, and with
# bench_ompi the summary has the Open MPI ratios (osc/ucx beside nbrma's UCX series).
peers=$(grep '^peers: ' "$scratch/bench.log")
if [ -n "$MPIRUN_OPENMPI" ]; then
    if grep -q "^osu_put_lock,ompi-osc-sm," "$scratch/cwd/results.csv" &&
        grep -q "^osu_put_lock,ompi-osc-rdma," "$scratch/cwd/results.csv" &&
        grep -q "^osu_put_lock,ompi-osc-ucx," "$scratch/cwd/results.csv" &&
        grep -q "^osu_put_lock,nbrma-blocking-ucx," "$scratch/cwd/results.csv" &&
        grep -q "^osu_put_lock 8 ompi-osc-ucx/nbrma-blocking-ucx = " "$scratch/bench.log" &&
        [ "$peers" = "peers: mpich ran; ompi-osc-sm ran (MPI_Win_allocate rows only); ompi-osc-rdma ran (without compare_and_swap rows); ompi-osc-ucx ran" ]; then
        ok
    else
        fail "installed nbrma-bench: no ompi-osc-sm/-rdma/-ucx results, ratios or peers line ($peers): $(tail -5 "$scratch/bench.log")"
    fi
elif grep -q "skipped: bench_ompi not built" "$scratch/bench.log" &&
    printf '%s\n' "$peers" | grep -q '^peers: mpich ran; ompi-osc-sm, ompi-osc-rdma, ompi-osc-ucx skipped: bench_ompi not built'; then
    ok
else
    fail "installed nbrma-bench without bench_ompi: no 'skipped' or peers line ($peers): $(tail -5 "$scratch/bench.log")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
