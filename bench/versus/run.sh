#!/usr/bin/env bash
# The versus benchmark in one command: installs the peers (setup.sh, pinned,
# into the dependency cache), builds ringmend (Release, with its torch
# backend), runs every system (versus.py) and writes versus.json, versus.md
# and versus.png.
#
#   bench/versus/run.sh [--out DIR] [--build DIR] [--no-build] [--publish] [versus.py options]
#
#   --out DIR    results (default bench/results/versus-<UTC date>_<time>)
#   --build DIR  ringmend's build folder (default build/release)
#   --no-build   use the build folder as it is
#   --publish    results into bench/results/published/versus/ (versus-two-nodes/
#                with --nodes 2), and the table into bench/README.md
#   --nodes 2    on two nodes of the local Slurm cluster (scripts/cluster.sh,
#                started here when it is not running, and then stopped again)
# versus.py options: --systems, --jobs (5), --steps (300), --kill-step (100),
# --victim (2), --timeout (240); `versus.py --help` says more.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
out="$top/bench/results/versus-$(date -u +%Y%m%d_%H%M%S)" build="$top/build/release" build_it=1 publish=0
nodes=1 passed=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --no-build) build_it=0; shift ;;
    --publish) publish=1; shift ;;
    --nodes) nodes=$2; passed+=(--nodes "$2"); shift 2 ;;
    -h|--help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) passed+=("$1"); shift ;;
  esac
done
python=$("$here/setup.sh" | sed -n 's/^VERSUS_PYTHON=//p' | tail -n 1)
[ -x "$python" ] || { echo "versus/run.sh: setup.sh made no environment" >&2; exit 1; }
if [ "$build_it" = 1 ]; then
  "$top/scripts/build.sh" "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
[ -x "$build/python/ringmend-python" ] ||
  { echo "versus/run.sh: $build has no ringmend-python (was it built with the torch environment?)" >&2; exit 1; }
if [ "$publish" = 1 ]; then
  out="$top/bench/results/published/versus"
  [ "$nodes" = 2 ] && out+=-two-nodes
  passed+=(--readme "$top/bench/README.md")
fi
MPIEXEC=$(sed -n 's/^MPIEXEC_EXECUTABLE:FILEPATH=//p' "$build/CMakeCache.txt")
export MPIEXEC
if [ "$nodes" = 2 ] && ! "$top/scripts/cluster.sh" status >/dev/null 2>&1; then
  "$top/scripts/cluster.sh" start >&2
  trap '"$top/scripts/cluster.sh" stop >&2' EXIT
fi
"$python" "$here/versus.py" --build "$build" --out "$out" "${passed[@]}"
