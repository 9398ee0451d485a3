#!/usr/bin/env bash
# The native membership under plain srun (no mpirun, no MPI), on the
# namespace cluster: 3 nodes x 2 tasks of native_membership_probe, which
# all-gather round after round and check every result. Each case strikes
# once while the job runs, proves that the fault landed, and checks that
# every survivor finished every round in the same view, the lost and the
# fenced did not, and how long the job stood still (fault -> first round
# completed after it):
#   process     member 3 SIGKILLed (its node lives: pidfd, closed connections)
#   power-off   n2 powered off (kill-node: every process of the node at once)
#   leader      n1 powered off: member 0, which leads every view change
#   silent      n3 powered off without a word (kill-node --silent: heartbeats only)
#   cut         n3 cut off, healed 3 s later: its members must be fenced
#   cut-leader  n1 cut off (member 0's side is the minority), healed later
#   native_membership.sh PROBE SOURCE_DIR
set -u
probe=$1 root=$2
. "$(dirname "$0")/cluster_lib.sh"
need_cluster
cluster=$root/scripts/cluster.sh
need_namespace_nodes
heartbeat=1
export RINGMEND_HEARTBEAT_TIMEOUT=$heartbeat RINGMEND_RECOVERY_TIMEOUT=10
trap 'stop_steps; for n in n1 n2 n3; do "$cluster" heal-node $n >/dev/null 2>&1; done; cleanup_jobs' EXIT

# start CASE ROUNDS: the job, until every task has joined (member lines).
start() {
  dir=$work/$1
  mkdir -p "$dir"
  timeout -k 5 150 srun -J "ringmend-$test_name" --mpi=pmix -N 3 -n 6 --ntasks-per-node=2 --overcommit \
    --no-kill --kill-on-bad-exit=0 -o "$dir/out-%t.log" "$probe" --rounds "$2" >"$dir/srun.log" 2>&1 &
  srun_pid=$!
  for _ in $(seq 1 600); do
    [ "$(cat "$dir"/out-*.log 2>/dev/null | grep -c ' of 6 on ')" -eq 6 ] && { sleep 1; return 0; }
    sleep 0.1
  done
  fail "$1: the job did not start within 60 s"
  return 1
}
pid_of() { sed -n "s/^member $2 of 6 on .* pid \([0-9]*\)$/\1/p" "$work/$1/out-$2.log"; }

# settle CASE WAITED...: waits until each listed task has printed its last
# word (DONE, FENCED or GAVE UP), at most 90 s; then ends the step (srun
# would wait for a lost node's step daemon until Slurm declares it down:
# it is ended too).
settle() {
  local name=$1 m
  shift
  for _ in $(seq 1 900); do
    local all=1
    for m in "$@"; do grep -qE "DONE|FENCED|GAVE UP" "$work/$name/out-$m.log" 2>/dev/null || all=0; done
    [ $all -eq 1 ] && break
    sleep 0.1
  done
  stop_steps
  kill -9 "$srun_pid" 2>/dev/null
  wait "$srun_pid" 2>/dev/null
  echo "--- $name"
  cat "$work/$name"/out-*.log | grep -v ' of 6 on '
}

# check CASE FAULT_TIME BOUND_S "SURVIVORS" "GONE" [FENCED...]
check() {
  local name=$1 at=$2 bound=$3 survivors=$4 gone=$5 m view stall
  shift 5
  view="[$survivors]"
  # A node's processes may die a few milliseconds apart (kill-node kills
  # them one by one): one view change or one per death, the same on all.
  local epochs
  epochs=$(for m in $survivors; do
    sed -n "s/^member $m: DONE view \([0-9]*\) \(\[.*\]\) rounds.*/\1 \2/p" "$work/$name/out-$m.log"
  done | sort -u)
  if [ "$(wc -l <<<"$epochs")" -ne 1 ] || [ "${epochs#* }" != "$view" ] || [ "${epochs%% *}" -lt 1 ]; then
    fail "$name: the survivors did not all finish in one view $view: '$epochs'"
    return
  fi
  pass "$name: every survivor ($survivors) finished every round, each checked, in view ${epochs%% *} $view"
  for m in $gone; do
    grep -q "DONE" "$work/$name/out-$m.log" && { fail "$name: member $m, lost, finished"; return; }
  done
  pass "$name: no lost member ($gone) finished"
  for m in "$@"; do
    grep -qE "^member $m: (FENCED: member $m was left out of view [0-9]+|GAVE UP)" "$work/$name/out-$m.log" ||
      { fail "$name: member $m, cut away, did not leave with an error"; return; }
  done
  [ $# -gt 0 ] && pass "$name: the cut-away members ($*) left with an error"
  stall=$(sed -n 's/.*resumed at \([0-9.]*\)$/\1/p' "$work/$name"/out-*.log | sort -n | tail -n 1)
  [ -n "$stall" ] || { fail "$name: no survivor resumed"; return; }
  stall=$(echo "$stall - $at" | bc -l)
  printf 'MEASURED: %s: fault -> next completed round %.1f ms\n' "$name" "$(echo "$stall * 1000" | bc -l)"
  if [ "$(echo "$stall < $bound" | bc -l)" = 1 ]; then pass "$name: resumed within $bound s"; else
    fail "$name: resumed $stall s after the fault (bound $bound s)"
  fi
}

if start process 600; then
  victim=$(pid_of process 3)
  at=$(date +%s.%N)
  kill -9 "$victim"
  settle process 0 1 2 4 5
  ! kill -0 "$victim" 2>/dev/null && pass "process: member 3 (pid $victim) was SIGKILLed during the job" ||
    fail "process: member 3 still runs"
  check process "$at" 0.5 "0 1 2 4 5" "3"
fi

# kill-node kills a node's processes one after the other: when the node
# leader goes first, its mate (no longer watched by a pidfd from its node,
# and with no connection of its own open) may be noticed only by the
# heartbeat timeout, in a second view change. The bound allows that; the
# fast path's time is measured by bench/membership.sh (tens of ms).
for spec in "power-off n2 $heartbeat.5 0 1 4 5 / 2 3" "leader n1 $heartbeat.5 2 3 4 5 / 0 1" \
  "silent n3 $((heartbeat + 1)) 0 1 2 3 / 4 5"; do
  read -r name node bound rest <<<"$spec"
  survivors=${rest%% /*} gone=${rest##*/ }
  start "$name" 600 || continue
  at=$(date +%s.%N)
  flag=""
  [ "$name" = silent ] && flag=--silent
  "$cluster" kill-node "$node" $flag | tee "$work/$name/killer.log"
  settle "$name" $survivors
  grep -q "$node powered off" "$work/$name/killer.log" && pass "$name: $node was powered off during the job" ||
    fail "$name: $node was not powered off"
  check "$name" "$at" "$bound" "$survivors" "$gone"
  "$cluster" heal-node "$node" >/dev/null
done

for spec in "cut n3 0 1 2 3 / 4 5" "cut-leader n1 2 3 4 5 / 0 1"; do
  read -r name node rest <<<"$spec"
  survivors=${rest%% /*} gone=${rest##*/ }
  start "$name" 900 || continue
  at=$(date +%s.%N)
  "$cluster" cut-node "$node" | tee "$work/$name/cutter.log"
  sleep 3 # the others go on without it meanwhile
  "$cluster" heal-node "$node"
  # shellcheck disable=SC2086
  settle "$name" $survivors $gone
  check "$name" "$at" "$((heartbeat + 1))" "$survivors" "$gone" $gone
done
finish
