#!/usr/bin/env bash
# A process started after the job joins it (RINGMEND_JOIN=1), on one
# machine: a job of 3 ranks on the native membership publishes its records
# in a rendezvous directory; once it computes, a fourth process, started on
# its own (no launcher), joins, is admitted with the registered state at
# the members' next call, and every member, the joiner too, checks every
# result and finishes with 4 ranks. The directory is empty at the end.
# Bad input: a joiner with spares, one with no job named, one whose
# directory holds no record, one whose job has ended (its records copied
# while it ran), each a clear error and a non-zero status within seconds,
# never a wait.
#   join_later.sh MPIRUN PROGRAM
set -u
mpirun=$1 prog=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export RINGMEND_TIMEOUT=60 RINGMEND_RENDEZVOUS_DIR=$work/rendezvous
# The members compute for 3.2 s (80 x 40 ms) in calls too small to wait:
# the joiner comes after 0.5 s, and its admission must land while they
# compute, within a second (docs/membership.md, "Joiners").
args=(--iters=80 --sleep-ms=40 --count=1000 --expect-size=4)
failed=0
check() { if eval "$2"; then echo "PASS: $1"; else echo "FAIL: $1"; failed=1; fi; }
refused() { # NAME EXPECTED-TEXT ENV...: a joiner that must fail at once, saying why
  local name=$1 text=$2 rc
  shift 2
  env "$@" timeout -k 2 20 "$prog" "${args[@]}" >"$work/bad.log" 2>&1
  rc=$?
  grep -v '^$' "$work/bad.log" | head -3
  check "$name: refused with status $rc (not 0, not the 20 s bound)" '[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]'
  check "$name: the error says '$text'" 'grep -qF -- "$text" "$work/bad.log"'
}
refused "join with spares" "not with RINGMEND_SPARES" RINGMEND_JOIN=1 RINGMEND_SPARES=1
refused "join without a job" "no job to join" -u RINGMEND_RENDEZVOUS_DIR -u SLURM_JOB_ID RINGMEND_JOIN=1
mkdir -p "$work/empty"
refused "join an empty directory" "no running job to join" RINGMEND_JOIN=1 RINGMEND_RENDEZVOUS_DIR="$work/empty"
timeout -k 5 90 "$mpirun" --oversubscribe -np 3 -x RINGMEND_TIMEOUT -x RINGMEND_RENDEZVOUS_DIR \
  -x RINGMEND_MEMBERSHIP=native "$prog" "${args[@]}" >"$work/members.log" 2>&1 &
members=$!
for _ in $(seq 1 300); do
  [ "$(ls "$RINGMEND_RENDEZVOUS_DIR" 2>/dev/null | wc -l)" -ge 3 ] && break
  sleep 0.1
done
sleep 0.5
cp -r "$RINGMEND_RENDEZVOUS_DIR" "$work/stale" # the records of a job that will have ended
RINGMEND_JOIN=1 timeout -k 5 60 "$prog" "${args[@]}" >"$work/joiner.log" 2>&1
joiner_rc=$?
wait "$members"
members_rc=$?
cat "$work/members.log" "$work/joiner.log"
check "the members' job succeeded" '[ "$members_rc" -eq 0 ]'
check "the joiner succeeded" '[ "$joiner_rc" -eq 0 ]'
check "the joiner joined the native group" 'grep -q "joined the job as process" "$work/joiner.log"'
check "the 3 members passed with 4 ranks" \
  '[ "$(grep -c "^TEST PASSED .* final size 4" "$work/members.log")" -eq 3 ]'
check "the joiner passed with 4 ranks" 'grep -q "^TEST PASSED .* final size 4" "$work/joiner.log"'
check "the members saw it join" 'grep -q "joined \[ 3 \]" "$work/members.log"'
admitted_in=$(sed -n 's/.*member 0 epoch 0: native membership: view 1 .* installed after \([0-9.e-]*\) s.*/\1/p' "$work/members.log")
check "the view that admits it took under a second (${admitted_in:-?} s)" \
  'awk -v s="${admitted_in:-99}" "BEGIN { exit !(s < 1.0) }"'
check "every record was withdrawn" '[ -z "$(ls -A "$RINGMEND_RENDEZVOUS_DIR" 2>/dev/null)" ]'
refused "join a job that ended" "could be reached" RINGMEND_JOIN=1 RINGMEND_RENDEZVOUS_DIR="$work/stale"
exit $failed
