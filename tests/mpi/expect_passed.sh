#!/usr/bin/env bash
# Runs an MPI job and checks it from the outside: with ULFM on, mpirun exits
# 0 when a rank is killed (that is the point), so a crashed rank could go
# unnoticed by the exit status alone. Every test program prints one
# "TEST PASSED" line per rank that verified its results; this wrapper
# requires exactly EXPECTED of them, no "TEST FAILED", and exit status 0;
# and none of the UCX messages that a failure leaves and ringmend takes
# into its debug log (transport/ucx_log.hpp), nor a UCX request leaked.
#
#   expect_passed.sh EXPECTED command [args...]
set -u
expected=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
# Occurrences, not lines: the launcher forwards each rank's output in
# pieces, and two ranks' lines can end up on one line.
passed=$(grep -o "TEST PASSED" "$out" | wc -l)
failed=$(grep -o "TEST FAILED" "$out" | wc -l)
# A fault rule that never fired leaves the test checking a run without the
# failure it was written for.
unfired=$(grep -c "never fired" "$out")
if [ "$unfired" -ne 0 ]; then
  echo "expect_passed: FAIL: $unfired fault rule(s) never fired: the test did not exercise its failure" >&2
  exit 1
fi
# UCX printing these means a dead peer's or an abandoned worker's traces
# reached stderr, or a UCX request was not given back.
ucx_noise=$(grep -cE "UCX +(ERROR|WARN) +(connect\(.*Connection (refused|reset by peer)|try to increase|unexpected tag-receive descriptor|.*was not returned to mpool)" "$out")
if [ "$ucx_noise" -ne 0 ]; then
  echo "expect_passed: FAIL: UCX printed $ucx_noise line(s) that ringmend should have handled (see above)" >&2
  exit 1
fi
if [ "$rc" -ne 0 ] || [ "$passed" -ne "$expected" ] || [ "$failed" -ne 0 ]; then
  echo "expect_passed: FAIL: exit status $rc, $passed ranks passed (expected $expected), $failed failed" >&2
  [ "$rc" -eq 124 ] && echo "expect_passed: the job timed out (a hang)" >&2
  exit 1
fi
echo "expect_passed: $passed of $expected ranks passed"
