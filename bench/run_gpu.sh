#!/usr/bin/env bash
# The GPU checks in one go, on a machine with a GPU: the gpu tests, what a
# copy to and from the GPU costs (ringmend_gpu_copy_cost), then
# ringmend_allreduce_gpu in every placement this machine allows, each beside
# NCCL's own allreduce and MPI_Allreduce on host-staged buffers in the same
# job (docs/gpu.md, "Measured", was written from these).
#
#   bench/run_gpu.sh [--build DIR] [--max-size SIZE] [--no-tests]
#
# Placements, 2 ranks each: sharing one GPU through shared memory; the flat
# UCX ring (RINGMEND_SHM=0, as with one GPU per node); each rank an NCCL host
# of its own (NCCL path inside the node; on one GPU the two processes take
# turns, so this one tells correctness, not speed); with two GPUs or more,
# one GPU per rank (NCCL path at its speed). Exit status 77 without a GPU.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$top/build/dev max_size=64M tests=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --max-size) max_size=$2; shift 2 ;;
    --no-tests) tests=0; shift ;;
    *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2 ;;
  esac
done
probe=$build/tests/gpu/gpu_allreduce bench=$build/bench/ringmend_allreduce_gpu
[ -x "$probe" ] && [ -x "$bench" ] || { echo "run_gpu: no GPU build in $build (RINGMEND_CUDA found no CUDA?)" >&2; exit 2; }
why=$("$probe" --probe 2>&1) || { echo "run_gpu: $why"; exit 77; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
echo "# $(nvidia-smi -L 2>/dev/null | head -1); $gpus GPU(s); $(nproc) CPUs; $(git -C "$top" rev-parse --short HEAD 2>/dev/null)"
fail=0
if [ "$tests" = 1 ]; then
  ctest --test-dir "$build" -L gpu --output-on-failure -j 2 || fail=1
fi
echo "### copies between the GPU and pinned memory, one process"
timeout 120 "$build/bench/ringmend_gpu_copy_cost" -m "8:$max_size" -i 50 || fail=1
ft=("$top/scripts/ft-mpirun" --oversubscribe -np 2)
one=(-x CUDA_VISIBLE_DEVICES=0)  # the first three placements share GPU 0 wherever there are more
sweep=(-m "8:$max_size" --step-factor 4 -i 10 -x 3 -r 3)
echo "### 2 ranks sharing a GPU, through shared memory"
timeout 300 "${ft[@]}" "${one[@]}" "$bench" "${sweep[@]}" || fail=1
echo "### 2 ranks, RINGMEND_SHM=0 (the flat UCX ring, as with one GPU per node)"
timeout 300 "${ft[@]}" "${one[@]}" -x RINGMEND_SHM=0 "$bench" "${sweep[@]}" || fail=1
echo "### 2 ranks as NCCL hosts of their own (NCCL path; on one GPU: correctness, not speed)"
timeout 300 "${ft[@]}" "${one[@]}" -x NCCL_SOCKET_IFNAME=lo "$top/tests/gpu/nccl_host_per_rank.sh" "$bench" -m 8:1M --step-factor 8 -i 5 -x 2 -r 3 || fail=1
if [ "${gpus:-0}" -ge 2 ]; then
  echo "### 2 ranks, one GPU each (NCCL path inside the node)"
  timeout 300 "${ft[@]}" "$bench" "${sweep[@]}" || fail=1
fi
exit $fail
