#!/usr/bin/env bash
# A whole node lost (Open MPI 5.0 ends the job when a node's PRRTE daemon
# dies). A batch job on 2 nodes x 2 tasks (--no-kill, so that Slurm keeps
# the allocation) runs the training example through the relaunch loop of
# docs/slurm.md; once its ranks run on n2, the test powers n2 off
# (scripts/cluster.sh kill-node: every process of the node, slurmd
# included, SIGKILLed at once). The first launch must end with status 5 and
# a summary that names n2; the loop must then relaunch on n1 alone and
# finish with a model that matches the reference, status 0.
#   node_loss.sh RINGMEND_RUN TRAIN_LOGREG
set -u
run=$1 train=$2
. "$(dirname "$0")/cluster_lib.sh"
need_cluster
cluster=$(cd "$(dirname "$0")/../.." && pwd)/scripts/cluster.sh
grep -qx "NETNS=1" "${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}/layout" 2>/dev/null ||
  skip "the cluster runs its nodes on 127.0.0.1, not in network namespaces: no node can be powered off"
trap '"$cluster" heal-node n2 >/dev/null 2>&1; cleanup_jobs' EXIT

lost=$work/lost-nodes
power_off_when_running n2 "$train" "$work/killer.log" &
killer=$!

batch 240 "$work/job.out" -N 2 --ntasks-per-node=2 --overcommit --no-kill -- \
  "export RINGMEND_TIMEOUT=60" \
  "for attempt in 1 2 3; do" \
  "  echo \"launch \$attempt\"" \
  "  '$run' --exclude-file '$lost' '$train' --steps=4000 --batch=4000" \
  "  rc=\$?" \
  "  echo \"launch \$attempt: exit status \$rc\"" \
  "  [ \$rc -eq 5 ] || break" \
  "done" \
  "exit \$rc"
wait "$killer"
# The srun of the lost launch's daemon step may still wait for n2's step
# daemon, which is gone: Slurm ends it when it declares the node down
# (SlurmdTimeout); the test does not wait for that.
if [ -s "$work/job" ]; then
  for p in $(pgrep -x srun); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_JOB_ID=$(cat "$work/job")" && kill -9 "$p"
  done
fi
echo "$out"
echo "----"
cat "$work/killer.log"
grep -q "n2 powered off" "$work/killer.log" && pass "n2 was powered off during the job" ||
  fail "n2 was not powered off during the job"
if [ "$rc" -eq 0 ]; then pass "the batch job succeeded"; else fail "the batch job's exit status is $rc"; fi
has "the first launch lost n2 and said so" "launch 1: exit status 5" "node n2 was lost" \
  "ringmend-run --exclude n2" "lost with its node"
has "the lost node was recorded" "launch 2"
[ "$(cat "$lost" 2>/dev/null)" = n2 ] && pass "the exclude file names n2" || fail "the exclude file holds '$(cat "$lost" 2>/dev/null)'"
has "the relaunch ran on n1 alone and finished" "2 ranks on n1:2 (n2 left out: --exclude)" "launch 2: exit status 0" \
  "MATCHES the reference" "exit status 0: every rank finished normally"
finish
