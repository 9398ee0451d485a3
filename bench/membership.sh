#!/usr/bin/env bash
# The native membership's figures (docs/membership.md, "Measured"), each
# beside what a user would run instead, in one run:
#   1. a process SIGKILLed in an allreduce, one node: death -> the next
#      completed collective (and detection) with the native membership
#      (RINGMEND_MEMBERSHIP=native) and with ULFM (ringmend's default under
#      mpirun), jobs alternating, ROUNDS deaths per job (ringmend_recovery);
#   2. with --cluster, on the namespace cluster (scripts/cluster.sh, 3
#      nodes x 2 tasks, plain srun): a node powered off, powered off
#      silently, cut; fault -> the first round every survivor completed
#      after it (native_membership_probe), REPEATS times each;
#   3. with --cluster, the failure-free cost of the native membership
#      (heartbeats, its thread): a 1 MiB allreduce across the 3 nodes under
#      srun with it and with MPI alone (RINGMEND_MEMBERSHIP=mpi), runs
#      alternating.
# Every figure is min / median / max; the machine, the commit and the date
# head the report (stdout, Markdown).
#   bench/membership.sh BUILD_DIR [REPEATS] [--cluster]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
cluster=0
args=()
for a in "$@"; do
  case "$a" in
    --cluster) cluster=1 ;;
    *) args+=("$a") ;;
  esac
done
set -- "${args[@]}"
build=${1:?usage: bench/membership.sh BUILD_DIR [REPEATS] [--cluster]}
repeats=${2:-5}
build=$(cd "$build" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ft="$root/scripts/ft-mpirun"

stats() { # values on stdin -> "min / median / max"
  python3 -c '
import statistics, sys
v = sorted(float(x) for x in sys.stdin.read().split())
print("%.1f / %.1f / %.1f (n=%d)" % (v[0], statistics.median(v), v[-1], len(v)) if v else "none")'
}

echo "# The native membership's figures"
echo
echo "- machine: $(hostname), $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), Linux $(uname -r)"
echo "- commit: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo ' (with changes)'), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "- command: bench/membership.sh BUILD_DIR $repeats$([ $cluster = 1 ] && echo ' --cluster')"
echo

# 1. A process killed, one node.
ranks=6 rounds=4
for ((i = 0; i < repeats; ++i)); do
  for backend in native ulfm; do
    m=$([ $backend = native ] && echo native || echo auto)
    timeout -k 5 120 "$ft" --oversubscribe -np $ranks -x RINGMEND_MEMBERSHIP=$m \
      "$build/bench/ringmend_recovery" -r $rounds 2>/dev/null | grep -E '^[0-9]+ ' >>"$work/recovery-$backend" || true
  done
done
echo "## A process killed ($ranks ranks on one node, $rounds deaths per job, $repeats jobs each)"
echo
echo "| membership | detect (ms) | death -> next completed collective (ms) |"
echo "|---|---|---|"
for backend in native ulfm; do
  echo "| $([ $backend = native ] && echo native || echo 'ULFM (mpirun)') |" \
    "$(awk '{print $4}' "$work/recovery-$backend" | stats) |" \
    "$(awk '{print $9}' "$work/recovery-$backend" | stats) |"
done
echo
[ $cluster = 1 ] || exit 0

# 2. Nodes lost, on the namespace cluster.
export SLURM_CONF=${SLURM_CONF:-${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}/slurm.conf}
cs="$root/scripts/cluster.sh"
probe="$build/tests/slurm/native_membership_probe"
one_loss() { # NAME FAULT_VERB NODE [--silent]
  local dir=$work/$1-$i srun_pid
  mkdir -p "$dir"
  RINGMEND_HEARTBEAT_TIMEOUT=1 RINGMEND_RECOVERY_TIMEOUT=10 timeout -k 5 90 srun -J ringmend-bench --mpi=pmix \
    -N 3 -n 6 --ntasks-per-node=2 --overcommit --no-kill --kill-on-bad-exit=0 -o "$dir/out-%t.log" \
    "$probe" --rounds 500 >/dev/null 2>&1 &
  srun_pid=$!
  for _ in $(seq 1 600); do
    [ "$(cat "$dir"/out-*.log 2>/dev/null | grep -c ' of 6 on ')" -eq 6 ] && break
    sleep 0.1
  done
  sleep 1
  local at
  at=$(date +%s.%N)
  "$cs" "$2" "$3" ${4:-} >/dev/null
  for _ in $(seq 1 300); do
    [ "$(cat "$dir"/out-*.log | grep -c 'resumed at')" -ge 4 ] && break
    sleep 0.1
  done
  sed -n 's/.*resumed at \([0-9.]*\)$/\1/p' "$dir"/out-*.log | sort -n | tail -n 1 |
    awk -v at="$at" '{ printf "%.1f\n", ($1 - at) * 1000 }' >>"$work/node-$1"
  for id in $(squeue -h -n ringmend-bench -o %i); do scancel "$id"; done
  kill -9 "$srun_pid" 2>/dev/null || true
  wait "$srun_pid" 2>/dev/null || true
  "$cs" heal-node "$3" >/dev/null
}
for ((i = 0; i < repeats; ++i)); do
  one_loss power-off kill-node n2
  one_loss silent kill-node n2 --silent
  one_loss cut cut-node n3
done
echo "## Nodes lost (3 nodes x 2 tasks under srun, heartbeat timeout 1 s)"
echo
echo "| fault | fault -> next completed round (ms) |"
echo "|---|---|"
echo "| a node powered off (\`kill-node\`) | $(stats <"$work/node-power-off") |"
echo "| a node powered off silently (\`kill-node --silent\`) | $(stats <"$work/node-silent") |"
echo "| a node cut (\`cut-node\`) | $(stats <"$work/node-cut") |"
echo

# 3. The failure-free cost: the native membership with heartbeats (every
# 250 ms), without them (a timeout of an hour: one every 15 minutes), and
# MPI alone (no fault tolerance: no results kept for a catch-up either).
for ((i = 0; i < repeats; ++i)); do
  for m in native quiet mpi; do
    RINGMEND_MEMBERSHIP=$([ $m = mpi ] && echo mpi || echo native) \
      RINGMEND_HEARTBEAT_TIMEOUT=$([ $m = quiet ] && echo 3600 || echo 1) \
      timeout -k 5 120 srun -J ringmend-bench --mpi=pmix -N 3 -n 3 \
      "$build/bench/ringmend_allreduce" -m 1M:1M -i 300 --impl ringmend --no-bound 2>/dev/null |
      awk '/^1048576 /{print $2}' >>"$work/cost-$m" || true
  done
done
echo "## Failure-free cost (1 MiB float allreduce, 3 ranks on 3 nodes, srun, $repeats runs each)"
echo
echo "| membership | latency (us) |"
echo "|---|---|"
echo "| native, heartbeat timeout 1 s | $(stats <"$work/cost-native") |"
echo "| native, heartbeat timeout 1 h (no heartbeats) | $(stats <"$work/cost-quiet") |"
echo "| MPI alone (RINGMEND_MEMBERSHIP=mpi, no fault tolerance) | $(stats <"$work/cost-mpi") |"
python3 - "$work/cost-native" "$work/cost-quiet" "$work/cost-mpi" <<'PY'
import statistics, sys
a, q, b = (statistics.median(float(x) for x in open(f).read().split()) for f in sys.argv[1:4])
print("\nmedians: heartbeats / none %.3f; native / MPI alone %.3f" % (a / q, a / b))
PY
