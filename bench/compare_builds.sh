#!/usr/bin/env bash
# Two builds of ringmend side by side on this machine, in one run: the
# allreduce benchmark of each, alternating, so that a change (a refactoring,
# a new data path) is measured against the commit before it under the same
# load. Prints min / median / max latency per size for each build.
#
#   bench/compare_builds.sh BEFORE_BUILD AFTER_BUILD [--runs N] [--sizes MIN:MAX]
#
# Two placements: 2 ranks on this node (shared memory), and 2 ranks as two
# test nodes (RINGMEND_TEST_RANKS_PER_NODE=1: the ring over UCX). Each
# build's own ringmend-run launches its own benchmark.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
before=${1:?usage: compare_builds.sh BEFORE_BUILD AFTER_BUILD [--runs N] [--sizes MIN:MAX]}
after=${2:?usage: compare_builds.sh BEFORE_BUILD AFTER_BUILD [--runs N] [--sizes MIN:MAX]}
shift 2
runs=5 sizes=4:16M
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    *) echo "compare_builds: unknown option '$1'" >&2; exit 2 ;;
  esac
done
for b in "$before" "$after"; do
  [ -x "$b/bench/ringmend_allreduce" ] || { echo "compare_builds: no $b/bench/ringmend_allreduce" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mpiexec=${MPIEXEC:-$(sed -n 's/^MPIEXEC_EXECUTABLE:FILEPATH=//p' "$after/CMakeCache.txt")}
for r in $(seq "$runs"); do
  for placement in node two_nodes; do
    for which in before after; do
      b=$before
      [ "$which" = after ] && b=$after
      nodes=0
      [ "$placement" = two_nodes ] && nodes=1
      echo "[compare_builds] run $r of $runs: $placement, $which" >&2
      MPIEXEC=$mpiexec RINGMEND_RUN=$b/slurm/ringmend-run RINGMEND_TEST_RANKS_PER_NODE=$nodes \
        timeout -k 5 600 "$top/scripts/ft-mpirun" -np 2 "$b/bench/ringmend_allreduce" --impl ringmend \
        -m "$sizes" --json "$out/$placement.$which.$r.json" >"$out/log" 2>&1 \
        || { cat "$out/log" >&2; exit 2; }
    done
  done
done
python3 - "$out" "$runs" "$before" "$after" <<'PY'
import json, statistics, sys, os
out, runs, before, after = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
print(f"before: {before}\nafter:  {after}\n{runs} alternating runs each; latency in us, min / median / max")
for placement in ("node", "two_nodes"):
    lat = {}
    for which in ("before", "after"):
        for r in range(1, runs + 1):
            with open(os.path.join(out, f"{placement}.{which}.{r}.json")) as f:
                for row in json.load(f)["rows"]:
                    if row["impl"] == "ringmend":
                        lat.setdefault(row["size"], {}).setdefault(which, []).append(row["avg_latency_us"])
    print(f"\n{placement}: size | before | after | after/before (medians)")
    for size in sorted(lat):
        b, a = lat[size]["before"], lat[size]["after"]
        fmt = lambda v: f"{min(v):.1f} / {statistics.median(v):.1f} / {max(v):.1f}"
        print(f"{size:>10} | {fmt(b)} | {fmt(a)} | {statistics.median(a) / statistics.median(b):.2f}")
PY
