#!/usr/bin/env bash
# Two nodes lost one after the other, on four: the cluster is restarted with
# 4 nodes for this test (and with as many as before at its end), the
# training example runs under plain srun on n1..n4 x 2 tasks, n2 is powered
# off, and once the job has recovered, n3 too. The 4 tasks of n1 and n4 are
# half of the job with member 0 (a quorum: docs/membership.md) and finish;
# the model is checked against its serial replay.
#   four_nodes.sh TRAIN_LOGREG SOURCE_DIR
set -u
train=$1 root=$2
. "$(dirname "$0")/cluster_lib.sh"
need_cluster
need_namespace_nodes
cluster=$root/scripts/cluster.sh
before=$(timeout -k 2 10 sinfo -h -N -o '%N' | sort -u | wc -l)
restart() { # NODES
  "$cluster" stop >/dev/null 2>&1
  RINGMEND_CLUSTER_NODES=$1 "$cluster" start >"$work/cluster-$1.log" 2>&1
}
trap 'stop_steps; for n in n1 n2 n3 n4; do "$cluster" heal-node $n >/dev/null 2>&1; done;
  restart "$before"; cleanup_jobs' EXIT
restart 4 || fail "the cluster did not start with 4 nodes: $(tail -3 "$work/cluster-4.log")"
export RINGMEND_TIMEOUT=60 RINGMEND_RECOVERY_TIMEOUT=20

timeout -k 5 120 srun -J "ringmend-$test_name" --mpi=pmix -N 4 -n 8 --ntasks-per-node=2 --overcommit \
  --no-kill --kill-on-bad-exit=0 -o "$work/out-%t.log" "$train" --steps=12000 >"$work/srun.log" 2>&1 &
srun_pid=$!
wait_for_training "$work" || fail "the job did not start within 60 s"
sleep 1
{
  "$cluster" kill-node n2
  wait_for_recovery "$work" && echo "the job recovered from n2's loss"
  "$cluster" kill-node n3
} >"$work/fault.log" 2>&1
for _ in $(seq 1 1200); do
  grep -qE "final loss|FENCED|GAVE UP" "$work"/out-*.log 2>/dev/null && break
  kill -0 "$srun_pid" 2>/dev/null || break
  sleep 0.1
done
stop_steps
kill -9 "$srun_pid" 2>/dev/null
wait "$srun_pid" 2>/dev/null
out=$(cat "$work"/out-*.log "$work/fault.log" 2>/dev/null | grep -v '^step ')
echo "$out"
has "n2, then n3 after the recovery, were powered off" "n2 powered off" "the job recovered from n2's loss" \
  "n3 powered off"
grep -qE "^final loss .* on 4 ranks .*MATCHES the reference$" <<<"$out" &&
  pass "the 4 tasks of n1 and n4 finished, the model matches its serial replay" ||
  fail "no final model of 4 ranks matching the reference"
missing=""
for id in 2 3 4 5; do
  grep -qE "recovered from the loss of members? ([0-9]+ \(node n[0-9]+\), )*$id \(node" <<<"$out" ||
    missing+=" $id"
done
[ -z "$missing" ] && pass "the loss of members 2 3 (n2) and 4 5 (n3) was recovered from" ||
  fail "no recovery from the loss of member(s)$missing"
finish
