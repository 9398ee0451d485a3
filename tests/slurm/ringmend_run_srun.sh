#!/usr/bin/env bash
# ringmend-run --launcher srun survives a whole node's loss in place: a
# batch job on 3 nodes x 2 tasks (--no-kill) runs the training example
# through ringmend-run, which starts it as one srun step on the native
# membership; once its ranks have run on n2 for a moment, the test powers n2
# off (scripts/cluster.sh kill-node). The one launch must finish with the 4
# survivors, a model that matches its serial replay, exit status 0, and a
# summary that names the two ranks lost with n2 (srun itself would wait for
# n2's step daemon until Slurm declares the node down: ringmend-run ends it
# once the survivors are done).
#   ringmend_run_srun.sh RINGMEND_RUN TRAIN_LOGREG
set -u
run=$1 train=$2
. "$(dirname "$0")/cluster_lib.sh"
need_cluster
cluster=$(cd "$(dirname "$0")/../.." && pwd)/scripts/cluster.sh
need_namespace_nodes
trap '"$cluster" heal-node n2 >/dev/null 2>&1; cleanup_jobs' EXIT

power_off_when_running n2 "$train" "$work/killer.log" &
killer=$!

batch 240 "$work/job.out" -N 3 --ntasks-per-node=2 --overcommit --no-kill -- \
  "export RINGMEND_TIMEOUT=60" \
  "'$run' --launcher srun '$train' --steps=9000" \
  "rc=\$?" \
  "echo \"launch: exit status \$rc\"" \
  "exit \$rc"
wait "$killer"
echo "$out"
echo "----"
cat "$work/killer.log"
grep -q "n2 powered off" "$work/killer.log" && pass "n2 was powered off during the job" ||
  fail "n2 was not powered off during the job"
if [ "$rc" -eq 0 ]; then pass "the batch job succeeded"; else fail "the batch job's exit status is $rc"; fi
has "ringmend-run started one srun step on the native membership" "fault tolerance on (srun, the native membership" \
  "srun --mpi=pmix --no-kill --kill-on-bad-exit=0 -n 6 -w n1,n1,n2,n2,n3,n3 -m arbitrary"
grep -qE "^final loss .* on 4 ranks .*MATCHES the reference$" <<<"$out" &&
  pass "the 4 survivors finished in the same launch, the model matches its serial replay" ||
  fail "no final model of 4 ranks matching the reference"
grep -qE "recovered from the loss of members? ([0-9]+ \(node n2\)(, )?)+" <<<"$out" &&
  pass "the survivors recovered from the loss of n2's ranks" || fail "no recovery from n2's ranks"
has "the summary counts the survivors and the launch's exit status" "4 finished normally" "launch: exit status 0"
finish
