#!/usr/bin/env bash
# Stops members of a running job with SIGSTOP, from outside, at random
# moments (what a hung driver, a stuck file system read or a livelocked
# thread looks like from outside), and checks what the hang detector does
# (docs/recovery.md, "Stuck members").
#
#   stop_random.sh FT_MPIRUN PROGRAM NP ROUNDS MODE [SPARES]
# MODE:
#   forever    one random member stays stopped: it is excluded (killed) within
#              the hang timeout, the survivors (and a spare in its place) finish
#              with verified results, and the launcher's summary names it
#   two        two members stopped at once, for ever: both excluded
#   member0    member 0 stopped for ever
#   short      a member stopped for less than the hang timeout, then resumed:
#              nobody is excluded and every member finishes
# RINGMEND_HANG_TIMEOUT must be set (a few seconds); RINGMEND_MEMBERSHIP is
# passed on when set. RANDOM_SEED fixes the
# choices (printed, to reproduce a failure).
set -u
ft_mpirun=$1 program=$2 np=$3 rounds=$4 mode=$5 spares=${6:-0}
members=$((np - spares))
hang=${RINGMEND_HANG_TIMEOUT:?set RINGMEND_HANG_TIMEOUT}
case $mode in
  forever | member0) stopped=1 ;;
  two) stopped=2 ;;
  short) stopped=0 ;;
  *) echo "stop_random: unknown mode $mode"; exit 2 ;;
esac
expect=$((spares >= stopped ? members : members - stopped))
seed=${RANDOM_SEED:-$(date +%s)}
RANDOM=$seed
echo "stop_random: seed $seed, mode $mode, hang timeout $hang s"
fail=0
for ((round = 1; round <= rounds; round++)); do
  dir=$(mktemp -d)
  victims=()
  case $mode in
    member0) victims=(0) ;;
    two)
      a=$((RANDOM % members)) b=$(((a + 1 + RANDOM % (members - 1)) % members))
      victims=("$a" "$b")
      ;;
    *) victims=($((RANDOM % members))) ;;
  esac
  delay_ms=$((200 + RANDOM % 1200))
  start=$(date +%s.%N)
  RINGMEND_SPARES=$spares "$ft_mpirun" --oversubscribe -np "$np" -x RINGMEND_SPARES -x RINGMEND_HANG_TIMEOUT \
    ${RINGMEND_MEMBERSHIP:+-x RINGMEND_MEMBERSHIP} \
    "$program" --iters=300 --count=50021 --mode=mixed --sleep-ms=15 --allow-root-lost=yes --pid-dir="$dir" \
    --expect-size=$expect >"$dir/out" 2>&1 &
  job=$!
  for v in "${victims[@]}"; do
    for _ in $(seq 200); do [ -f "$dir/rank$v.pid" ] && break; sleep 0.05; done
  done
  sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
  pids=()
  for v in "${victims[@]}"; do
    pid=$(cat "$dir/rank$v.pid" 2>/dev/null)
    if [ -z "$pid" ]; then
      echo "round $round: rank $v never started"; fail=1; continue
    fi
    kill -STOP "$pid" && echo "round $round: kill -STOP world rank $v (pid $pid) ${delay_ms} ms after start"
    pids+=("$pid")
  done
  stopped_at=$(date +%s.%N)
  if [ "$mode" = short ]; then
    # Well under the hang timeout, so that the detector must leave it alone.
    sleep "$(awk -v h="$hang" 'BEGIN { printf "%.2f", h / 3 }')"
    for pid in "${pids[@]}"; do kill -CONT "$pid" 2>/dev/null && echo "round $round: kill -CONT pid $pid"; done
  fi
  wait $job
  rc=$?
  took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  verified=$(grep -o "TEST PASSED" "$dir/out" | wc -l)
  grep -E "membership change|admitted|stuck|TEST|wrong|error|Timeout" "$dir/out" | sed 's/^/    /'
  for i in "${!pids[@]}"; do
    pid=${pids[$i]} v=${victims[$i]}
    if [ "$mode" = short ]; then
      if grep -q "member $v on .*stuck" "$dir/out"; then
        echo "round $round: FAILED (member $v, stopped $((${hang%.*} / 3)) s, was excluded)"; fail=1
      fi
    else
      # The fault landed and the detector acted: the summary names the
      # member as excluded as stuck, and its process is gone.
      if ! grep -qE "member $v on .*: excluded as stuck" "$dir/out"; then
        echo "round $round: FAILED (member $v was not excluded as stuck)"; fail=1
      fi
      if kill -0 "$pid" 2>/dev/null; then
        echo "round $round: FAILED (the stopped process $pid still exists)"; kill -9 "$pid"; fail=1
      fi
    fi
  done
  if [ $rc -ne 0 ] || [ "$verified" -ne "$expect" ]; then
    echo "round $round: FAILED (exit $rc, $verified of $expect members verified)"
    tail -20 "$dir/out"
    fail=1
  fi
  if grep -q "Timeout" "$dir/out"; then
    echo "round $round: FAILED (a collective timed out: the application saw the hang)"; fail=1
  fi
  # The target: the survivors go on after the hang timeout, within a little
  # more (the judges look every 100 ms once they waited the timeout; a
  # loaded machine may delay a poll, so a second is the bound checked).
  if [ "$mode" != short ] && line=$(grep -m1 "recovered from the loss of member" "$dir/out"); then
    recovered_at=$(date -d "${line%% *}" +%s.%N 2>/dev/null)
    if [ -n "$recovered_at" ]; then
      lag=$(awk -v s="$stopped_at" -v r="$recovered_at" -v h="$hang" 'BEGIN { printf "%.3f", r - s - h }')
      echo "round $round: stopped -> recovered: the hang timeout + $lag s"
      if awk -v l="$lag" 'BEGIN { exit !(l > 1.0 || l < -0.05) }'; then
        echo "round $round: FAILED (recovered $lag s after the hang timeout: never before it, within a second)"
        fail=1
      fi
    fi
  fi
  echo "round $round: job took $took s"
  rm -rf "$dir"
done
exit $fail
