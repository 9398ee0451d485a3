#!/usr/bin/env bash
# The network pre-check on the local two-node cluster.
#   healthy: both nodes pass, the job runs on both.
#   slow:    node n2 is really slowed: its slurmd, and so every process the
#            job starts there (the check's rank, PRRTE's daemon), runs in a
#            CPU cgroup capped at RINGMEND_SLOW_NODE_PERCENT (default 2) percent
#            of one CPU. The check must drop n2, say why, and the training
#            must run on n1 alone and succeed. The cap is low because both
#            "nodes" share this machine's cores with whatever else runs: a
#            busy machine already gives each rank only a slice of a core, and
#            the slowed node must get clearly less than that.
# The cap is lifted when the test ends, however it ends. Without root or a
# writable CPU cgroup controller the slow case is skipped (exit 77).
#   network_check.sh healthy|slow RINGMEND_RUN TRAIN_LOGREG
set -u
mode=$1 run=$2 train=$3
. "$(dirname "$0")/cluster_lib.sh"
need_cluster

cluster_dir=${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}
percent=${RINGMEND_SLOW_NODE_PERCENT:-2}
quota_us=$((percent * 1000))
slow_group=""
slurmd_pid=""
home_group=""

# The directory of a CPU controller we may create groups in (cgroup v1 `cpu`
# or v2 with `cpu` delegated to the root), or nothing.
cpu_cgroup_root() {
  local m
  m=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ {print $2; exit}' /proc/mounts)
  if [ -n "$m" ] && [ -w "$m" ]; then echo "v1 $m"; return; fi
  m=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
  if [ -n "$m" ] && [ -w "$m" ] && grep -qw cpu "$m/cgroup.subtree_control" 2>/dev/null; then echo "v2 $m"; fi
}

unthrottle() {
  [ -n "$slow_group" ] && [ -d "$slow_group" ] || return 0
  local p
  for p in $(cat "$slow_group/cgroup.procs" 2>/dev/null); do echo "$p" >"$home_group/cgroup.procs" 2>/dev/null || true; done
  rmdir "$slow_group" 2>/dev/null && echo "network_check: n2 is no longer slowed"
}

throttle_n2() {
  local info kind root
  [ "$(id -u)" -eq 0 ] || skip "slowing a node needs root (a CPU cgroup for n2's slurmd)"
  info=$(cpu_cgroup_root)
  [ -n "$info" ] || skip "no writable CPU cgroup controller (cgroup v1 'cpu' or v2 with 'cpu' delegated) to slow node n2"
  read -r kind root <<<"$info"
  slurmd_pid=$(tr -dc '0-9' <"$cluster_dir/run/slurmd-n2.pid" 2>/dev/null)
  [ -n "$slurmd_pid" ] && tr '\0' ' ' <"/proc/$slurmd_pid/cmdline" 2>/dev/null | grep -q -- "-N n2" ||
    { fail "cannot find the slurmd of node n2 (pid file $cluster_dir/run/slurmd-n2.pid)"; finish; }
  slow_group=$root/ringmend-slow-n2
  home_group=$root
  unthrottle  # a group left behind by an interrupted run
  mkdir "$slow_group" || skip "cannot create a cgroup under $root"
  if [ "$kind" = v1 ]; then
    echo 100000 >"$slow_group/cpu.cfs_period_us" && echo "$quota_us" >"$slow_group/cpu.cfs_quota_us"
  else
    echo "$quota_us 100000" >"$slow_group/cpu.max"
  fi || { rmdir "$slow_group"; skip "cannot set a CPU quota in $slow_group"; }
  trap 'unthrottle; cleanup_jobs' EXIT
  echo "$slurmd_pid" >"$slow_group/cgroup.procs" || { fail "cannot move slurmd n2 into $slow_group"; finish; }
  echo "network_check: node n2 slowed: its slurmd ($slurmd_pid) and its children get $percent% of one CPU ($kind, $slow_group)"
}

case "$mode" in
healthy)
  batch 150 "$work/job.out" -N 2 --ntasks-per-node=2 --overcommit -- \
    "export RINGMEND_TIMEOUT=60" "'$run' --network-check '$train' --steps=20"
  echo "$out"
  echo "----"
  [ "$rc" -eq 0 ] && pass "the job succeeded" || fail "the job's exit status is $rc"
  has "the check measured the link and both nodes" "network check: 2 nodes" "n1 - n2" "latency us" "copy GB/s"
  has "both nodes passed and the job used them" "network check: every node passed" "4 ranks on n1:2,n2:2" \
    "train_logreg: 4 ranks" "MATCHES the reference"
  ;;
slow)
  throttle_n2
  batch 200 "$work/job.out" -N 2 --ntasks-per-node=2 --overcommit -- \
    "export RINGMEND_TIMEOUT=60" "'$run' --network-check '$train' --steps=20"
  unthrottle
  echo "$out"
  echo "----"
  [ "$rc" -eq 0 ] && pass "the job succeeded" || fail "the job's exit status is $rc"
  has "the check printed its table" "network check: 2 nodes" "n1 - n2" "latency us"
  if grep -qE '^  n2 .*DROP: ' <<<"$out" && grep -qE '^  n1 .* ok$' <<<"$out"; then
    pass "the table marks n2 DROP and n1 ok"
  else
    fail "the table does not drop n2 alone"
  fi
  has "ringmend-run says which node it dropped and why" "ringmend-run: network check: dropping node n2: " \
    "the node is overloaded or throttled"
  has "the job ran on n1 alone" "2 ranks on n1:2 (n2 left out by the network check)" "--host n1:2 --map-by slot --prtemca plm_slurm_args --overlap -np 2" \
    "train_logreg: 2 ranks" "MATCHES the reference"
  ;;
*)
  echo "usage: network_check.sh healthy|slow RINGMEND_RUN TRAIN_LOGREG" >&2
  exit 2
  ;;
esac
finish
