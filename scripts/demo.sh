#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs the main job:
# 4 ranks train a logistic regression, with one spare process waiting;
# member 2 is SIGKILLed midway; the survivors recover, the spare takes its
# place with the model, and the job finishes at its size. Prints the
# membership change, the recovery time and the final loss against a serial
# reference. With 0 spares the survivors finish on their own.
#
#   scripts/demo.sh [ranks] [rank to kill] [step to kill it in] [spares]
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ranks=${1:-4} victim=${2:-2} step=${3:-30} spares=${4:-1}
build=${RINGMEND_BUILD_DIR:-$top/build/release}
mkdir -p "$(dirname "$build")"
"$top/scripts/build.sh" "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
mpi_home=$(sed -n 's/^MPIEXEC_EXECUTABLE:FILEPATH=//p' "$build/CMakeCache.txt")
record=$(mktemp)
echo
echo "=== $ranks ranks and $spares spare(s); member $victim will SIGKILL itself during the allreduce of step $step ==="
# Collective #(step+1) is the allreduce of that step (one allreduce per step);
# the victim dies as it enters it, before its peers have its contribution.
out=$(mktemp)
trap 'rm -f "$record" "$out"' EXIT
# ringmend-run: mpirun with the FT arguments, RINGMEND_* forwarded, and at
# the end a summary of the job with an exit status that tells what happened.
set +e
RINGMEND_FAULT="rank=$victim,call=$((step + 1)),phase=start" RINGMEND_FAULT_RECORD="$record" \
  MPIEXEC=$mpi_home timeout -k 5 300 "$build/slurm/ringmend-run" -q --oversubscribe -n "$ranks" --spares "$spares" \
  "$build/examples/train_logreg" --steps=60 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
set -e
grep -q "membership change" "$out" ||
  { echo "=== demo: no rank was lost (is step $step within the 60 steps?) ===" >&2; exit 1; }
echo "=== job finished with exit status $status ==="
exit "$status"
