#!/usr/bin/env bash
# A member slowed, not stopped: its CPU cgroup gives it a twentieth of a CPU
# (what a throttled container, a noisy neighbour or a slow core looks like)
# while elastic_check computes the same CPU time per step on every member.
# The others wait for it in every call: the straggler comparison
# (docs/recovery.md, "Stragglers") must find it, and do what the policy says.
#
#   straggler_cgroup.sh FT_MPIRUN PROGRAM POLICY [NP]
# POLICY:
#   report   the member is named a straggler (log and ringmend-run's summary)
#            and stays: every member finishes, sample-exact
#   release  it is released; the others finish, sample-exact, one fewer
#   control  release, but nobody throttled: nobody is released
# Skipped (77) where no CPU cgroup can be made (cgroup v1 cpu, or v2 with
# the cpu controller, writable: root in a container usually is).
set -u
ft_mpirun=$1 program=$2 policy=$3 np=${4:-3}
victim=1 window=20
case $policy in
  report | release | control) ;;
  *) echo "straggler_cgroup: unknown policy $policy"; exit 2 ;;
esac

# The cgroup: a twentieth of one CPU. The member's steps take 40 ms, the
# others' 2 ms (and more when the machine is loaded). Part of its delay
# falls inside the calls (it is throttled while it takes part), where it
# does not show as lateness: it is found late by 30-90 % of the time.
name=ringmend-straggler-$$
if [ -w /sys/fs/cgroup/cpu ] && [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
  group=/sys/fs/cgroup/cpu/$name
  limit() { mkdir "$group" && echo 100000 >"$group/cpu.cfs_period_us" && echo 5000 >"$group/cpu.cfs_quota_us"; }
elif grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null && [ -w /sys/fs/cgroup ]; then
  group=/sys/fs/cgroup/$name
  limit() { mkdir "$group" && echo "5000 100000" >"$group/cpu.max"; }
else
  echo "straggler_cgroup: SKIPPED: no writable CPU cgroup here (cgroup v1 cpu or v2 with the cpu controller)"
  exit 77
fi
if [ "$policy" != control ]; then
  if ! limit 2>/dev/null; then
    rmdir "$group" 2>/dev/null
    echo "straggler_cgroup: SKIPPED: cannot make a CPU cgroup under ${group%/*}"
    exit 77
  fi
  trap 'rmdir "$group" 2>/dev/null' EXIT
fi

dir=$(mktemp -d)
trap 'rmdir "$group" 2>/dev/null; rm -rf "$dir"' EXIT
mode=$([ "$policy" = report ] && echo report || echo release)
RINGMEND_STRAGGLER_POLICY=$mode RINGMEND_STRAGGLER_WINDOW=$window \
  "$ft_mpirun" --oversubscribe -np "$np" -x RINGMEND_STRAGGLER_POLICY -x RINGMEND_STRAGGLER_WINDOW \
  ${RINGMEND_LOG:+-x RINGMEND_LOG} \
  ${RINGMEND_MEMBERSHIP:+-x RINGMEND_MEMBERSHIP} ${RINGMEND_TEST_RANKS_PER_NODE:+-x RINGMEND_TEST_RANKS_PER_NODE} \
  "$program" --samples=3000 --per-rank=5 --epochs=2 --work-ms=2 --pid-dir="$dir" >"$dir/out" 2>&1 &
job=$!
fail=0
if [ "$policy" != control ]; then
  for _ in $(seq 200); do [ -s "$dir/rank$victim.pid" ] && break; sleep 0.05; done
  pid=$(cat "$dir/rank$victim.pid" 2>/dev/null)
  if [ -z "$pid" ] || ! echo "$pid" >"$group/cgroup.procs"; then
    echo "straggler_cgroup: FAILED: member $victim never started, or could not be moved to $group"
    fail=1
  else
    echo "straggler_cgroup: member $victim (pid $pid) limited to a twentieth of a CPU ($group)"
  fi
fi
wait $job
rc=$?
grep -E "straggler|TEST|summary|released|error" "$dir/out" | sed 's/^/    /'
passed=$(grep -c "TEST PASSED" "$dir/out")
named=$(grep -c "member $victim .*is a straggler" "$dir/out")
case $policy in
  report)
    expect_passed=$np
    [ "$named" -ge 1 ] || { echo "FAILED: member $victim was not found a straggler"; fail=1; }
    grep -q "member $victim on .*: a straggler (the others waited for it up to" "$dir/out" ||
      { echo "FAILED: the summary does not name member $victim a straggler"; fail=1; }
    ;;
  release)
    expect_passed=$((np - 1))
    grep -q "member $victim released as a straggler" "$dir/out" ||
      { echo "FAILED: member $victim was not released"; fail=1; }
    grep -q "1 released (1 as a straggler)" "$dir/out" &&
      grep -q "member $victim on .*: released as a straggler (the others waited for it up to" "$dir/out" ||
      { echo "FAILED: the summary does not name member $victim released as a straggler"; fail=1; }
    ;;
  control)
    expect_passed=$np
    if grep -q "straggler" "$dir/out"; then echo "FAILED: a member was found a straggler, none was slowed"; fail=1; fi
    ;;
esac
if [ $rc -ne 0 ] || [ "$passed" -ne "$expect_passed" ]; then
  echo "FAILED: exit $rc, $passed of $expect_passed members verified every sample"
  tail -20 "$dir/out"
  fail=1
fi
exit $fail
