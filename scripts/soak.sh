#!/usr/bin/env bash
# Soak test: many jobs, each losing one or two ranks to SIGKILLs sent from
# outside at random moments (during MPI_Init, wire-up, the first collectives,
# recovery, late in the run), and every outcome checked:
#   - ringmend-run's exit status is 0 exactly when the survivors finished;
#   - every survivor verified every allreduce exactly against the members
#     the result reports, and all survivors logged the same calls, the same
#     contributors and the same data hashes (tests/soak/soak_worker.cpp);
#   - no job hangs (each runs under a time limit), no process is left over,
#     nothing is left in /dev/shm.
# At the end it prints the count of rounds per outcome; any failure makes
# the exit status 1 and keeps that round's directory.
#
#   scripts/soak.sh [--rounds N] [--seed S] [--cluster] [--build DIR]
#                   [--min-ranks A] [--max-ranks B] [--calls C] [--max-bytes M]
#                   [--round-timeout SEC] [--start-window MS] [--keep DIR]
#                   [--spares S] [--state-bytes B] [--stall MS] [--node-loss]
#
# --spares S starts S spares beside the ranks (ringmend-run --spares): the
# victims are drawn among ranks and spares, a spare admitted in a lost
# rank's place receives the call number and B bytes of registered state
# (checked byte for byte) and must log, from its first call on, exactly
# what the survivors logged.
#
# --start-window MS: every kill within MS ms of its victim's start (start-up
# only: MPI_Init, wire-up, the first agreement and collectives).
#
# --stall MS: besides the kills, one process that is not killed stops
# (SIGSTOP) at a random moment for 50 ms to MS ms, then goes on (SIGCONT):
# stuck, not dead, as a process is in the kernel or on a slow file system.
# Whatever it is in (a collective, a recovery, the spares' wait), the round
# must pass all the same. Keep MS well below RINGMEND_START_TIMEOUT (10 s
# here): a longer stall during start-up is rightly a failed start.
#
# --node-loss (with --cluster): each job runs on three nodes through
# `ringmend-run --launcher srun` (the native membership), and one of its
# kills is a whole node powered off (scripts/cluster.sh kill-node) at a
# random moment (n2 or n3: n1, with member 0, often holds half the members,
# a loss that rightly leaves no quorum): every rank of that node is lost at
# once, the others must finish as after any loss. The node is healed after
# the round; the shared memory of a powered-off node is gone with it (here
# it is removed, not counted as left over).
#
# --cluster runs each job across the two nodes of the local Slurm cluster
# (scripts/cluster.sh start; salloc -N 2). The seed fixes every choice (job
# size, victims, moments, the workers' call sequence): a failing round is
# reproduced by its seed, printed with it.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
rounds=20 seed=$(date +%s) cluster=0 build="$repo/build/test" min_np=4 max_np=8
calls=200 max_bytes=$((16 << 20)) round_timeout=120 keep=${TMPDIR:-/tmp}/ringmend-soak start_window=0
spares=0 state_bytes=$((1 << 20)) stall=0 node_loss=0
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --cluster) cluster=1; shift ;;
    --build) build=$2; shift 2 ;;
    --min-ranks) min_np=$2; shift 2 ;;
    --max-ranks) max_np=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    --max-bytes) max_bytes=$2; shift 2 ;;
    --round-timeout) round_timeout=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --start-window) start_window=$2; shift 2 ;;
    --spares) spares=$2; shift 2 ;;
    --state-bytes) state_bytes=$2; shift 2 ;;
    --stall) stall=$2; shift 2 ;;
    --node-loss) node_loss=1; shift ;;
    -h | --help) sed -n '2,47p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
worker=$build/tests/soak/soak_worker
launcher=$build/slurm/ringmend-run
for f in "$worker" "$launcher"; do
  [ -x "$f" ] || { echo "soak.sh: $f not built (scripts/build.sh, or --build DIR)" >&2; exit 2; }
done
[ "$node_loss" = 1 ] && [ "$cluster" = 0 ] && { echo "soak.sh: --node-loss needs --cluster" >&2; exit 2; }
if [ "$node_loss" = 1 ] && ! grep -qx "NETNS=1" "${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}/layout" 2>/dev/null; then
  echo "soak.sh: SKIPPED: --node-loss needs the cluster's nodes in network namespaces (scripts/cluster.sh start as root)"
  exit 77
fi
cluster_script=$repo/scripts/cluster.sh
if [ "$cluster" = 1 ]; then
  export SLURM_CONF=${SLURM_CONF:-${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}/slurm.conf}
  command -v salloc >/dev/null || { echo "soak.sh: --cluster needs Slurm (scripts/bootstrap.sh --with-cluster-tools)" >&2; exit 2; }
  timeout -k 2 10 sinfo -h >/dev/null 2>&1 || { echo "soak.sh: no Slurm cluster answers; scripts/cluster.sh start" >&2; exit 2; }
fi
mkdir -p "$keep"
RANDOM=$((seed % 32768))
echo "soak: $rounds rounds, seed $seed, $min_np-$max_np ranks$([ "$spares" -gt 0 ] && echo " + $spares spare(s) with $state_bytes bytes of state"), $calls calls of up to $max_bytes bytes, $([ "$node_loss" = 1 ] && echo "three Slurm nodes, one powered off per round" || { [ "$cluster" = 1 ] && echo "two Slurm nodes" || echo "one node"; })"

declare -A count
note() { count[$1]=$((${count[$1]:-0} + 1)); }
shutdowns=()
ucx_refused=0
failed_rounds=0

# A moment after the victim's pid appears: a third during start-up (MPI_Init,
# wire-up, the first agreement), a third in the first collectives, a third
# anywhere in the run.
# Into `delay`, not echoed: a $(...) subshell reseeds RANDOM (bash 5.1+),
# and the seed would no longer fix the moments.
draw_delay_ms() {
  if [ "$start_window" -gt 0 ]; then delay=$((RANDOM % start_window)); return; fi
  case $((RANDOM % 3)) in
    0) delay=$((RANDOM % 400)) ;;
    1) delay=$((400 + RANDOM % 800)) ;;
    *) delay=$((RANDOM % 4000)) ;;
  esac
}

run_round() {
  local round=$1 dir np kills victims=() delays=() job rc i v pid procs delay
  dir=$(mktemp -d "$keep/round$round.XXXX")
  np=$((min_np + RANDOM % (max_np - min_np + 1)))
  procs=$((np + spares))  # world ranks np.. are the spares
  kills=$((1 + RANDOM % 2))
  local job_seed=$((RANDOM * 32768 + RANDOM))
  victims[0]=$((RANDOM % procs))
  draw_delay_ms
  delays[0]=$delay
  if [ "$kills" = 2 ]; then
    v=$((RANDOM % (procs - 1)))
    [ "$v" -ge "${victims[0]}" ] && v=$((v + 1))
    victims[1]=$v
    # Half the time close behind the first (a kill during the recovery).
    if [ $((RANDOM % 2)) = 0 ]; then delays[1]=$((delays[0] + RANDOM % 60)); else draw_delay_ms; delays[1]=$delay; fi
  fi
  # The stalled process, drawn after the rest (a seed without --stall
  # plays as before): any other than the victims.
  local stalled="" stall_at=0 stall_ms=0
  if [ "$stall" -gt 0 ]; then
    stalled=$((RANDOM % procs))
    while [[ " ${victims[*]} " == *" $stalled "* ]]; do stalled=$(((stalled + 1) % procs)); done
    draw_delay_ms
    stall_at=$delay
    stall_ms=$((50 + RANDOM % stall))
  fi
  local cmd=("$launcher" -q -n "$np" --oversubscribe)
  [ "$spares" -gt 0 ] && cmd+=(--spares "$spares")
  # --node-loss: the node powered off, drawn after the rest (a seed
  # without it plays as before), in place of the second kill.
  local lost_node=""
  if [ "$node_loss" = 1 ]; then
    # Not n1: it holds member 0 and, in these placements, often half of the
    # members, whose loss leaves no quorum (docs/membership.md): the
    # survivors must then stop, not go on. Rank 0's node lost is the
    # cluster tests' (srun_fault_tolerance.sh rank0-node, four_nodes.sh).
    lost_node=n$((2 + RANDOM % 2))
    cmd=(salloc -Q -N 3 -n "$procs" --overcommit --no-kill --immediate=30 "${cmd[@]}" --launcher srun -N 3)
    victims=("${victims[0]}")
    delays=("${delays[0]}")
    draw_delay_ms
    node_delay=$delay
  elif [ "$cluster" = 1 ]; then
    cmd=(salloc -Q -N 2 -n "$procs" --overcommit --immediate=30 "${cmd[@]}" -N 2)
  fi
  cmd+=("$worker" --dir="$dir" --seed="$job_seed" --calls="$calls" --max-bytes="$max_bytes")
  [ "$spares" -gt 0 ] && cmd+=(--state-bytes="$state_bytes")
  echo "round $round: $np ranks + $spares spare(s), kill ${victims[*]} at ${delays[*]} ms${lost_node:+, power $lost_node off at $node_delay ms}${stalled:+, stall $stalled at $stall_at ms for $stall_ms ms} (job seed $job_seed)" >"$dir/plan"
  # With node losses a recovery without quorum must give up well within the round.
  local recovery_bound=${RINGMEND_RECOVERY_TIMEOUT:-120}
  [ "$node_loss" = 1 ] && recovery_bound=$((round_timeout / 3))
  # The round's limit ended the job only when `timeout` says so (124, or
  # 137 after its KILL) and the limit has passed: the launcher's own
  # status can be 137 too (its ranks killed by SIGKILL).
  local job_start=$SECONDS
  RINGMEND_TIMEOUT=60 RINGMEND_START_TIMEOUT=10 RINGMEND_RECOVERY_TIMEOUT=$recovery_bound \
    timeout -k 5 "$round_timeout" "${cmd[@]}" >"$dir/out" 2>&1 &
  job=$!
  # A hang keeps its evidence: a job still running at two thirds of the
  # round's limit has the stacks of its live processes taken (with gdb,
  # when installed) before the limit ends it.
  local sampler=""
  if command -v gdb >/dev/null; then
    (
      for ((t = 0; t < round_timeout * 2 / 3; t++)); do kill -0 "$job" 2>/dev/null || exit 0; sleep 1; done
      for f in "$dir"/pid.*; do
        pid=$(cat "$f" 2>/dev/null) && kill -0 "$pid" 2>/dev/null || continue
        echo "=== member ${f##*.}, pid $pid"
        timeout 20 gdb -p "$pid" -batch -ex "thread apply all bt 25" 2>/dev/null | grep -E '^#|^Thread'
      done >"$dir/backtraces.txt"
    ) &
    sampler=$!
  fi
  # Each victim is killed its delay after its own pid file appears (one
  # killer per victim, so that the kills keep their order in time).
  local -a killed=() killers=()
  for i in "${!victims[@]}"; do
    (
      v=${victims[$i]}
      while [ ! -s "$dir/pid.$v" ] && kill -0 "$job" 2>/dev/null; do sleep 0.005; done
      [ -s "$dir/pid.$v" ] || exit 0
      t0=$(date +%s%N)
      now=$((($(date +%s%N) - t0) / 1000000))
      [ "${delays[$i]}" -gt "$now" ] && sleep "$(printf '%d.%03d' $(((delays[$i] - now) / 1000)) $(((delays[$i] - now) % 1000)))"
      kill -9 "$(cat "$dir/pid.$v")" 2>/dev/null && touch "$dir/killed.$v"
    ) &
    killers+=($!)
  done
  if [ -n "$lost_node" ]; then
    (
      # Once every process has started (its pid file), the node's ranks are
      # noted, then the node is powered off after its delay.
      while [ "$(ls "$dir"/pid.* 2>/dev/null | wc -l)" -lt "$procs" ] && kill -0 "$job" 2>/dev/null; do sleep 0.005; done
      kill -0 "$job" 2>/dev/null || exit 0
      sleep "$(printf '%d.%03d' $((node_delay / 1000)) $((node_delay % 1000)))"
      for f in "$dir"/pid.*; do
        tr '\0' '\n' 2>/dev/null <"/proc/$(cat "$f")/environ" | grep -qx "SLURMD_NODENAME=$lost_node" &&
          echo "${f##*.}" >>"$dir/on-lost-node"
      done
      [ -s "$dir/on-lost-node" ] || exit 0  # the job ended first
      "$cluster_script" kill-node "$lost_node" >"$dir/kill-node.log" 2>&1 &&
        while read -r v; do touch "$dir/killed.$v"; done <"$dir/on-lost-node"
    ) &
    killers+=($!)
  fi
  if [ -n "$stalled" ]; then
    (
      while [ ! -s "$dir/pid.$stalled" ] && kill -0 "$job" 2>/dev/null; do sleep 0.005; done
      [ -s "$dir/pid.$stalled" ] || exit 0
      pid=$(cat "$dir/pid.$stalled")
      sleep "$(printf '%d.%03d' $((stall_at / 1000)) $((stall_at % 1000)))"
      kill -STOP "$pid" 2>/dev/null || exit 0
      touch "$dir/stalled"
      sleep "$(printf '%d.%03d' $((stall_ms / 1000)) $((stall_ms % 1000)))"
      kill -CONT "$pid" 2>/dev/null
    ) &
    killers+=($!)
  fi
  wait "$job"
  rc=$?
  local timed_out=0
  { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && [ $((SECONDS - job_start)) -ge "$round_timeout" ] && timed_out=1
  wait "${killers[@]}" $sampler
  for v in "${victims[@]}"; do [ -e "$dir/killed.$v" ] && killed+=("$v"); done
  local node_text=""
  if [ -n "$lost_node" ]; then
    "$cluster_script" heal-node "$lost_node" >/dev/null 2>&1
    if [ -s "$dir/on-lost-node" ] && grep -q "powered off" "$dir/kill-node.log" 2>/dev/null; then
      node_text=", $lost_node powered off (ranks $(sort -n "$dir/on-lost-node" | tr '\n' ' ' | sed 's/ $//'))"
      while read -r v; do [[ " ${killed[*]} " == *" $v "* ]] || killed+=("$v"); done <"$dir/on-lost-node"
    else
      node_text=", $lost_node not powered off (the job ended first)"
    fi
  fi
  local stall_text=""
  if [ -n "$stalled" ]; then
    stall_text=", stalled $stalled at $stall_at ms for $stall_ms ms"
    [ -e "$dir/stalled" ] || stall_text+=" (after the end: not stalled)"
  fi
  echo "launcher exit $rc, killed: ${killed[*]:-none}" >>"$dir/plan"

  # Judge the round.
  local problems=() survivors=() lost_for_real=() f ref="" pids watchdog=0 joiners=0 spares_lost=0
  local init_failed=0 killed_starting=0
  for v in "${killed[@]}"; do grep -q '^started' "$dir/results.$v" 2>/dev/null || killed_starting=1; done
  if [ "$timed_out" = 1 ]; then problems+=("hang: the job ran past ${round_timeout} s"); fi
  for ((v = 0; v < procs; v++)); do
    f=$dir/results.$v
    # A spare that was not needed leaves inside the Runtime's start, without
    # a results file; one that was admitted logs like a rank.
    # (Or one the start-up watchdog ended, waiting in MPI_Init for a rank
    # that died there: see below.)
    if [ "$v" -ge "$np" ] && [ ! -f "$f" ] && [[ " ${killed[*]} " != *" $v "* ]]; then
      if grep -q "member $v on [^ ]*: start-up did not complete in time" "$dir/out"; then
        spares_lost=$((spares_lost + 1)) watchdog=$((watchdog + 1))
      fi
      continue
    fi
    if [[ " ${killed[*]} " == *" $v "* ]] && ! grep -q '^finished' "$f" 2>/dev/null; then
      if [ "$v" -ge "$np" ] && [ ! -f "$f" ]; then spares_lost=$((spares_lost + 1)); else lost_for_real+=("$v"); fi
      continue
    fi
    # A process waiting in MPI_Init for one that died there may never be
    # told (Open MPI 5.0): RINGMEND_START_TIMEOUT ends it, and it is lost
    # like the one it waited for, provided the launcher says so.
    if [ ! -f "$f" ] && grep -q "member $v on [^ ]*: start-up did not complete in time" "$dir/out"; then
      lost_for_real+=("$v")
      watchdog=$((watchdog + 1))
      continue
    fi
    # Nor can Open MPI always connect the others to one that died while MPI
    # started: their MPI_Init fails, and they are lost with it, provided the
    # launcher says so and a victim did die before it started.
    if grep -q "member $v on [^ ]*: its MPI_Init failed" "$dir/out" && [ "$killed_starting" = 1 ]; then
      lost_for_real+=("$v")
      init_failed=$((init_failed + 1))
      continue
    fi
    survivors+=("$v")
  done
  # A death early in MPI_Init can be beyond MPI (Open MPI fails MPI_Init on
  # the others, or waits for ever for the dead one's address, until
  # RINGMEND_START_TIMEOUT): then no survivor starts, and the launcher must
  # say so with its own status.
  local started_any=0 did_not_start=0
  for v in "${survivors[@]}"; do grep -q '^started' "$dir/results.$v" 2>/dev/null && started_any=1; done
  # Under srun, a task that dies before it has left Slurm's PMIx makes
  # Slurm end the whole step, started or not (docs/slurm.md): the launcher
  # must say so with exit 4 (the job did not start, or Slurm ended the
  # step, however far the others got). Slurm's cancel can also come after the
  # survivors finished (a short job): then the job ran, and is judged so.
  local step_ended_by_slurm=0 finished_any=0
  for v in "${survivors[@]}"; do grep -q '^finished' "$dir/results.$v" 2>/dev/null && finished_any=1; done
  if [ "$node_loss" = 1 ] && [ "$finished_any" = 0 ] &&
    grep -qE "srun: Force Terminated|\*\*\* STEP .* CANCELLED AT" "$dir/out"; then
    step_ended_by_slurm=1 started_any=0
  fi
  if [ "$started_any" = 0 ] && [ $((${#lost_for_real[@]} + spares_lost)) -gt 0 ] && [ "$timed_out" = 0 ]; then
    did_not_start=1
    [ "$rc" = 4 ] && grep -qE "the job did not start|Slurm ended the step" "$dir/out" ||
      problems+=("no survivor started, but the launcher did not say so with exit 4 (exit $rc)")
    survivors=()
  fi
  local start_errors=0 finished=0
  for v in "${survivors[@]}"; do
    f=$dir/results.$v
    if grep -q '^start-error' "$f" 2>/dev/null; then start_errors=$((start_errors + 1)); fi
    if grep -q '^finished' "$f" 2>/dev/null; then finished=$((finished + 1)); fi
    if [ ! -f "$f" ]; then problems+=("member $v: no results file (died without a word?)"); continue; fi
    if grep -qE 'WRONG|error|^failed' "$f"; then problems+=("member $v: $(grep -m1 -E 'WRONG|error|^failed' "$f")"); fi
  done
  # Every survivor logged the same; a joiner, the same from its first call.
  for v in "${survivors[@]}"; do grep -q '^started' "$dir/results.$v" 2>/dev/null && { ref=$dir/results.$v; break; }; done
  for v in "${survivors[@]}"; do
    f=$dir/results.$v
    [ -f "$f" ] && [ -n "$ref" ] && [ "$f" != "$ref" ] || continue
    if grep -q '^joined' "$f"; then
      joiners=$((joiners + 1))
      local mine theirs
      mine=$(grep -v '^joined' "$f")
      theirs=$(grep -v '^started' "$ref" | tail -n "$(printf '%s\n' "$mine" | wc -l)")
      [ "$mine" = "$theirs" ] && [ -n "$mine" ] ||
        problems+=("joiner $v logged other results than member $(basename "$ref" | cut -d. -f2) from its first call (diff $ref $f)")
    elif [ "$node_loss" = 1 ]; then
      # The native membership's first epoch is not uniform: a member lost
      # while the job started may be lost at start for some members and in
      # their first call for others (docs/membership.md, "Start-up"). From
      # the first call on, every survivor logs the same.
      cmp -s <(grep -v '^started' "$ref") <(grep -v '^started' "$f") ||
        problems+=("members $(basename "$ref" | cut -d. -f2) and $v logged different results (diff $ref $f)")
    elif ! cmp -s "$ref" "$f"; then
      problems+=("members $(basename "$ref" | cut -d. -f2) and $v logged different results (diff $ref $f)")
    fi
  done
  if [ "$start_errors" -gt 0 ] && [ "$start_errors" -ne "${#survivors[@]}" ]; then
    problems+=("only $start_errors of ${#survivors[@]} survivors got the start-up error")
  fi
  if [ "$did_not_start" = 1 ]; then
    :
  elif [ "$finished" = "${#survivors[@]}" ] && [ "$finished" -gt 0 ]; then
    [ "$rc" = 0 ] || problems+=("every survivor finished, but ringmend-run exited $rc")
  else
    [ "$rc" != 0 ] || problems+=("ringmend-run exited 0, but only $finished of ${#survivors[@]} survivors finished")
  fi
  # Nothing left over: processes, then shared memory.
  for _ in $(seq 50); do pgrep -f "soak_worker --dir=$dir" >/dev/null || break; sleep 0.1; done
  if pids=$(pgrep -f "soak_worker --dir=$dir"); then
    problems+=("processes left over: $(echo $pids)")
    kill -9 $pids 2>/dev/null
  fi
  for f in "$dir"/pid.*; do
    pid=$(cat "$f" 2>/dev/null) || continue
    for seg in /dev/shm/ringmend-"$pid"-*; do
      [ -e "$seg" ] || continue
      # A powered-off node's memory is gone with it; this test bed shares
      # /dev/shm between its nodes, so it is removed here. So is a segment
      # of a step that Slurm's PMIx plugin killed whole: its SIGKILL takes
      # every rank's launcher too, and nobody is left to remove the name
      # (docs/slurm.md).
      grep -qx "${f##*.}" "$dir/on-lost-node" 2>/dev/null || [ "$step_ended_by_slurm" = 1 ] ||
        problems+=("left in /dev/shm: $seg")
      rm -f "$seg"
    done
  done

  local outcome
  if [ "${#problems[@]}" -gt 0 ]; then
    outcome=FAILED
  elif [ "$did_not_start" = 1 ] && [ "$step_ended_by_slurm" = 1 ]; then
    outcome="ended by Slurm: a task died before it left srun's PMIx (launcher exit 4)"
  elif [ "$did_not_start" = 1 ]; then
    outcome="did not start: a rank died inside MPI_Init (launcher exit 4, every survivor stopped)"
  elif [ "$start_errors" -gt 0 ]; then
    outcome="too few to start (${#survivors[@]} left, same error on each)"
  elif [ "${#lost_for_real[@]}" = 0 ] && [ "$spares_lost" -gt 0 ]; then
    outcome="only spares lost, while waiting"
  elif [ "${#lost_for_real[@]}" = 0 ]; then
    outcome="no loss (the kill came after the end)"
  else
    # Losses before the spares were set apart: a spare starts as a member.
    local spares_at_start=0
    for v in "${survivors[@]}"; do
      [ "$v" -ge "$np" ] && grep -q '^started' "$dir/results.$v" 2>/dev/null && spares_at_start=$((spares_at_start + 1))
    done
    local when=late
    grep -q "started size=$np " "${ref:-/dev/null}" && [ "$spares_at_start" = 0 ] || when="at start-up"
    outcome="recovered from ${#lost_for_real[@]} loss(es) $when"
    [ "$joiners" -gt 0 ] && outcome+=", $joiners replaced by spares"
    [ "$spares_at_start" -gt 0 ] && outcome+=", $spares_at_start spare(s) started as members"
    [ "$spares_lost" -gt 0 ] && outcome+=", $spares_lost spare(s) lost while waiting"
    [ "$watchdog" -gt 0 ] && outcome+=" (some ended by the start-up watchdog)"
    [ "$init_failed" -gt 0 ] && outcome+=" (some lost as their MPI_Init failed)"
  fi
  note "$outcome"
  # How long the job took to end after the last rank's last call (from
  # ringmend-run's summary), for every round where the survivors finished.
  local ended
  ended=$(sed -n 's/.*the job ended \([0-9.]*\) s after the last rank.s last call.*/\1/p' "$dir/out" | head -n 1)
  [ -n "$ended" ] && [ -z "$node_text" ] && shutdowns+=("$ended")
  # UCX refusing a connect to a dead peer must never take a survivor along.
  grep -q "UCX  ERROR connect(.*Connection refused" "$dir/out" && [ "$outcome" != FAILED ] && ucx_refused=$((ucx_refused + 1))
  printf 'round %d: %d ranks, killed %s at %s ms%s%s: %s%s\n' "$round" "$np" "${killed[*]:-none}" "${delays[*]}" \
    "$node_text" "$stall_text" "$outcome" "${ended:+ (ended ${ended} s after the last call)}"
  local slow_shutdown=0
  # (After a node's loss ringmend-run ends srun itself, 10 s after the
  # survivors finished: not a slow end.)
  [ -n "$ended" ] && [ -z "$node_text" ] && awk -v e="$ended" 'BEGIN { exit !(e > 1) }' && slow_shutdown=1
  if [ "$slow_shutdown" = 1 ] && [ "$outcome" != FAILED ]; then
    echo "    the job took ${ended} s to end after its last call; kept: $dir"
    grep -E "watchdog|did not return" "$dir/out" | sed 's/^/    | /'
  elif [ "$outcome" = FAILED ]; then
    failed_rounds=$((failed_rounds + 1))
    printf '    %s\n' "${problems[@]}"
    echo "    kept: $dir (plan, out, results.*$([ -s "$dir/backtraces.txt" ] && echo ", backtraces.txt")); job seed $job_seed"
    tail -5 "$dir/out" | sed 's/^/    | /'
  else
    rm -rf "$dir"
  fi
}

for ((round = 1; round <= rounds; round++)); do run_round "$round"; done
echo "soak: $rounds rounds, seed $seed"
for k in "${!count[@]}"; do printf '  %4d  %s\n' "${count[$k]}" "$k"; done | sort -k2
[ "$ucx_refused" -gt 0 ] && echo "  rounds in which UCX refused a connect to a dead peer, survived: $ucx_refused"
if [ "${#shutdowns[@]}" -gt 0 ]; then
  printf '%s\n' "${shutdowns[@]}" | sort -g | awk '{ v[NR] = $1; if ($1 > 1) over++ }
    END { printf "  the job ended after the last call: min %.2f s, median %.2f s, max %.2f s over %d rounds; over 1 s: %d\n",
          v[1], v[int((NR + 1) / 2)], v[NR], NR, over }'
fi
[ "$failed_rounds" = 0 ] || { echo "soak: $failed_rounds round(s) FAILED"; exit 1; }
echo "soak: all rounds passed"
