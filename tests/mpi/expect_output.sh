#!/usr/bin/env bash
# Runs a job and requires its exit status (0 unless --status says) and every
# given line fragment in its output (for programs that print results rather
# than "TEST PASSED", and for jobs that are to fail in a given way).
#
#   expect_output.sh [--status N] --has TEXT [--has TEXT...] -- command [args...]
set -u
needles=()
want=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    --has) needles+=("$2") ;;
    --status) want=$2 ;;
    *) echo "expect_output: expected --has, --status or --, got '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
fail=0
[ "$rc" -eq "$want" ] || { echo "expect_output: FAIL: exit status $rc, expected $want" >&2; fail=1; }
for n in "${needles[@]}"; do
  grep -qF -- "$n" "$out" || { echo "expect_output: FAIL: no line with '$n'" >&2; fail=1; }
done
[ $fail -eq 0 ] && echo "expect_output: exit status $want and all ${#needles[@]} lines found"
exit $fail
