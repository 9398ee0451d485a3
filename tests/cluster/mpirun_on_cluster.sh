#!/usr/bin/env bash
# An mpirun for scripts written for one node (tests/mpi/kill_random.sh),
# that places the ranks on the nodes of the local Slurm cluster instead:
#
#   CLUSTER_LAYOUT=3,3 mpirun_on_cluster.sh [--oversubscribe] -np N [-x VAR]... PROGRAM ARGS...
#
# CLUSTER_LAYOUT gives the ranks per node (they must add up to N);
# CLUSTER_LIMIT the job's time limit in seconds (default 120). The
# processes' pids stay visible to the caller only because the local
# cluster's nodes share one machine.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
layout=${CLUSTER_LAYOUT:?CLUSTER_LAYOUT=A,B: the ranks on each node}
np="" envs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --oversubscribe) shift ;;
    -np) np=$2; shift 2 ;;
    -x) envs+=(-x "$2"); shift 2 ;;
    -*) echo "mpirun_on_cluster: unsupported option '$1'" >&2; exit 2 ;;
    *) break ;;
  esac
done
total=0
IFS=, read -r -a counts <<<"$layout"
for c in "${counts[@]}"; do total=$((total + c)); done
if [ "$total" != "$np" ]; then
  echo "mpirun_on_cluster: CLUSTER_LAYOUT=$layout places $total ranks, -np asks for $np" >&2
  exit 2
fi
exec "$here/run_on_cluster.sh" -t "${CLUSTER_LIMIT:-120}" "${envs[@]}" "$layout" "$@"
