#!/usr/bin/env bash
# Runs a job whose command line is bad and requires that it fails, with the
# error line from every one of its NP ranks (none left waiting for the others).
#
#   every_rank_refuses.sh NP TEXT -- command [args...]
set -u
np=$1 text=$2
shift 2
[ "${1:-}" = -- ] && shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
said=$(grep -cF -- "$text" "$out")
if [ "$rc" -eq 0 ] || [ "$said" -ne "$np" ]; then
  echo "every_rank_refuses: FAIL: exit status $rc (want non-zero), $said of $np ranks said '$text'" >&2
  exit 1
fi
echo "TEST PASSED: exit status $rc, all $np ranks said '$text'"
