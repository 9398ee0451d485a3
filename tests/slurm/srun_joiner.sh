#!/usr/bin/env bash
# A process started after the job joins it: in one allocation of 3 nodes,
# the training example runs as an srun step of 4 tasks on n1 and n2; once
# it trains, a second step of 2 tasks on n3 starts with RINGMEND_JOIN=1.
# The joiners find the members through the job's rendezvous directory, are
# admitted at the members' next call with the model (registered state), and
# the job finishes on 6 ranks with a model that matches its serial replay.
# Then, with the job grown, n1 (member 0's node) is not touched: the joiners
# must also have taken part in every step after their admission (the
# replay checks that), and the rendezvous directory must be empty at the end.
#   srun_joiner.sh TRAIN_LOGREG
set -u
train=$1
. "$(dirname "$0")/cluster_lib.sh"
need_cluster
need_namespace_nodes
export RINGMEND_TIMEOUT=60 RINGMEND_RECOVERY_TIMEOUT=20
export RINGMEND_RENDEZVOUS_DIR=$work/rendezvous
trap 'stop_steps; cleanup_jobs' EXIT

script=$work/allocation.sh
cat >"$script" <<SCRIPT
#!/bin/bash
srun --mpi=pmix --no-kill --kill-on-bad-exit=0 -N 2 -n 4 -w n1,n2 --overcommit -o '$work/out-%t.log' \\
  '$train' --steps=9000 &
for _ in \$(seq 1 600); do
  [ "\$(cat '$work'/out-*.log 2>/dev/null | grep -c '^step ')" -ge 1 ] && break
  sleep 0.1
done
sleep 1
ls '$RINGMEND_RENDEZVOUS_DIR' >'$work/rendezvous-before.txt'
RINGMEND_JOIN=1 srun --mpi=pmix --no-kill --kill-on-bad-exit=0 -N 1 -n 2 -w n3 --overcommit \\
  -o '$work/join-%t.log' '$train' --steps=9000
echo "joiners' step: exit status \$?"
wait
echo "members' step: exit status \$?"
SCRIPT
chmod +x "$script"
timeout -k 5 150 salloc -J "ringmend-$test_name" -N 3 -n 6 --overcommit --no-kill "$script" >"$work/salloc.log" 2>&1
rc=$?
out=$(cat "$work/salloc.log" "$work"/out-*.log "$work"/join-*.log 2>/dev/null | grep -v '^step ')
echo "$out"
[ "$rc" -eq 0 ] && pass "the allocation's script finished" || fail "the allocation's script ended with status $rc"
[ "$(wc -l <"$work/rendezvous-before.txt" 2>/dev/null)" = 4 ] &&
  pass "the 4 members published their records before the joiners came" ||
  fail "the rendezvous directory held [$(tr '\n' ' ' <"$work/rendezvous-before.txt" 2>/dev/null)] before the joiners came"
has "both joiners were admitted into the native group" "joined the job as process"
[ "$(grep -c 'joined the job as process' <<<"$out")" -eq 2 ] && pass "two joiners joined" ||
  fail "$(grep -c 'joined the job as process' <<<"$out") joiners joined, not 2"
grep -qE "^final loss .* on 6 ranks .*MATCHES the reference$" <<<"$out" &&
  pass "the job finished on 6 ranks, the model matches its serial replay" ||
  fail "no final model of 6 ranks matching the reference"
admitted=$(sed -n 's/^membership change: spare(s) \([0-9, ]*\) admitted.*/\1/p' <<<"$out" | tr -d ' ' | tr ',' '\n' | sort -u | tr '\n' ' ')
[ "$admitted" = "4 5 " ] && pass "the joiners became members 4 and 5" || fail "the members admitted [$admitted], not 4 and 5"
has "both steps ended normally" "joiners' step: exit status 0" "members' step: exit status 0"
[ -z "$(ls -A "$RINGMEND_RENDEZVOUS_DIR" 2>/dev/null)" ] && pass "every record was withdrawn at the end" ||
  fail "records left in the rendezvous directory: $(ls -A "$RINGMEND_RENDEZVOUS_DIR")"
finish
