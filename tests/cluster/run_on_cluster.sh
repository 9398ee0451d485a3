#!/usr/bin/env bash
# Runs an MPI program across the local Slurm cluster (scripts/cluster.sh) with
# ULFM fault tolerance on: `mpirun` with the arguments of
# ulfm/ft_mpirun_args.txt inside `salloc -N <nodes>`, with a given number of
# ranks on each node (ranks are numbered node by node).
#
#   run_on_cluster.sh [-t SECONDS] [-x VAR=VALUE]... [--expect-passed N] [--plain-mpirun | --mpich]
#                     LAYOUT program [args...]
#
#   LAYOUT            ranks per node, comma-separated: 2,2  3,3  3,1 (one entry per node)
#   -t SECONDS        limit for the whole job, allocation included (default 120)
#   -x VAR=VALUE      environment variable for every rank
#   --expect-passed N check the output with tests/mpi/expect_passed.sh: N ranks
#                     print "TEST PASSED", none "TEST FAILED", exit status 0
#   --plain-mpirun    mpirun as it comes, without the FT arguments (Open MPI's
#                     default configuration: the benchmarks' baseline)
#   --mpich           MPICH's mpiexec instead (Hydra, its proxies started by
#                     srun): a program built against MPICH, the other baseline
#
# Environment: SLURM_CONF (default $RINGMEND_CLUSTER_DIR/slurm.conf, that is
# /tmp/ringmend-cluster/slurm.conf), MPIEXEC (the ULFM mpirun; default mpirun
# on PATH). Exits 77 (skipped) when Slurm is not installed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SLURM_CONF=${SLURM_CONF:-${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}/slurm.conf}
# shellcheck source=tests/cluster/launch_on_nodes.sh
source "$here/launch_on_nodes.sh"

# Second stage, inside the allocation: place the ranks and start mpirun.
if [ "${1:-}" = "--inside" ]; then
  shift
  limit=$1 layout=$2
  shift 2
  envs=()
  while [ "${1:-}" = "-x" ]; do envs+=(-x "$2"); shift 2; done
  node_names=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -sd,)
  exec_on_nodes "run_on_cluster: job $SLURM_JOB_ID," "$limit" "$layout" "$node_names" "${envs[@]}" "$@"
fi

parse_launch_options run_on_cluster 2,22 "$@"
set -- "${command[@]}"

for c in salloc sinfo scontrol; do
  if ! command -v "$c" >/dev/null 2>&1; then
    echo "run_on_cluster: SKIPPED: Slurm is not installed ('$c' not found); run scripts/bootstrap.sh --with-cluster-tools"
    exit 77
  fi
done
IFS=, read -r -a counts <<<"$layout"
nnodes=${#counts[@]}
if ! have=$(timeout -k 2 10 sinfo -h -N -o '%N' 2>/dev/null | sort -u | wc -l); then
  echo "run_on_cluster: no Slurm cluster answers (SLURM_CONF=$SLURM_CONF); start it with scripts/cluster.sh start" >&2
  exit 1
fi
if [ "$have" -lt "$nnodes" ]; then
  echo "run_on_cluster: the cluster (SLURM_CONF=$SLURM_CONF) has $have nodes, the layout needs $nnodes" >&2
  exit 1
fi

check_passed_if_asked "$0"

max=0
for c in "${counts[@]}"; do [ "$c" -gt "$max" ] && max=$c; done
# --overcommit: more ranks than the node's CPUs must not pend; --immediate:
# give up if the nodes are busy; the outer timeout is the backstop for all.
exec timeout -k 5 "$limit" salloc -N "$nnodes" --ntasks-per-node="$max" --overcommit --immediate=30 \
  --time=$(((limit + 59) / 60 + 1)) -J ringmend-cluster-test --quiet \
  "$0" --inside "$((limit > 20 ? limit - 10 : limit))" "$layout" "${envs[@]}" "$@"
