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
#   --publish    results into bench/results/published/versus/, and the table
#                into bench/README.md
# versus.py options: --systems, --jobs (5), --steps (300), --kill-step (100),
# --victim (2), --timeout (240); `versus.py --help` says more.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
out="$top/bench/results/versus-$(date -u +%Y%m%d_%H%M%S)" build="$top/build/release" build_it=1 publish=()
passed=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --no-build) build_it=0; shift ;;
    --publish) out="$top/bench/results/published/versus" publish=(--readme "$top/bench/README.md"); shift ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
MPIEXEC=$(sed -n 's/^MPIEXEC_EXECUTABLE:FILEPATH=//p' "$build/CMakeCache.txt")
export MPIEXEC
exec "$python" "$here/versus.py" --build "$build" --out "$out" "${publish[@]}" "${passed[@]}"
