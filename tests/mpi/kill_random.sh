#!/usr/bin/env bash
# SIGKILLs a random rank of a running job from outside, at a random moment,
# ROUNDS times, and checks that the survivors finish with verified results.
#
#   kill_random.sh FT_MPIRUN PROGRAM NP ROUNDS [SPARES]
# RANDOM_SEED fixes the choices (printed, to reproduce a failure). With
# SPARES, the last SPARES of the NP processes are spares: the victim is a
# member, a spare takes its place, and the job ends with NP - SPARES ranks.
# MODE picks the program's calls (default mixed; uneven: allgatherv and
# alltoall, where a loss no spare replaced is SizeChanged on every survivor).
set -u
ft_mpirun=$1 program=$2 np=$3 rounds=$4 spares=${5:-0} mode=${MODE:-mixed}
members=$((np - spares))
expect=$((spares > 0 ? members : np - 1))
seed=${RANDOM_SEED:-$(date +%s)}
RANDOM=$seed
echo "kill_random: seed $seed"
fail=0
for ((round = 1; round <= rounds; round++)); do
  dir=$(mktemp -d)
  victim=$((RANDOM % members))
  delay_ms=$((200 + RANDOM % 1200))
  RINGMEND_SPARES=$spares "$ft_mpirun" --oversubscribe -np "$np" -x RINGMEND_SPARES "$program" --iters=150 \
    --count=50021 --mode="$mode" --sleep-ms=15 --allow-root-lost=yes --allow-size-changed=yes --pid-dir="$dir" \
    --expect-size=$expect \
    >"$dir/out" 2>&1 &
  job=$!
  for _ in $(seq 200); do [ -f "$dir/rank$victim.pid" ] && break; sleep 0.05; done
  sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
  pid=$(cat "$dir/rank$victim.pid" 2>/dev/null)
  if [ -z "$pid" ]; then
    echo "round $round: rank $victim never started"; fail=1
  else
    kill -9 "$pid" && echo "round $round: kill -9 world rank $victim (pid $pid) ${delay_ms} ms after start"
  fi
  wait $job
  rc=$?
  verified=$(grep -o "TEST PASSED" "$dir/out" | wc -l)  # pieces of two lines may share one
  grep -E "membership change|admitted|TEST|wrong|error" "$dir/out" | sed 's/^/    /'
  # The kill must have landed during the job: the launcher's summary names
  # the victim as killed (with spares the final size alone cannot tell).
  if [ -n "$pid" ] && ! grep -qE "member $victim on .*: killed by SIGKILL" "$dir/out"; then
    echo "round $round: FAILED (world rank $victim was not killed during the job)"
    fail=1
  fi
  if [ $rc -ne 0 ] || [ "$verified" -ne "$expect" ]; then
    echo "round $round: FAILED (mpirun exit $rc, $verified of $expect members verified)"
    tail -20 "$dir/out"
    fail=1
  fi
  rm -rf "$dir"
done
exit $fail
