#!/usr/bin/env bash
# SIGKILLs a random member of a job that has one spare, from outside, at a
# random moment from its start up to MAX_DELAY_MS, ROUNDS times. The job
# runs MEMBERS + 1 processes (RINGMEND_SPARES=1). PROGRAM is given
# --pid-dir=DIR and writes DIR/memberN.pid once started; it prints
# "admitted as rank" on the spare once admitted, and "TEST PASSED" for each
# process whose results it verified. Each round: the launcher exits 0, its
# summary names the victim as killed during the job, and every process
# verified: MEMBERS of them, or MEMBERS - 1 when the kill came after the
# job's last call that could admit the spare (none admitted).
#   spare_kill_random.sh FT_MPIRUN ROUNDS MEMBERS MAX_DELAY_MS -- PROGRAM [ARGS...]
#   (RANDOM_SEED=N replays a run)
set -u
ft_mpirun=$1 rounds=$2 members=$3 max_delay_ms=$4
shift 4
[ "${1:-}" = -- ] && shift
seed=${RANDOM_SEED:-$(date +%s)}
RANDOM=$seed
echo "spare_kill_random: seed $seed ($(basename "$1"))"
fail=0
for ((round = 1; round <= rounds; round++)); do
  dir=$(mktemp -d)
  victim=$((RANDOM % members))
  delay_ms=$((RANDOM % max_delay_ms))
  "$ft_mpirun" --oversubscribe -np $((members + 1)) -x RINGMEND_SPARES=1 -x RINGMEND_TIMEOUT=60 "$@" \
    --pid-dir="$dir" >"$dir/out" 2>&1 &
  job=$!
  for _ in $(seq 600); do [ -f "$dir/member$victim.pid" ] && break; sleep 0.05; done
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
  # The victim lost after the last call that could admit the spare: nobody
  # replaces it (and it may have verified its own results before it died).
  want=$members
  if ! grep -q "admitted as rank" "$dir/out" && [ "$verified" -eq $((members - 1)) ]; then want=$verified; fi
  grep -E "voted down|admitted as|FAILED" "$dir/out" | sort | uniq -c | sed 's/^/    /'
  if [ $rc -eq 4 ] && grep -q "the job did not start" "$dir/out"; then
    # MPI_Init does not survive a death inside it: the launcher says so
    # (exit status 4, "start the job again"); nothing ran, nothing to check.
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
