#!/usr/bin/env bash
# Flakiness check: runs the test suite N times in a row while a real build
# keeps every core busy (a clean rebuild of ringmend in its own build
# directory, over and over), and prints which runs passed and which tests
# failed in the others. A test that depends on timing shows up here long
# before it fails a submission at random.
#
#   scripts/repeat-under-load.sh [--runs N] [--build DIR] [--load-build DIR]
#                                [--no-load] [-- CTEST ARGS...]
#
# Defaults: 10 runs of `ctest -j 2 -LE cluster` in build/test (configured and
# built by scripts/test.sh or scripts/build.sh), the load built in
# build/load. Give other ctest arguments after `--` (e.g. `-- -j 2 -L fault`).
# The logs of failed runs are kept under ${TMPDIR:-/tmp}/ringmend-repeat.
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=10 build=$top/build/test load_build=$top/build/load load=1
ctest_args=(-j 2 -LE cluster)
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --load-build) load_build=$2; shift 2 ;;
    --no-load) load=0; shift ;;
    --) shift; ctest_args=("$@"); break ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "repeat-under-load: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -f "$build/CTestTestfile.cmake" ] || { echo "repeat-under-load: $build has no tests (scripts/test.sh builds build/test)" >&2; exit 2; }
logs=${TMPDIR:-/tmp}/ringmend-repeat
mkdir -p "$logs"

load_pid=
stop_load() {
  [ -n "$load_pid" ] || return 0
  kill -- -"$load_pid" 2>/dev/null
  wait "$load_pid" 2>/dev/null
  load_pid=
}
trap 'stop_load' EXIT
trap 'exit 130' INT TERM
if [ "$load" = 1 ]; then
  if [ ! -f "$load_build/build.ninja" ]; then
    echo "[repeat] configuring the load's build directory $load_build"
    "$top/scripts/build.sh" "$load_build" -DRINGMEND_BUILD_BENCH=OFF >"$logs/load-configure.log" 2>&1 ||
      { echo "repeat-under-load: could not configure $load_build (see $logs/load-configure.log)" >&2; exit 2; }
  fi
  # Its own process group, so that stopping it stops the compilers too.
  set -m
  (
    while :; do
      ninja -C "$load_build" -t clean >/dev/null 2>&1
      ninja -C "$load_build" -j "$(nproc)" >/dev/null 2>&1
    done
  ) &
  load_pid=$!
  set +m
  echo "[repeat] load: clean rebuilds of $load_build with $(nproc) jobs (pid group $load_pid)"
fi

passed=0
declare -A failures=()
for ((i = 1; i <= runs; i++)); do
  log=$logs/run-$i.log
  start=$SECONDS
  ctest --test-dir "$build" --output-on-failure "${ctest_args[@]}" >"$log" 2>&1
  rc=$?
  summary=$(grep -E 'tests passed|tests failed' "$log" | tail -n 1)
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    echo "[repeat] run $i: passed ($summary, $((SECONDS - start)) s)"
    rm -f "$log"
  else
    failed=$(awk '/The following tests FAILED/ {f = 1; next} f && / - / {print $3}' "$log" | tr '\n' ' ')
    echo "[repeat] run $i: FAILED ($summary, $((SECONDS - start)) s): ${failed:-see log}; log kept: $log"
    for t in $failed; do failures[$t]=$((${failures[$t]:-0} + 1)); done
  fi
done
stop_load
echo "[repeat] $passed of $runs runs passed$([ "$load" = 1 ] && echo " beside a busy build")"
for t in "${!failures[@]}"; do echo "[repeat]   $t failed in ${failures[$t]} run(s)"; done
[ "$passed" -eq "$runs" ]
