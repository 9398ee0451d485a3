#!/usr/bin/env bash
# Runs a job and requires exit status 0 and every given line fragment in its
# output (for programs that print results rather than "TEST PASSED").
#
#   expect_output.sh --has TEXT [--has TEXT...] -- command [args...]
set -u
needles=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  [ "$1" = "--has" ] || { echo "expect_output: expected --has or --, got '$1'" >&2; exit 2; }
  needles+=("$2")
  shift 2
done
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
fail=0
[ "$rc" -eq 0 ] || { echo "expect_output: FAIL: exit status $rc" >&2; fail=1; }
for n in "${needles[@]}"; do
  grep -qF -- "$n" "$out" || { echo "expect_output: FAIL: no line with '$n'" >&2; fail=1; }
done
[ $fail -eq 0 ] && echo "expect_output: exit status 0 and all ${#needles[@]} lines found"
exit $fail
