#!/usr/bin/env bash
# SIGKILLs a random rank of a running GPU job from outside, at a random
# moment, ROUNDS times, cycling through the GPU paths (through shared
# memory, the flat UCX ring, NCCL with a host per rank), and checks that
# every survivor finishes with verified results.
#
#   kill_random_gpu.sh FT_MPIRUN PROGRAM ROUNDS
# RANDOM_SEED fixes the choices (printed, to reproduce a failure).
set -u
ft_mpirun=$1 program=$2 rounds=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
np=3
seed=${RANDOM_SEED:-$(date +%s)}
RANDOM=$seed
echo "kill_random_gpu: seed $seed"
fail=0
for ((round = 1; round <= rounds; round++)); do
  dir=$(mktemp -d)
  victim=$((RANDOM % np))
  delay_ms=$((100 + RANDOM % 900))
  case $((round % 3)) in
    0) path="through shared memory"; launch=(-x RINGMEND_SHM=1) ;;
    1) path="flat UCX ring"; launch=(-x RINGMEND_SHM=0) ;;
    2) path="NCCL, a host per rank"; launch=(-x NCCL_SOCKET_IFNAME=lo "$here/nccl_host_per_rank.sh") ;;
  esac
  "$ft_mpirun" --oversubscribe -np $np -x RINGMEND_TIMEOUT=60 "${launch[@]}" "$program" --fault-calls 120 \
    --count 262147 --sleep-ms 10 --pid-dir "$dir" >"$dir/out" 2>&1 &
  job=$!
  for _ in $(seq 400); do [ -f "$dir/rank$victim.pid" ] && break; sleep 0.05; done
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  pid=$(cat "$dir/rank$victim.pid" 2>/dev/null)
  expect=$np
  if [ -z "$pid" ]; then
    echo "round $round ($path): rank $victim never started"; fail=1
  elif kill -9 "$pid" 2>/dev/null; then
    expect=$((np - 1))
    echo "round $round ($path): kill -9 member $victim (pid $pid) ${delay_ms} ms after it started"
  else
    echo "round $round ($path): member $victim had finished before the kill"
  fi
  wait $job
  rc=$?
  verified=$(grep -o "TEST PASSED" "$dir/out" | wc -l)  # pieces of two lines may share one
  # A kill that lands after the victim's last call, while the job ends, is a
  # moment like any other: then no call recovered and all verified.
  if [ "$expect" -ne $np ] && [ "$verified" -eq $np ] && ! grep -q "recovered" "$dir/out"; then
    echo "round $round: the kill came after the victim's last call (the job ended normally)"
    expect=$np
  fi
  grep -E "recovered|TEST|expected|error" "$dir/out" | sed 's/^/    /' | head -12
  if [ $rc -ne 0 ] || [ "$verified" -ne "$expect" ]; then
    echo "round $round: FAILED (mpirun exit $rc, $verified of $expect members verified)"
    tail -20 "$dir/out"
    fail=1
  fi
  rm -rf "$dir"
done
exit $fail
