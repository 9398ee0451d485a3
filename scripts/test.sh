#!/usr/bin/env bash
# Sets up everything (scripts/bootstrap.sh, with Slurm for the local
# cluster), builds with warnings as errors and runs the whole test
# suite: unit tests, multi-process MPI tests with real SIGKILLs, then the
# multi-node tests on the local Slurm cluster (scripts/cluster.sh, started and
# stopped by the tests). Then repeats the unit tests and a fault-tolerance
# subset in an AddressSanitizer + UndefinedBehaviorSanitizer build.
#
# Each stage, and the whole run at its end, prints how many tests passed,
# failed and were skipped, naming the skipped ones (a test that cannot run
# here says why in its output and is counted as skipped, never as passed).
#
#   scripts/test.sh [--no-sanitizers] [ctest arguments, e.g. -L fault]
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sanitizers=1
if [ "${1:-}" = "--no-sanitizers" ]; then sanitizers=0; shift; fi
build=${RINGMEND_BUILD_DIR:-$top/build/test}
mkdir -p "$(dirname "$build")"

"$top/scripts/bootstrap.sh" --with-cluster-tools --with-python >/dev/null
"$top/scripts/build.sh" "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGMEND_WERROR=ON -DRINGMEND_PYTHON=ON

# stage NAME CTEST-ARGS...: one ctest run, its counts added to the totals.
total_passed=0 total_failed=0 total_skipped=0 skipped_names=""
stage() {
  local name=$1 log rc passed failed skipped names
  shift
  log=$(mktemp)
  set +e
  ctest "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  passed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed' "$log" || true)
  failed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*(Failed|Timeout|Exception|Not Run)' "$log" || true)
  skipped=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*Skipped' "$log" || true)
  names=$(sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .*\*\*\*Skipped.*/\1/p' "$log" | tr '\n' ' ')
  rm -f "$log"
  echo "[test] $name: $passed passed, $failed failed, $skipped skipped${names:+ ($names)}"
  total_passed=$((total_passed + passed)) total_failed=$((total_failed + failed))
  total_skipped=$((total_skipped + skipped)) skipped_names+=$names
  return "$rc"
}
summary() {
  echo "[test] summary: $total_passed passed, $total_failed failed, $total_skipped skipped" \
    "${skipped_names:+(skipped: $skipped_names; each says why in its output)}"
}
trap summary EXIT

echo "[test] ctest (every test has a timeout)"
if [ $# -gt 0 ]; then
  stage "ctest $*" --test-dir "$build" --output-on-failure -j 2 "$@"
else
  stage "the suite" --test-dir "$build" --output-on-failure -j 2 -LE cluster
  echo "[test] ctest on the local Slurm cluster (nodes in network namespaces)"
  stage "the cluster tests" --test-dir "$build" --output-on-failure -L cluster
fi

if [ "$sanitizers" = 1 ] && [ $# -eq 0 ]; then
  san=$build-asan
  "$top/scripts/build.sh" "$san" -DCMAKE_BUILD_TYPE=Debug -DRINGMEND_WERROR=ON \
    -DRINGMEND_SANITIZE=address,undefined -DRINGMEND_BUILD_BENCH=OFF -DRINGMEND_PYTHON=OFF
  echo "[test] ctest under ASan+UBSan"
  # MPI and UCX keep allocations alive until exit by design: leaks are not
  # checked here, memory errors and undefined behaviour are.
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    stage "ASan+UBSan" --test-dir "$san" --output-on-failure -j 2 \
    -R '^(Partition|Reduce|Ring|Config|CallQueue|Request|Half|nonblocking_kill_np4|Fault|Wire|Location|Plan|Simulate|TopoTool|RanksAndSizes|Shm|allreduce_np3|c_api|every_collective_np3|kill_in_allgather|kill_in_reduce_scatter|epoch_builder|kill_rank2_allgather2|kill_rank0_reduce_scatter2|kill_during_recovery|shm_leader_killed_at_attach|bad_input_count_mismatch|bad_input_null_buffer|StateRegistry|ReceivedBytes|spare_replaces_killed_rank|member_dies_in_state_transfer|UcxContext|kill_rank1_test_nodes_np4|recovery_watchdog|meeting_watchdog|ViewChange|Faults/ViewChange|NativeFrame|HeartbeatRing|NativeGroup|native_kill_during_recovery|native_kill_in_ucx_wireup_rebuild|native_repeated_failures_down_to_one|subgroup)'
fi
