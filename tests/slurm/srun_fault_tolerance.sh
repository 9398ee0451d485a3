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
#   two-nodes   n2 powered off, then n3 once the job has recovered: n1's two
#               tasks finish (half of the job and member 0: a quorum)
#   in-recovery task 3 SIGKILLed, and both tasks of n3 kill themselves inside
#               the recovery that follows (RINGMEND_FAULT phase=recovery)
#   spares      RINGMEND_SPARES=2 (tasks 4 and 5, on n3, wait): n2 powered
#               off, and the spares take its members' places (size kept)
#   spare-node  RINGMEND_SPARES=2: n3, holding only the spares, powered off;
#               the members go on, with no member lost
#   spare-cut   RINGMEND_SPARES=2: n3, holding only the spares, cut off and
#               healed: the members go on with no member lost, and the
#               spares leave with an error (never join): fenced, or at
#               once when they find every member out of reach
#   release     rank 2 (on n2) released at step 30 (it leaves the view by a
#               view change), then n2 powered off: its other task is lost
#   stopped     task 3 stopped with SIGSTOP for ever (RINGMEND_HANG_TIMEOUT=3):
#               excluded as stuck (killed) by its node mate, the others go on
#   stopped-leader  task 2, n2's first (the node's heartbeat), stopped for
#               ever: the view change leaves it out and its mate kills it
#               (the heartbeat may take its silence for n2's loss: then the
#               mate, left out too, kills it on its way out, and 4 finish)
# Every case proves its fault landed (the victim died, the node was powered
# off or cut during the job) and that the others learned of it.
# With RINGMEND_RUN, every case runs once more through the launcher instead
# (ringmend-run --launcher srun, inside an salloc allocation with --no-kill):
# the same native membership, one srun step that ringmend-run starts and
# ends, all ranks' output in one stream.
#   srun_fault_tolerance.sh TRAIN_LOGREG SOURCE_DIR [RINGMEND_RUN]
set -u
train=$1 root=$2 launcher=${3:-}
. "$(dirname "$0")/cluster_lib.sh"
need_cluster
cluster=$root/scripts/cluster.sh
need_namespace_nodes
export RINGMEND_TIMEOUT=60 RINGMEND_RECOVERY_TIMEOUT=20
trap 'stop_steps; for n in n1 n2 n3; do "$cluster" heal-node $n >/dev/null 2>&1; done; cleanup_jobs' EXIT

# run CASE FAULT...: the job (RINGMEND_FAULT from $fault_rules); FAULT runs (in the background) once every
# task has started and trained for a moment; waits for the job's end (at
# most 120 s; a lost node's step daemon is not waited for).
run() {
  local name=$1 started=0
  shift
  dir=$work/$name
  mkdir -p "$dir"
  if [ -n "$launcher" ]; then
    RINGMEND_FAULT=${fault_rules:-} timeout -k 5 120 salloc -J "ringmend-$test_name" -N 3 -n 6 --ntasks-per-node=2 \
      --overcommit --no-kill "$launcher" --launcher srun --spares "${spares:-0}" "$train" --steps=9000 \
      ${train_args:-} >"$dir/out-all.log" 2>&1 &
  else
    RINGMEND_FAULT=${fault_rules:-} RINGMEND_SPARES=${spares:-0} timeout -k 5 120 srun -J "ringmend-$test_name" --mpi=pmix -N 3 -n 6 --ntasks-per-node=2 --overcommit \
      --no-kill --kill-on-bad-exit=0 -o "$dir/out-%t.log" "$train" --steps=9000 ${train_args:-} >"$dir/srun.log" 2>&1 &
  fi
  local srun_pid=$!
  wait_for_training "$dir" && started=1
  [ $started -eq 1 ] || { fail "$name: the job did not start within 60 s"; stop_steps; return 1; }
  sleep 1
  "$@" >"$dir/fault.log" 2>&1
  for _ in $(seq 1 1200); do
    grep -qE "final loss|FENCED|GAVE UP" "$dir"/out-*.log 2>/dev/null && break
    kill -0 "$srun_pid" 2>/dev/null || break
    sleep 0.1
  done
  # The cut side (n3's tasks 4 and 5), healed, leaves meanwhile: with an
  # error once it hears the decision, or when it gives up
  # (RINGMEND_RECOVERY_TIMEOUT, 20 s here) when the others ended before it
  # could ask them.
  if [ -n "${wait_for_cut_node:-}" ]; then
    for _ in $(seq 1 250); do
      [ -z "$(task_pid 4)$(task_pid 5)" ] && break
      sleep 0.1
    done
  fi
  sleep 2
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
kill_task() { # (with RINGMEND_CLUSTER_DRY_FAULTS=1 said, not done)
  local p signal=-9
  [ "${RINGMEND_CLUSTER_DRY_FAULTS:-0}" = 1 ] && signal=-0
  p=$(task_pid "$1")
  [ -n "$p" ] && kill $signal "$p" && echo "task $1 (pid $p) SIGKILLed"
}
stop_task() { # SIGSTOP for ever, then waits (30 s at most) until the process is gone
  local p signal=-STOP
  [ "${RINGMEND_CLUSTER_DRY_FAULTS:-0}" = 1 ] && signal=-0
  p=$(task_pid "$1")
  [ -n "$p" ] && kill $signal "$p" && echo "task $1 (pid $p) stopped"
  for _ in $(seq 1 300); do
    kill -0 "$p" 2>/dev/null || { echo "stopped task $1 is gone"; return; }
    sleep 0.1
  done
}
cut_and_heal() {
  "$cluster" cut-node "$1"
  sleep 4
  "$cluster" heal-node "$1"
}
matched() { # CASE SIZE "LOST IDS" [LEAST_EPOCH]
  # A node's tasks may die a few milliseconds apart (kill-node kills them
  # one by one): one recovery or one per death, whichever came.
  local epoch
  epoch=$(sed -n "s/^final loss .* on $2 ranks (epoch \([0-9]*\)); .*MATCHES the reference$/\1/p" <<<"$out")
  if [ -n "$epoch" ] && [ "$epoch" -ge "${4:-1}" ]; then
    pass "$1: the $2 survivors finished (epoch $epoch), the model matches its serial replay"
  else
    fail "$1: no final model of $2 ranks matching the reference"
  fi
  local id
  for id in $3; do
    grep -qE "recovered from the loss of members? ([0-9]+ \(node n[0-9]+\), )*$id \(node" <<<"$out" ||
      { fail "$1: no recovery from the loss of member $id"; return; }
  done
  pass "$1: the loss of members $3 was recovered from"
}
released_then_n2() {
  local _
  for _ in $(seq 1 300); do
    grep -q "released after step" "$work/release"/out-*.log 2>/dev/null && break
    sleep 0.1
  done
  grep -h "released after step" "$work/release"/out-*.log
  "$cluster" kill-node n2
}
two_nodes() {
  "$cluster" kill-node n2
  wait_for_recovery "$work/two-nodes" && echo "the job recovered from n2's loss"
  "$cluster" kill-node n3
}

run process kill_task 3
has "process: task 3 died during the job" "task 3 (pid"
matched process 5 "3"

run node "$cluster" kill-node n2
has "node: n2 was powered off during the job" "n2 powered off"
matched node 4 "2 3"
"$cluster" heal-node n2 >/dev/null

run rank0-node "$cluster" kill-node n1
has "rank0-node: n1 was powered off during the job" "n1 powered off"
matched rank0-node 4 "0 1"
"$cluster" heal-node n1 >/dev/null

wait_for_cut_node=1 run cut cut_and_heal n3
has "cut: n3 was cut off during the job" "n3 cut off"
matched cut 4 "4 5"
# The cut side's own lines: its tasks' files, or its members' lines of the
# launcher's one stream. Only the application's rank 0 prints a final
# model: a second one would be the cut side's, finishing on its own.
if [ -n "$launcher" ]; then
  cut_side=$(grep -E "member [45] epoch" "$work/cut/out-all.log")
  finals=$(grep -c "^final loss" "$work/cut/out-all.log")
else
  cut_side=$(cat "$work/cut/out-4.log" "$work/cut/out-5.log")
  finals=$((1 + $(grep -c "^final loss" <<<"$cut_side")))
fi
if [ "$finals" -ne 1 ]; then
  fail "cut: a task of the cut node finished"
elif grep -qE "left out of view|no new view|GAVE UP|FENCED" <<<"$cut_side"; then
  pass "cut: the cut node's tasks left with an error"
else
  fail "cut: the cut node's tasks did not say why they left"
fi
run two-nodes two_nodes
has "two-nodes: n2, then n3 after the recovery, were powered off" "n2 powered off" \
  "the job recovered from n2's loss" "n3 powered off"
matched two-nodes 2 "2 3 4 5" 2
"$cluster" heal-node n2 >/dev/null
"$cluster" heal-node n3 >/dev/null

fault_rules="rank=4,call=*,phase=recovery;rank=5,call=*,phase=recovery"
run in-recovery kill_task 3
fault_rules=""
has "in-recovery: task 3 died, then n3's tasks inside the recovery" "task 3 (pid" \
  "member 4 SIGKILLs itself" "member 5 SIGKILLs itself"
grep -qE "on 3 ranks \(epoch [12]\).*MATCHES the reference" <<<"$out" &&
  pass "in-recovery: the survivors (0 1 2) finished, the model matches its serial replay" ||
  fail "in-recovery: no match on 3 ranks"
spares=2
run spares "$cluster" kill-node n2
has "spares: n2 was powered off during the job" "n2 powered off"
matched spares 4 "2 3"
# One change or two (a node's tasks may die milliseconds apart).
admitted=$(sed -n 's/^membership change: spare(s) \([0-9, ]*\) admitted.*/\1/p' <<<"$out" | tr -d ' ' | tr ',' '\n' | sort -u | tr '\n' ' ')
if [ "$admitted" = "4 5 " ]; then
  pass "spares: the spares on n3 (4, 5) took the lost members' places"
else
  fail "spares: the spares admitted were [$admitted], not 4 and 5"
fi
"$cluster" heal-node n2 >/dev/null

members_finished() { # CASE: the 4 members (the spares' node had the fault) finished, the model checked
  grep -qE "^final loss .* on 4 ranks .*MATCHES the reference$" <<<"$out" &&
    pass "$1: the 4 members finished, the model matches its serial replay" ||
    fail "$1: no final model of 4 ranks matching the reference"
}

run spare-node "$cluster" kill-node n3
has "spare-node: n3 (the spares' node) was powered off during the job" "n3 powered off"
members_finished spare-node
grep -qE "view [0-9]+ \[0 1 2 3\] installed" <<<"$out" &&
  pass "spare-node: the members' view lost the spares 4 and 5" ||
  fail "spare-node: no view without the spares"
if grep -q "recovered from the loss of member" <<<"$out"; then
  fail "spare-node: a member was reported lost"
else
  pass "spare-node: no member was lost"
fi
"$cluster" heal-node n3 >/dev/null

wait_for_cut_node=1 run spare-cut cut_and_heal n3
spares=0
has "spare-cut: n3 (the spares' node) was cut off during the job" "n3 cut off"
members_finished spare-cut
if grep -qE "recovered from the loss of member|spare\(s\) [0-9, ]* admitted" <<<"$out"; then
  fail "spare-cut: a member was lost, or a cut spare joined"
else
  pass "spare-cut: no member lost, no spare admitted"
fi
grep -qE "member [45] was left out of view|left out of view [0-9]+ .* \(the others declared it failed\)|GAVE UP|no new view|spare: every member of the job is gone or out of reach" \
  <<<"$out" && pass "spare-cut: the cut spares left with an error" ||
  fail "spare-cut: the cut spares did not say why they left"
"$cluster" heal-node n3 >/dev/null

train_args="--release-at=30 --release=2"
run release released_then_n2
train_args=""
has "release: member 2 left, then n2 was powered off during the job" \
  "member 2 released after step" "n2 powered off"
has "release: the members saw it released" "membership change: member(s) 2 released: 5 ranks"
matched release 4 "3"
if grep -q "recovered from the loss of members\? .*\b2 (node" <<<"$out"; then
  fail "release: the released member 2 was reported lost"
else
  pass "release: member 2 counted released, not lost"
fi
"$cluster" heal-node n2 >/dev/null

for case in stopped:3:5 stopped-leader:2:[45]; do
  IFS=: read -r name task size <<<"$case"
  RINGMEND_HANG_TIMEOUT=3 run "$name" stop_task "$task"
  has "$name: task $task was stopped during the job, and is gone" "task $task (pid" "stopped task $task is gone"
  matched "$name" "$size" "$task"
done
finish
