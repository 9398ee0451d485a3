#!/usr/bin/env bash
# Short runs of the benchmark programs with --json, on 2 ranks of this node,
# into a results directory laid out as bench/run_standard.sh lays it out;
# then every file must follow the schema (bench_report.py check) and the
# report must be made of them (bench_report.py report), with their sizes.
#
#   check_result_files.sh BIN_DIR        (BIN_DIR: the build's bench/)
#
# Environment: MPIEXEC, RINGMEND_RUN (scripts/ft-mpirun's).
set -u
bin=$1
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
report=$top/bench/bench_report.py
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/json" "$out/logs"
: >"$out/runs.tsv"
ft=("$top/scripts/ft-mpirun" --oversubscribe)
fail=0

# job PART CONFIG BENCH RANKS command...: one run, its line in runs.tsv.
job() {
  local part=$1 config=$2 bench=$3 ranks=$4 json="json/$2.$3.1.json"
  shift 4
  timeout -k 5 100 "$@" --json "$out/$json" >"$out/logs/$config.$bench.log" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\t1\t%s\t%s\t1.0\t%s\tlogs/%s.%s.log\n' "$part" "$config" "$bench" "$ranks" "$rc" \
    "$json" "$config" "$bench" >>"$out/runs.tsv"
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: $bench exited with $rc:"
    tail -n 20 "$out/logs/$config.$bench.log"
    fail=1
  fi
}

job throughput one_node allreduce 2 "${ft[@]}" -np 2 "$bin/ringmend_allreduce" -m 4:4K -i 5 -x 1 -f -c
if [ -x "$bin/mpi_allreduce_openmpi" ]; then
  job throughput one_node openmpi_default 2 "$MPIEXEC" --allow-run-as-root --oversubscribe -np 2 \
    "$bin/mpi_allreduce_openmpi" --impl openmpi_default -m 4:4K -i 5 -x 1 -c
fi
if [ -x "$bin/ringmend_gloo_allreduce" ]; then
  job throughput one_node gloo 2 "${ft[@]}" -np 2 "$bin/ringmend_gloo_allreduce" -m 4:4K -i 5 -x 1 -c
fi
job throughput one_node p2p_bw 2 "${ft[@]}" -np 2 "$bin/ringmend_p2p_bw" --transport shm -m 1:4K -i 3 -x 1 \
  -W 4
job throughput one_node p2p_latency 2 "${ft[@]}" -np 2 "$bin/ringmend_p2p_latency" --transport shm -m 0:4K \
  -i 20 -x 2
job recovery recovery_n3 ringmend 3 "${ft[@]}" -np 3 "$bin/ringmend_recovery" -r 1 --settle 2
job recovery recovery_n3 restart 3 "${ft[@]}" -np 2 "$bin/ringmend_recovery" --init-only -s 4K

python3 "$report" check "$out"/json/*.json || fail=1
python3 "$report" report "$out" || fail=1
python3 - "$out/summary.json" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))
sizes = [r["size"] for r in s["allreduce"]["one_node"]["ringmend"]]
assert sizes == [4 << k for k in range(11)], sizes
assert s["validation"]["one_node"]["ringmend"] == {"wrong": 0, "rows_checked": 11}, s["validation"]
assert [r["size"] for r in s["p2p_latency"]["one_node"]["ringmend_shm"]][:2] == [0, 1], s["p2p_latency"]
assert s["recovery"]["3"]["ringmend"]["first"]["n"] == 1, s["recovery"]
print("summary.json: the allreduce, point-to-point and recovery figures of every file")
PY
[ "$fail" = 0 ] && echo "TEST PASSED: every result file follows the schema and makes the report"
exit "$fail"
