#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then builds a program
# outside the tree twice — with find_package(ringmend CONFIG) and with
# pkg-config — and runs both under the installed ringmend-run (with
# --mpirun-args, as scripts/ft-mpirun does). When the Python package was
# built, imports it from the prefix (as the modulefiles' PYTHONPATH does) and
# runs an allreduce from Python, and the torch backend's registration.
#   check_install.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
mkdir -p "$work/app"
cp "$here/consumer.cpp" "$work/app/"
cp "$here/CMakeLists.txt.in" "$work/app/CMakeLists.txt"
cmake -S "$work/app" -B "$work/app/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/app/build" >/dev/null
echo "built with find_package(ringmend CONFIG)"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib64/pkgconfig"
# shellcheck disable=SC2046
c++ -std=c++20 "$work/app/consumer.cpp" -o "$work/app/consumer_pc" $(pkg-config --cflags --libs ringmend)
echo "built with pkg-config ringmend $(pkg-config --modversion ringmend)"
status=0
for exe in "$work/app/build/consumer" "$work/app/consumer_pc"; do
  out=$(timeout -k 5 60 "$work/prefix/bin/ringmend-run" -q --mpirun-args --oversubscribe -np 2 "$exe" 2>&1) || status=1
  echo "$out"
  [ "$(grep -o 'TEST PASSED' <<<"$out" | wc -l)" -eq 2 ] || status=1  # two ranks' lines may share one
done
site=$(find "$work/prefix" -type d -path "*/site-packages/ringmend" -print -quit)
if [ -n "$site" ]; then
  python=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")
  cat >"$work/app/use.py" <<'PY'
import numpy as np
import ringmend
with ringmend.Runtime() as rt:
    x = np.ones(1000, dtype=np.float32)
    rt.world.allreduce(x)
    ok = np.all(x == rt.world.size)
    # One string, one write: the ranks' lines reach the launcher interleaved
    # at write boundaries.
    print(f"TEST {'PASSED' if ok else 'FAILED'} python, from {ringmend.__file__}", flush=True)
PY
  out=$(PYTHONPATH=$(dirname "$site") timeout -k 5 60 "$work/prefix/bin/ringmend-run" -q \
    --mpirun-args --oversubscribe -np 2 -x PYTHONPATH "$python" "$work/app/use.py" 2>&1) || status=1
  echo "$out"
  [ "$(grep -o 'PASSED python' <<<"$out" | wc -l)" -eq 2 ] && grep -q "$work/prefix" <<<"$out" || status=1
  if [ -d "$site/torch" ]; then
    PYTHONPATH=$(dirname "$site") "$python" -c \
      "import torch.distributed as d, ringmend.torch; assert hasattr(d.Backend, 'RINGMEND'); print('torch backend registered')" ||
      status=1
  fi
fi
exit $status
