#!/usr/bin/env bash
# Grow, release and a SIGKILL from outside at a random moment, ROUNDS times:
# every sample must still be counted exactly once per epoch
# (elastic_check), and the job must end with its members verified.
#
#   elastic_kill_random.sh FT_MPIRUN PROGRAM ROUNDS [--no-spares]
# Six processes: four members and two spares. At step 30 the job grows by
# one, at step 80 it releases rank 1; one other member (0, 2 or 3), chosen at random, is
# killed 0.1 to 1.1 s after it started, whenever that falls (before, during
# or after the grow and the release). A spare is always left for it, so the
# job ends with four ranks. RANDOM_SEED fixes the choices. A kill sent must
# show in the launcher's summary, and at least half the rounds must have
# one (a victim that had already ended is counted apart).
# --no-spares: four members and no spare; at step 30 the job releases rank
# 1, and one of the other three is killed 0.1 to 0.4 s after it started
# (recoveries that shrink the members' own communicator, meeting members
# that wait after the release's call or at finalize): the job ends with two.
set -u
ft_mpirun=$1 program=$2 rounds=$3
spares=1
[ "${4:-}" = --no-spares ] && spares=0
seed=${RANDOM_SEED:-$(date +%s)}
RANDOM=$seed
echo "elastic_kill_random: seed $seed"
fail=0 landed=0
for ((round = 1; round <= rounds; round++)); do
  dir=$(mktemp -d)
  if [ $spares = 1 ]; then
    victim=$(((1 + RANDOM % 3 + 1) % 4))  # 0, 2 or 3: not the member released at step 80
    delay_ms=$((100 + RANDOM % 1000))
    members=4
    timeout -k 5 60 "$ft_mpirun" --oversubscribe -np 6 -x RINGMEND_SPARES=2 "$program" --samples=2000 --per-rank=5 \
      --epochs=2 --step-ms=6 --grow-at=30 --grow=1 --release-at=80 --release=1 --expect-size=4 --pid-dir="$dir" \
      >"$dir/out" 2>&1 &
  else
    victim=$(((1 + RANDOM % 3 + 1) % 4))  # 0, 2 or 3: not the released member
    delay_ms=$((100 + RANDOM % 300))
    members=2
    timeout -k 5 60 "$ft_mpirun" --oversubscribe -np 4 "$program" --samples=1200 --per-rank=5 --epochs=2 \
      --step-ms=6 --release-at=30 --release=1 --expect-size=2 --pid-dir="$dir" >"$dir/out" 2>&1 &
  fi
  job=$!
  for _ in $(seq 300); do [ -f "$dir/rank$victim.pid" ] && break; sleep 0.02; done
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  pid=$(cat "$dir/rank$victim.pid" 2>/dev/null)
  killed=0
  if [ -z "$pid" ]; then
    echo "round $round: member $victim never started"; fail=1
  elif kill -9 "$pid" 2>/dev/null; then
    echo "round $round: kill -9 member $victim (pid $pid) ${delay_ms} ms after it started"
    killed=1
  else
    echo "round $round: member $victim had already ended (or been released) when its kill came"
  fi
  wait $job
  rc=$?
  verified=$(grep -o "TEST PASSED" "$dir/out" | wc -l)  # pieces of two lines may share one
  grep -E "step .*(recovered|grow|released)|joined|TEST|summary" "$dir/out" | sed 's/^/    /'
  # A kill that was sent must have landed during the job: the launcher's
  # summary names the victim as killed (with spares the final size alone
  # cannot tell). One that came too late is counted apart.
  if [ $killed = 1 ]; then
    if grep -qE "member $victim on .*: killed by SIGKILL" "$dir/out"; then
      landed=$((landed + 1))
    else
      echo "round $round: FAILED (member $victim was not killed during the job)"
      fail=1
    fi
  fi
  if [ $rc -ne 0 ] || [ "$verified" -ne $members ]; then
    echo "round $round: FAILED (exit status $rc, $verified of $members members verified)"
    tail -25 "$dir/out"
    fail=1
  fi
  rm -rf "$dir"
done
echo "elastic_kill_random: the kill landed in $landed of $rounds rounds"
if [ $((2 * landed)) -lt "$rounds" ]; then
  echo "elastic_kill_random: FAILED: the kill landed in fewer than half the rounds"
  fail=1
fi
[ $fail -eq 0 ] && echo "elastic_kill_random: all $rounds rounds passed" || echo "elastic_kill_random: FAILED (seed $seed)"
exit $fail
