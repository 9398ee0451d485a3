#!/usr/bin/env bash
# One short run of an MPI baseline of the benchmark (bench/mpi_allreduce.c)
# under its own launcher: its results are checked (-c) and its JSON must be
# what bench_report.py reads (rows of the impl named, no wrong element).
#
#   check_baseline.sh IMPL PROGRAM LAUNCHER [LAUNCHER ARGS...]
set -u
impl=$1 program=$2
shift 2
json=$(mktemp)
trap 'rm -f "$json"' EXIT
timeout -k 5 100 "$@" "$program" --impl "$impl" -m 4:1M -i 5 -x 1 -c --json "$json" || {
  echo "FAILED: $impl: the run failed (exit $?)"
  exit 1
}
python3 - "$json" "$impl" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
assert d["benchmark"] == "allreduce" and d["parameters"]["impl"] == sys.argv[2], d["parameters"]
assert len(rows) == 19 and rows[0]["size"] == 4 and rows[-1]["size"] == 1 << 20, [r["size"] for r in rows]
assert all(r["impl"] == sys.argv[2] and r["wrong"] == 0 and r["avg_latency_us"] > 0 for r in rows), rows
print(f"TEST PASSED: {sys.argv[2]}: {len(rows)} sizes, every result right; {d['run']['mpi_library_version'][:60]}")
PY
