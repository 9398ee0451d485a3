#!/usr/bin/env bash
# A process started after the job joins it (RINGMEND_JOIN=1), on one
# machine: a job of 3 ranks on the native membership publishes its records
# in a rendezvous directory; once it computes, a fourth process, started on
# its own (no launcher), joins, is admitted with the registered state at
# the members' next call, and every member, the joiner too, checks every
# result and finishes with 4 ranks. The directory is empty at the end.
#   join_later.sh MPIRUN PROGRAM
set -u
mpirun=$1 prog=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export RINGMEND_TIMEOUT=60 RINGMEND_RENDEZVOUS_DIR=$work/rendezvous
args=(--iters=80 --sleep-ms=40 --count=1000 --expect-size=4)
timeout -k 5 90 "$mpirun" --oversubscribe -np 3 -x RINGMEND_TIMEOUT -x RINGMEND_RENDEZVOUS_DIR \
  -x RINGMEND_MEMBERSHIP=native "$prog" "${args[@]}" >"$work/members.log" 2>&1 &
members=$!
for _ in $(seq 1 300); do
  [ "$(ls "$RINGMEND_RENDEZVOUS_DIR" 2>/dev/null | wc -l)" -ge 3 ] && break
  sleep 0.1
done
sleep 0.5
RINGMEND_JOIN=1 timeout -k 5 60 "$prog" "${args[@]}" >"$work/joiner.log" 2>&1
joiner_rc=$?
wait "$members"
members_rc=$?
cat "$work/members.log" "$work/joiner.log"
failed=0
check() { if eval "$2"; then echo "PASS: $1"; else echo "FAIL: $1"; failed=1; fi; }
check "the members' job succeeded" '[ "$members_rc" -eq 0 ]'
check "the joiner succeeded" '[ "$joiner_rc" -eq 0 ]'
check "the joiner joined the native group" 'grep -q "joined the job as process" "$work/joiner.log"'
check "the 3 members passed with 4 ranks" \
  '[ "$(grep -c "^TEST PASSED .* final size 4" "$work/members.log")" -eq 3 ]'
check "the joiner passed with 4 ranks" 'grep -q "^TEST PASSED .* final size 4" "$work/joiner.log"'
check "the members saw it join" 'grep -q "joined \[ 3 \]" "$work/members.log"'
check "every record was withdrawn" '[ -z "$(ls -A "$RINGMEND_RENDEZVOUS_DIR" 2>/dev/null)" ]'
exit $failed
