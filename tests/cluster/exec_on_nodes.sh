# shellcheck shell=bash
# Sourced by run_on_cluster.sh and run_on_emulated_nodes.sh: replaces the
# shell with one MPI job (scripts/ft-mpirun) that has a given number of
# ranks on each of several nodes sharing this machine.
#
#   exec_on_nodes SAY LIMIT LAYOUT NODES [mpirun arguments...] program [args...]
#
#   SAY      what to print before the placement ("run_on_cluster: job 12,")
#   LIMIT    seconds the job may take
#   LAYOUT   ranks per node, comma-separated (2,3)
#   NODES    the nodes' names, comma-separated, at least one per layout entry

exec_on_nodes() {
  local say=$1 limit=$2 layout=$3 names=$4
  shift 4
  local -a counts nodes
  IFS=, read -r -a counts <<<"$layout"
  IFS=, read -r -a nodes <<<"$names"
  local hosts="" np=0 i
  for i in "${!counts[@]}"; do
    hosts+="${hosts:+,}${nodes[$i]}:${counts[$i]}"
    np=$((np + counts[i]))
  done
  # The nodes share this machine's CPUs, which Open MPI cannot know (a
  # node's slots come from the layout): with more ranks than CPUs in all,
  # its progress loops must yield, or every agreement, shrink and allgather
  # of a recovery waits for the time slices of ranks that spin.
  if [ "$np" -gt "$(nproc)" ] && [ -z "${OMPI_MCA_mpi_yield_when_idle:-}" ]; then
    export OMPI_MCA_mpi_yield_when_idle=1
  fi
  echo "$say $np ranks, --host $hosts"
  # --map-by slot with per-host slot counts puts exactly counts[i] ranks on
  # node i; the default mapping (by core, with --oversubscribe) would put
  # every rank on the first node.
  local top
  top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  exec timeout -k 5 "$limit" "$top/scripts/ft-mpirun" --oversubscribe --map-by slot --host "$hosts" -np "$np" "$@"
}
