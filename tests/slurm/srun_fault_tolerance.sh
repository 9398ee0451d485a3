#!/usr/bin/env bash
# Plain `srun` is fault tolerant: the training example, started with
#   srun --mpi=pmix --no-kill --kill-on-bad-exit=0 ./train_logreg
# on 3 nodes x 2 tasks of the namespace cluster, runs on the native
# membership (no MPI after start-up) and survives, each case once while it
# trains, with the final model checked against its serial replay:
#   process     task 3 SIGKILLed (its node lives)
#   node        n2 powered off (kill-node: both of its tasks at once)
#   rank0-node  n1 powered off: member 0, the application's rank 0 and the
#               first leader of every view change, with its node mate
#   cut         n3 cut off: its tasks are suspected after the heartbeat
#               timeout; healed, they must leave with an error, never finish
# Every case proves its fault landed (the victim died, the node was powered
# off or cut during the job) and that the others learned of it.
#   srun_fault_tolerance.sh TRAIN_LOGREG SOURCE_DIR
set -u
train=$1 root=$2
. "$(dirname "$0")/cluster_lib.sh"
need_cluster
cluster=$root/scripts/cluster.sh
need_namespace_nodes
export RINGMEND_TIMEOUT=60 RINGMEND_RECOVERY_TIMEOUT=20
trap 'stop_steps; for n in n1 n2 n3; do "$cluster" heal-node $n >/dev/null 2>&1; done; cleanup_jobs' EXIT

# run CASE FAULT...: the job; FAULT runs (in the background) once every
# task has started and trained for a moment; waits for the job's end (at
# most 120 s; a lost node's step daemon is not waited for).
run() {
  local name=$1 started=0
  shift
  dir=$work/$name
  mkdir -p "$dir"
  timeout -k 5 120 srun -J "ringmend-$test_name" --mpi=pmix -N 3 -n 6 --ntasks-per-node=2 --overcommit \
    --no-kill --kill-on-bad-exit=0 -o "$dir/out-%t.log" "$train" --steps=9000 >"$dir/srun.log" 2>&1 &
  local srun_pid=$!
  for _ in $(seq 1 600); do
    [ "$(cat "$dir"/out-*.log 2>/dev/null | grep -c '^step ')" -ge 1 ] && { started=1; break; }
    sleep 0.1
  done
  [ $started -eq 1 ] || { fail "$name: the job did not start within 60 s"; stop_steps; return 1; }
  sleep 1
  "$@" >"$dir/fault.log" 2>&1
  for _ in $(seq 1 1200); do
    grep -qE "final loss|FENCED|GAVE UP" "$dir"/out-*.log 2>/dev/null && break
    kill -0 "$srun_pid" 2>/dev/null || break
    sleep 0.1
  done
  sleep 2 # the cut side, healed, leaves meanwhile
  stop_steps
  kill -9 "$srun_pid" 2>/dev/null
  wait "$srun_pid" 2>/dev/null
  out=$(cat "$dir"/out-*.log "$dir/fault.log" 2>/dev/null | grep -v '^step ')
  echo "--- $name"
  echo "$out"
}
task_pid() { # the pid of task $1 of the running step
  local p
  for p in $(pgrep -x train_logreg); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_PROCID=$1" && { echo "$p"; return; }
  done
}
kill_task() {
  local p
  p=$(task_pid "$1")
  [ -n "$p" ] && kill -9 "$p" && echo "task $1 (pid $p) SIGKILLed"
}
cut_and_heal() {
  "$cluster" cut-node "$1"
  sleep 4
  "$cluster" heal-node "$1"
}
matched() { # CASE SIZE LOST
  has "$1: the survivors finished, the model matches its serial replay" "final loss" "on $2 ranks (epoch 1)" \
    "MATCHES the reference"
  has "$1: the loss was recovered from" "recovered from the loss of member$3"
}

run process kill_task 3
has "process: task 3 died during the job" "task 3 (pid"
matched process 5 " 3 (node n2)"

run node "$cluster" kill-node n2
has "node: n2 was powered off during the job" "n2 powered off"
matched node 4 "s 2 (node n2), 3 (node n2)"
"$cluster" heal-node n2 >/dev/null

run rank0-node "$cluster" kill-node n1
has "rank0-node: n1 was powered off during the job" "n1 powered off"
matched rank0-node 4 "s 0 (node n1), 1 (node n1)"
"$cluster" heal-node n1 >/dev/null

run cut cut_and_heal n3
has "cut: n3 was cut off during the job" "n3 cut off"
matched cut 4 "s 4 (node n3), 5 (node n3)"
if grep -q "final loss" "$work/cut/out-4.log" "$work/cut/out-5.log"; then
  fail "cut: a task of the cut node finished"
elif grep -qE "left out of view|no new view|GAVE UP|FENCED" "$work/cut/out-4.log" "$work/cut/out-5.log"; then
  pass "cut: the cut node's tasks left with an error"
else
  fail "cut: the cut node's tasks did not say why they left"
fi
finish
