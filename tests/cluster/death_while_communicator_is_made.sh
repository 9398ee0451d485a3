#!/usr/bin/env bash
# A member dies while the others make a communicator, and another member
# stalls in it, TRIES times, on the two nodes of the local Slurm cluster:
#
#   death_while_communicator_is_made.sh RINGMEND_RUN SOAK_WORKER TRIES
#
# 8 members and a spare (n1: members 0-4, n2: members 5-7 and the spare).
# Member 0 dies as the job starts (fault injection), so the members start
# with 7 and admit the spare at the end of their first call: a round of the
# spare pool (MPIX_Comm_shrink of the pool, then an allgather and an
# agreement on the communicator the shrink made). Member 6 (n2) is SIGKILLed
# 8-24 ms after it started its work, which lands in that round, and member 2
# (n1) is SIGSTOPped just after for 1-3.5 s, which holds every process in
# the making of that communicator. With Open MPI 5.0.7 as released, a
# process that learned of the death while that communicator was being made
# took the dead member for alive in it for good, and every live process
# waited in the agreement: 6 of 62 tries hung (none of 90 with the fix)
# (scripts/patches/openmpi-5.0.7-ulfm-failed-proc-in-new-comm.patch).
#
# The worker's sequence is the one of the soak round where the hang was
# first seen (its first call: an allreduce of 23 KB).
#
# Each try must end with exit status 0 and every survivor's log must end in
# "finished" at the same size and epoch; RINGMEND_RECOVERY_TIMEOUT bounds a
# stuck recovery, so a hang is a failure within seconds. A member lost
# besides the two victims is printed, not failed: UCX 1.13's TCP transport
# sometimes aborts a process that makes new connections here (an assertion
# in tcp_iface.c, docs/troubleshooting.md), and the job survives that loss
# like any other. RANDOM_SEED fixes
# the moments (printed). Exits 77 without the cluster.
#
# A smoke test, as its ctest name says: the moments are drawn, and the
# window of the bug is hit by chance (6 hangs in 62 tries without the fix),
# so a pass does not prove the fix holds; a hang is still caught as a
# failure. What it does prove: in every try the victim was killed during
# the job (the launcher's summary names it), and at least half the tries
# had their kill land (a try whose victim never started is counted apart).
set -u
launcher=$1 worker=$2 tries=$3
export SLURM_CONF=${SLURM_CONF:-${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}/slurm.conf}
command -v salloc >/dev/null && [ -f "$SLURM_CONF" ] ||
  { echo "death_while_communicator_is_made: no local Slurm cluster (scripts/cluster.sh start)"; exit 77; }
seed=${RANDOM_SEED:-$(date +%s)}
RANDOM=$seed
echo "death_while_communicator_is_made: seed $seed"
# Waits until FILE holds PATTERN (at most 30 s).
wait_for() {
  local file=$1 pattern=$2
  for _ in $(seq 6000); do grep -q "$pattern" "$file" 2>/dev/null && return 0; sleep 0.005; done
  return 1
}
sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
fail=0 landed=0
for ((try = 1; try <= tries; try++)); do
  dir=$(mktemp -d)
  kill_ms=$((8 + RANDOM % 17)) stall_after_ms=$((RANDOM % 400)) stall_ms=$((1000 + RANDOM % 2500))
  RINGMEND_FAULT=rank=0,call=0,phase=attach RINGMEND_RECOVERY_TIMEOUT=15 RINGMEND_TIMEOUT=60 \
    RINGMEND_START_TIMEOUT=10 timeout -k 5 100 salloc -Q -N 2 -n 9 --overcommit --immediate=30 \
    "$launcher" -q -n 8 --oversubscribe --spares 1 -N 2 "$worker" --dir="$dir" --seed=854136598 \
    --calls=40 --max-bytes=16777216 --state-bytes=1048576 >"$dir/out" 2>&1 &
  job=$!
  plan="member 6 killed ${kill_ms} ms after it started, member 2 stopped ${stall_after_ms} ms later for ${stall_ms} ms"
  killed=0
  if wait_for "$dir/results.6" started; then
    sleep_ms "$kill_ms"
    kill -9 "$(cat "$dir/pid.6")" 2>/dev/null && killed=1
    sleep_ms "$stall_after_ms"
    if pid2=$(cat "$dir/pid.2" 2>/dev/null) && kill -STOP "$pid2" 2>/dev/null; then
      sleep_ms "$stall_ms"
      kill -CONT "$pid2" 2>/dev/null
    fi
  else
    plan="member 6 never started its work (a death at start-up can end the job early): no kill"
  fi
  wait $job
  rc=$?
  problems=()
  [ "$rc" = 0 ] || problems+=("exit status $rc")
  if [ "$killed" = 1 ]; then
    if grep -q "^ringmend-run:   member 6 on .*killed by SIGKILL" "$dir/out"; then
      landed=$((landed + 1))
    else
      problems+=("member 6 was not killed during the job (the summary does not say so)")
    fi
  fi
  # Members the launcher's summary lists as lost besides the two victims
  # are not a hang: they are reported, and the others must still finish.
  ends=() others=""
  for m in 1 2 3 4 5 7; do
    if lost=$(grep -m 1 "^ringmend-run:   member $m on " "$dir/out"); then
      others+=" [${lost#ringmend-run:   }]"
      continue
    fi
    ends+=("$(tail -n 1 "$dir/results.$m" 2>/dev/null)")
    [[ "${ends[-1]}" == finished* ]] || problems+=("member $m did not finish: '${ends[-1]}'")
  done
  [ ${#ends[@]} -ge 4 ] || problems+=("only ${#ends[@]} members finished")
  [ ${#ends[@]} = 0 ] || [ "$(printf '%s\n' "${ends[@]}" | sort -u | wc -l)" = 1 ] ||
    problems+=("survivors ended apart")
  if [ ${#problems[@]} = 0 ]; then
    echo "try $try: $plan: passed (${ends[0]})${others:+; also lost:$others}"
    rm -rf "$dir"
  else
    echo "try $try: $plan: FAILED: ${problems[*]} (kept: $dir)"
    sed 's/^/    /' "$dir/out" | tail -25
    fail=1
  fi
done
echo "the kill landed in $landed of $tries tries"
if [ $((2 * landed)) -lt "$tries" ]; then
  echo "FAILED: the kill landed in fewer than half the tries: the test did not exercise its window"
  fail=1
fi
exit $fail
