#!/usr/bin/env bash
# Runs a GPU test only where a GPU is usable: `PROBE --probe` exits 77 (the
# test is skipped, with the reason) on a machine without one, else the
# command runs.
#
#   run_gpu_test.sh PROBE command [args...]
set -u
probe=$1
shift
why=$("$probe" --probe 2>&1)
rc=$?
if [ "$rc" -eq 77 ]; then
  echo "SKIPPED: $why"
  exit 77
fi
if [ "$rc" -ne 0 ]; then
  echo "run_gpu_test: the GPU probe failed (status $rc): $why" >&2
  exit 1
fi
exec "$@"
