#!/usr/bin/env bash
# SIGKILLs a random member of a 2 x 2 mesh with a spare (subgroup_spares
# --pid-dir, recovery by the step), from outside, at a random moment from
# its start up to 2 s (its 250 steps take about 2.5 s): the first mesh, a
# row's allgather, a column's allreduce, a vote, a mesh made again, the
# end; ROUNDS times. Every process must end with every shard equal to the
# serial replay's and, once the spare is admitted, the job at 4 ranks (4
# "TEST PASSED"; 3 when the kill came after the last vote and no spare was
# needed), the launcher must exit 0, and its summary must name the victim
# as killed during the job.
#   subgroup_spare_kill_random.sh FT_MPIRUN SUBGROUP_SPARES ROUNDS   (RANDOM_SEED=N replays)
set -u
ft_mpirun=$1 program=$2 rounds=$3
seed=${RANDOM_SEED:-$(date +%s)}
RANDOM=$seed
echo "subgroup_spare_kill_random: seed $seed"
fail=0
for ((round = 1; round <= rounds; round++)); do
  dir=$(mktemp -d)
  victim=$((RANDOM % 4))
  delay_ms=$((RANDOM % 2000))
  "$ft_mpirun" --oversubscribe -np 5 -x RINGMEND_SPARES=1 -x RINGMEND_TIMEOUT=60 "$program" --pid-dir="$dir" \
    --steps=250 --count=262144 >"$dir/out" 2>&1 &
  job=$!
  for _ in $(seq 300); do [ -f "$dir/member$victim.pid" ] && break; sleep 0.01; done
  sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
  pid=$(cat "$dir/member$victim.pid" 2>/dev/null)
  if [ -z "$pid" ]; then
    echo "round $round: member $victim never started"
    fail=1
  else
    kill -9 "$pid" && echo "round $round: kill -9 member $victim (pid $pid) ${delay_ms} ms after its start"
  fi
  wait $job
  rc=$?
  verified=$(grep -o "TEST PASSED" "$dir/out" | wc -l)
  want=3  # the victim lost after the last vote: nobody replaces it
  if grep -q "admitted as rank" "$dir/out"; then want=4; fi
  grep -E "voted down|admitted as|FAILED" "$dir/out" | sort | uniq -c | sed 's/^/    /'
  if [ $rc -eq 4 ] && grep -q "the job did not start" "$dir/out"; then
    echo "round $round: the kill landed in MPI's start: the job did not start (exit 4), as documented"
  elif ! grep -qE "member $victim on .*: killed by SIGKILL" "$dir/out"; then
    echo "round $round: FAILED (member $victim was not killed during the job)"
    fail=1
  elif [ $rc -ne 0 ] || [ "$verified" -ne "$want" ]; then
    echo "round $round: FAILED (exit $rc, $verified of $want processes verified)"
    tail -30 "$dir/out"
    fail=1
  fi
  rm -rf "$dir"
done
exit $fail
