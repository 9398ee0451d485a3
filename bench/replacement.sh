#!/usr/bin/env bash
# Replacement against shrink-only recovery and a restart: death -> first
# completed collective with a spare admitted in the dead rank's place, for
# registered state of 0, 1 MiB and 64 MiB; the same with no spare (the job
# shrinks); and the wall time of a restarted job of N ranks (start, one
# allreduce, shutdown). Each figure: min/median/max over REPEATS jobs of one
# round. The bound checked: replacement <= shrink-only + state /
# point-to-point bandwidth (ringmend_p2p_bw over the link the state crosses,
# same run) + 10 ms, where shrink-only is the same application without a
# spare: N + 1 ranks with the same state registered that lose one and go
# on with N, placed as the replacement job's. On a machine with fewer cores than processes, one
# process more slows every MPI step of a recovery (a 2-core VM, two Slurm
# nodes: the shrink of 5 processes took twice that of 4), so the job of N
# ranks (N -> N - 1) is printed too but is not the bound's baseline.
# The victim dies as the allreduce starts (--phase start), before it gave
# its input: whether a rank reaches a later point of the call, and whether
# the others can finish the call without it, depends on the pipeline's
# shape, which adapts (across the nodes a victim that reduced no slice was
# never killed, or died after giving its input).
#
#   bench/replacement.sh BENCH_DIR [RANKS] [REPEATS] [--cluster | --emulated]
#
# One node by default (the state crosses shared memory). --cluster runs on
# the two nodes of the local Slurm cluster (scripts/cluster.sh start): the
# first half of the ranks on n1, the rest and the spare on n2; the victim
# (the middle rank) is n2's first rank, its leader, and the state goes to
# the spare from the other survivor on n2, over shared memory (a joiner
# takes the state from a member of its own node when there is one;
# point-to-point bandwidth over UCX between the nodes is printed too). The
# restart there is timed around tests/cluster/run_on_cluster.sh
# (allocation included). --emulated places the ranks alike on two nodes
# emulated on this machine without Slurm
# (tests/cluster/run_on_emulated_nodes.sh): the same planning and links as
# on the local cluster, on a machine that has Slurm or not.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cluster=0
args=()
roc="$here/../tests/cluster/run_on_cluster.sh" nodes="the local Slurm cluster"
for a in "$@"; do
  case "$a" in
    --cluster) cluster=1 ;;
    --emulated)
      cluster=1 roc="$here/../tests/cluster/run_on_emulated_nodes.sh" nodes="two nodes emulated on $(hostname)" ;;
    *) args+=("$a") ;;
  esac
done
set -- "${args[@]}"
bin=$1 n=${2:-4} repeats=${3:-3}
ft="$here/../scripts/ft-mpirun"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# launch NP PROGRAM ARGS...: NP processes, on one node or across the two
# (the last process, the spare when there is one, on n2).
launch() {
  local np=$1
  shift
  if [ "$cluster" = 1 ]; then
    local first=$((n / 2))
    timeout -k 5 120 "$roc" -t 110 "$first,$((np - first))" "$@"
  else
    timeout -k 5 120 "$ft" --oversubscribe -np "$np" "$@"
  fi
}
where="on $(hostname)"
[ "$cluster" = 1 ] && where="on $nodes ($((n / 2)) + $((n - n / 2)) ranks, the spare on the second)"
echo "# replacement benchmark: $n ranks $where ($(nproc) cores: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)), $repeats jobs per figure"
if [ "$cluster" = 1 ]; then
  timeout -k 5 200 "$roc" -t 190 2 "$bin/ringmend_p2p_bw" -m 1M:64M --transport shm -i 20 >"$work/p2p" 2>&1
  timeout -k 5 200 "$roc" -t 190 1,1 "$bin/ringmend_p2p_bw" -m 1M:64M --transport ucx -i 10 -W 8 >"$work/p2p_ucx" 2>&1
else
  "$ft" --oversubscribe -np 2 "$bin/ringmend_p2p_bw" -m 1M:64M --transport shm -i 20 >"$work/p2p" 2>&1
fi
# The jobs of one repeat run one after the other, the repeats in turn: a
# machine whose speed drifts (a VM's neighbours) shifts every figure alike
# rather than one figure more than its baseline.
for r in $(seq "$repeats"); do
  for state in 0 1M 64M; do
    launch $((n + 1)) "$bin/ringmend_recovery" -r 1 --phase start --spares 1 --state "$state" \
      --json "$work/rep.$state.$r.json" >"$work/rep.$state.$r.out" 2>&1 || { cat "$work/rep.$state.$r.out"; exit 1; }
    # The same application and processes without a spare: N + 1 ranks,
    # the same state registered (a victim holding 64 MiB takes longer to
    # die: its memory is freed first), that shrink to N (the size a
    # replacement keeps), placed alike.
    launch $((n + 1)) "$bin/ringmend_recovery" -r 1 --phase start --state "$state" \
      --json "$work/shrink1.$state.$r.json" >"$work/shrink1.$state.$r.out" 2>&1 ||
      { cat "$work/shrink1.$state.$r.out"; exit 1; }
  done
  launch "$n" "$bin/ringmend_recovery" -r 1 --phase start --json "$work/shrink.$r.json" \
    >"$work/shrink.$r.out" 2>&1 || { cat "$work/shrink.$r.out"; exit 1; }
  start=$(date +%s.%N)
  launch "$n" "$bin/ringmend_recovery" --init-only >"$work/init.$r.out" 2>&1
  awk -v end="$(date +%s.%N)" -v start="$start" 'BEGIN { print end - start }' >"$work/restart.$r"
done
python3 - "$work" "$repeats" "$cluster" <<'PY'
import json, statistics, sys, glob
work, reps = sys.argv[1], int(sys.argv[2])
def rows(pattern): return [json.load(open(f))["rows"][0] for f in sorted(glob.glob(f"{work}/{pattern}"))]
def mmm(v): return f"{min(v):8.2f} {statistics.median(v):8.2f} {max(v):8.2f}"
def bandwidths(path):
    out = {}
    for line in open(path):
        parts = line.split()
        if parts and parts[0].isdigit(): out[int(parts[0])] = float(parts[1]) * 1e6  # bytes/s
    return out
p2p = bandwidths(f"{work}/p2p")
p2p_ucx = bandwidths(f"{work}/p2p_ucx") if glob.glob(f"{work}/p2p_ucx") else {}
shrink_n = [r["first_ms"] for r in rows("shrink.*.json")]
restart = [float(open(f).read()) * 1e3 for f in sorted(glob.glob(f"{work}/restart.*"))]
print(f"# shrink-only, N ranks -> N - 1: death -> first collective (ms, min median max): {mmm(shrink_n)}")
print(f"# restart of the job (ms, wall time of start + one allreduce + shutdown): {mmm(restart)}")
print("# state   | shrink-only N + 1 -> N     | replacement first (ms)     | state sent (ms)            | state GB/s | bound (ms) | within")
ok = True
for state, size in (("0", 0), ("1M", 1 << 20), ("64M", 64 << 20)):
    rr = rows(f"rep.{state}.*.json")
    shrink = [r["first_ms"] for r in rows(f"shrink1.{state}.*.json")]
    first = [r["first_ms"] for r in rr]; sent = [r["state_ms"] for r in rr]
    bw = size / (statistics.median(sent) / 1e3) / 1e9 if size and statistics.median(sent) > 0 else float("nan")
    p2p_bw = p2p.get(size, max(p2p.values()) if p2p else 1)
    bound = statistics.median(shrink) + (size / p2p_bw * 1e3 if size else 0) + 10
    within = statistics.median(first) <= bound
    ok = ok and within
    print(f"{state:>7}   | {mmm(shrink)} | {mmm(first)} | {mmm(sent)} | {bw:10.2f} | {bound:10.2f} | {'yes' if within else 'NO'}")
def rates(bw): return ", ".join(f"{k >> 20} MiB {v / 1e9:.1f} GB/s" for k, v in sorted(bw.items()) if k in (1 << 20, 64 << 20))
print("# bound: median shrink-only (N + 1 -> N, same state) + state / p2p bandwidth (ringmend_p2p_bw, shm: " + rates(p2p) + ") + 10 ms")
if p2p_ucx: print("# p2p over UCX between the nodes (not crossed by the state): " + rates(p2p_ucx))
sys.exit(0 if ok else 1)
PY
