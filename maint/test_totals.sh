#!/bin/sh
# test_totals.sh — add up what `make check` runs, from the logs it left (runs nothing).
#
# Usage: test_totals.sh LABEL=DIR[:STATUS] ... LABEL=FILE[:STATUS] ...
#   DIR     a build directory where `make check` ran (or `make check-asan`'s build-asan,
#           `make check-tsan`'s build-tsan, which runs the unit tests only)
#   FILE    the log of a step that prints its own "N passed, N failed" line last
#           (maint/check_deb.sh): counted from that line
#   STATUS  the exit status of that make (or step); nonzero with no failure in the logs (say the
#           build broke before any test ran) counts as one failure
#
# Per test of the automake harness (each DIR/**/*.trs), the count comes from its log:
#   GoogleTest ("[  PASSED  ] N tests", "[  FAILED  ] N tests"): the test cases;
#   test/rma/runtests* ("N passed, N failed, N skipped"): the MPI suite's programs;
#   anything else (maint/check_symbols.sh): one test, by its .trs result.
# A test whose harness result is FAIL/ERROR but whose log shows no failure (a crash, or a
# sanitizer report after the last case) counts one more failure.
# Prints a line per test (with the first lines of each failure: the suites' FAIL lines,
# GoogleTest's FAILED cases), then ONE total line "N passed, N failed" (skips are shown per
# test, not counted); exits 1 if anything failed.
set -u

total_passed=0
total_failed=0

for arg in "$@"; do
    label=${arg%%=*}
    rest=${arg#*=}
    dir=${rest%%:*}
    status=0
    case $rest in *:*) status=${rest##*:} ;; esac
    found_failure=0
    if [ -f "$dir" ]; then # a step's log: its last "N passed, N failed" line, or one failure
        line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$dir" | tail -n 1)
        passed=$(printf '%s\n' "$line" | sed -n 's/.*\b\([0-9][0-9]*\) passed, .*/\1/p')
        failed=$(printf '%s\n' "$line" | sed -n 's/.* passed, \([0-9][0-9]*\) failed.*/\1/p')
        passed=${passed:-0} failed=${failed:-0}
        if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
            failed=1
            echo "$label: exited with status $status before its checks (see $dir)"
        fi
        echo "$label: $passed passed, $failed failed"
        grep '^FAIL ' "$dir" | head -n 20 | sed -e "s|^|    $label: |"
        total_passed=$((total_passed + passed))
        total_failed=$((total_failed + failed))
        continue
    fi
    trs_files=$(find "$dir" -name '*.trs' -not -path "$dir/build-asan/*" -not -path "$dir/build-tsan/*" \
        2>/dev/null | sort)
    if [ -z "$trs_files" ] || [ ! -f "$dir/test-suite.log" ]; then
        echo "$label: no test results in $dir (make check did not get to the tests)"
        total_failed=$((total_failed + 1))
        continue
    fi
    for trs in $trs_files; do
        log=${trs%.trs}.log
        name=${trs#"$dir"/}
        name=${name%.trs}
        result=$(sed -n 's/^:test-result: //p' "$trs" | head -n 1)
        passed="" failed="" skipped=""
        if grep -q '^\[==========\] .* ran\.' "$log" 2>/dev/null; then
            kind="gtest"
            passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\..*/\1/p' "$log" | tail -n 1)
            failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\{0,1\}, listed below.*/\1/p' "$log" | tail -n 1)
            skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\{0,1\}, listed below.*/\1/p' "$log" | tail -n 1)
        elif line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" 2>/dev/null | tail -n 1) &&
            [ -n "$line" ]; then
            kind="MPI suite"
            set -- $line
            passed=$1 failed=$3 skipped=${5:-0}
        else
            kind="script"
            case $result in
                PASS) passed=1 ;;
                SKIP) skipped=1 ;;
                *) failed=1 ;;
            esac
        fi
        passed=${passed:-0} failed=${failed:-0} skipped=${skipped:-0}
        note=""
        case $result in
            FAIL | ERROR)
                if [ "$failed" -eq 0 ]; then
                    failed=1
                    note=" (exit status: $result with no failed case in the log; see $log)"
                fi
                ;;
        esac
        echo "$label: $name ($kind): $passed passed, $failed failed, $skipped skipped$note"
        if [ "$failed" -ne 0 ]; then
            found_failure=1
            # what failed, so a CI log that keeps only its end still names it
            grep -E -A12 '^(FAIL |\[  FAILED  \] [^0-9])' "$log" 2>/dev/null | head -n 60 |
                sed -e "s|^|    $label: |"
        fi
        total_passed=$((total_passed + passed))
        total_failed=$((total_failed + failed))
    done
    if [ "$status" -ne 0 ] && [ $found_failure -eq 0 ]; then
        echo "$label: make exited with status $status but no test failed (build error?)"
        total_failed=$((total_failed + 1))
    fi
done

echo "$total_passed passed, $total_failed failed"
[ $total_failed -eq 0 ]
