#!/usr/bin/env bash
# A guard against speed regressions, in about a minute: ringmend's allreduce
# against MPI_Allreduce of the same MPI, 2 ranks on this node, default
# settings, several runs in one invocation; then a verdict against the
# targets (bench/README.md, "Checking the speed"):
#
#   <= 1 KiB           latency <= 1.2x MPI_Allreduce
#   256 KiB .. 64 MiB  busbw >= 2x MPI_Allreduce
#   1 MiB .. 64 MiB    busbw >= 80 % of the memory bound
#
#   bench/check_speed.sh [--build DIR] [--no-build] [--runs N] [--max-size SIZE]
#
# Run it before and after a change to the data path (compare the two
# verdicts: the machine matters more than the thresholds), and on a new
# machine. Exit status 0 when every size meets its targets, 1 otherwise,
# 2 when a run failed. Not part of the test suite: timings on a shared
# machine are no pass/fail test.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$top/build/bench do_build=1 runs=3 max_size=64M
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --runs) runs=$2; shift 2 ;;
    --max-size) max_size=$2; shift 2 ;;
    *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2 ;;
  esac
done
if [ "$do_build" = 1 ]; then
  "$top/scripts/build.sh" "$build" -DCMAKE_BUILD_TYPE=Release -DRINGMEND_BUILD_TESTS=OFF >/dev/null
fi
prog=$build/bench/ringmend_allreduce
[ -x "$prog" ] || { echo "check_speed: no $prog (build it, or drop --no-build)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$runs"); do
  echo "[check_speed] run $r of $runs"
  timeout -k 5 600 "$top/scripts/ft-mpirun" -np 2 "$prog" --impl both -m "4:$max_size" --json "$out/run$r.json" \
    >"$out/run$r.txt" 2>&1 || { cat "$out/run$r.txt" >&2; exit 2; }
done
python3 - "$out" "$runs" <<'EOF'
import json, statistics, sys
d, runs = sys.argv[1], int(sys.argv[2])
rows = {}
machine = ""
for r in range(1, runs + 1):
    data = json.load(open(f"{d}/run{r}.json"))
    machine = data.get("run", {}).get("hostname", machine)
    for row in data["rows"]:
        rows.setdefault((row["size"], row["impl"]), []).append(row)
KiB, MiB = 1024, 1 << 20
sizes = sorted({s for s, _ in rows})
missed = 0
print(f"# {runs} runs, 2 ranks, one node ({machine}); median [min-max] of the runs; ratio: median of the")
print("# runs' ringmend/MPI ratios (latency) or ringmend/MPI busbw, each taken within one run")
print(f"{'size':>10}  {'ringmend':>24}  {'MPI':>24}  {'ratio':>6}  {'% bound':>8}  verdict")
for s in sizes:
    r, m = rows.get((s, "ringmend"), []), rows.get((s, "mpi"), [])
    if not r or not m:
        continue
    verdicts = []
    if s <= KiB:
        lr = [x["avg_latency_us"] for x in r]
        lm = [x["avg_latency_us"] for x in m]
        ratio = statistics.median(a / b for a, b in zip(lr, lm))  # per run: side by side
        cells = (f"{statistics.median(lr):.3g} us [{min(lr):.3g}-{max(lr):.3g}]",
                 f"{statistics.median(lm):.3g} us [{min(lm):.3g}-{max(lm):.3g}]")
        verdicts.append(("latency <= 1.2x MPI", ratio <= 1.2))
        pct = None
    else:
        br = [x["busbw_GBps"] for x in r]
        bm = [x["busbw_GBps"] for x in m]
        ratio = statistics.median(a / b for a, b in zip(br, bm))  # per run: side by side
        cells = (f"{statistics.median(br):.3g} GB/s [{min(br):.3g}-{max(br):.3g}]",
                 f"{statistics.median(bm):.3g} GB/s [{min(bm):.3g}-{max(bm):.3g}]")
        pcts = [x["bound_pct"] for x in r if x.get("bound_pct") is not None]
        pct = statistics.median(pcts) if pcts else None
        if s >= 256 * KiB:
            verdicts.append(("busbw >= 2x MPI", ratio >= 2.0))
        if s >= MiB and pct is not None:
            verdicts.append(("busbw >= 80% of bound", pct >= 80.0))
        if pct is not None and max(pcts) > 100.0:
            verdicts.append(("bound holds (a run beat it: the model is wrong)", False))
    if not verdicts:
        continue
    bad = [name for name, ok in verdicts if not ok]
    missed += len(bad)
    pct_cell = f"{pct:.0f}" if pct is not None else "-"
    print(f"{s:>10}  {cells[0]:>24}  {cells[1]:>24}  {ratio:>6.2f}  {pct_cell:>8}  "
          + ("ok" if not bad else "BELOW: " + "; ".join(bad)))
print(f"# verdict: {'every target met' if missed == 0 else f'{missed} target(s) missed'}")
sys.exit(0 if missed == 0 else 1)
EOF
