#!/usr/bin/env bash
# Configures and builds ringmend against the ULFM Open MPI from bootstrap.sh.
#   scripts/build.sh BUILD_DIR [extra cmake arguments...]
# Prints the build directory on success.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:?usage: build.sh BUILD_DIR [cmake args...]}
shift
found=$("$top/scripts/bootstrap.sh")
mpi_home=$(sed -n 's/^RINGMEND_MPI_HOME=//p' <<<"$found" | tail -n 1)
[ -x "$mpi_home/bin/mpirun" ] || { echo "build: no mpirun under '$mpi_home'" >&2; exit 1; }
# The Python environment bootstrap.sh --with-python made (torch from PyPI),
# unless the caller names an interpreter.
python=$(sed -n 's/^RINGMEND_PYTHON=//p' <<<"$found" | tail -n 1)
if [ -n "$python" ] && [[ " $* " != *" -DPython3_EXECUTABLE="* ]]; then
  set -- "$@" "-DPython3_EXECUTABLE=$python"
fi
mkdir -p "$build"
echo "[build] configure $build"
cmake -S "$top" -B "$build" -G Ninja -DMPI_HOME="$mpi_home" \
  -DMPIEXEC_EXECUTABLE="$mpi_home/bin/mpirun" "$@" >"$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
grep "ringmend:" "$build/configure.log" || true
echo "[build] compile"
cmake --build "$build" -j "$(nproc)"
