#!/usr/bin/env bash
# SIGKILLs a random member of a job that uses subgroups (subgroups
# --survive), from outside, at a random moment from its start up to 1.5 s
# (its 150 rounds take about 1.8 s): MPI's start, the world's first epoch,
# the splits, a subgroup's first build, steady calls, a recovery, the end;
# ROUNDS times. The three survivors must verify every result (a subgroup's
# call exact or MemberLost, every world call exact), the launcher must exit
# 0, and its summary must name the victim as killed during the job.
#   subgroup_kill_random.sh FT_MPIRUN SUBGROUPS ROUNDS   (RANDOM_SEED=N replays)
set -u
ft_mpirun=$1 program=$2 rounds=$3
seed=${RANDOM_SEED:-$(date +%s)}
RANDOM=$seed
echo "subgroup_kill_random: seed $seed"
fail=0
for ((round = 1; round <= rounds; round++)); do
  dir=$(mktemp -d)
  victim=$((RANDOM % 4))
  delay_ms=$((RANDOM % 1500))
  "$ft_mpirun" --oversubscribe -np 4 "$program" --survive="$dir" >"$dir/out" 2>&1 &
  job=$!
  for _ in $(seq 200); do [ -f "$dir/rank$victim.pid" ] && break; sleep 0.01; done
  sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
  pid=$(cat "$dir/rank$victim.pid" 2>/dev/null)
  if [ -z "$pid" ]; then
    echo "round $round: rank $victim never started"
    fail=1
  else
    kill -9 "$pid" && echo "round $round: kill -9 world rank $victim (pid $pid) ${delay_ms} ms after its start"
  fi
  wait $job
  rc=$?
  verified=$(grep -o "TEST PASSED" "$dir/out" | wc -l)
  grep -E "ended in round|FAILED|recovered from" "$dir/out" | sed 's/^/    /'
  if [ $rc -eq 4 ] && grep -q "the job did not start" "$dir/out"; then
    # MPI_Init does not survive a death inside it: the launcher says so
    # (exit status 4, "start the job again"); nothing ran, nothing to check.
    echo "round $round: the kill landed in MPI's start: the job did not start (exit 4), as documented"
  elif ! grep -qE "member $victim on .*: killed by SIGKILL" "$dir/out"; then
    echo "round $round: FAILED (world rank $victim was not killed during the job)"
    fail=1
  elif [ $rc -ne 0 ] || [ "$verified" -ne 3 ]; then
    echo "round $round: FAILED (exit $rc, $verified of 3 survivors verified)"
    tail -20 "$dir/out"
    fail=1
  fi
  rm -rf "$dir"
done
exit $fail
