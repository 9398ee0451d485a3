# shellcheck shell=bash
# Sourced by run_on_cluster.sh and run_on_emulated_nodes.sh, which take the
# same arguments and start one MPI job (scripts/ft-mpirun) with a given
# number of ranks on each of several nodes sharing this machine.
#
#   parse_launch_options NAME HELP_LINES ARGS...
#       reads [-t SECONDS] [-x VAR=VALUE]... [--expect-passed N] [--plain-mpirun | --mpich]
#       LAYOUT program [args...] into limit, envs (-x pairs for mpirun),
#       expect, layout and command; --plain-mpirun exports
#       RINGMEND_LAUNCH_PLAIN_MPIRUN=1, --mpich RINGMEND_LAUNCH_MPICH=1
#       (see exec_on_nodes);
#       NAME prefixes its errors, HELP_LINES are the lines of the calling
#       script that --help prints (2,13)
#   check_passed_if_asked SCRIPT
#       with --expect-passed N: runs SCRIPT again without it under
#       tests/mpi/expect_passed.sh (N ranks print TEST PASSED) and ends
#   exec_on_nodes SAY LIMIT LAYOUT NODES [mpirun arguments...] program [args...]
#       replaces the shell with the job: scripts/ft-mpirun (fault tolerance
#       on), or with RINGMEND_LAUNCH_PLAIN_MPIRUN=1 $MPIEXEC as it comes, in
#       Open MPI's default configuration (the benchmarks' baseline), or with
#       RINGMEND_LAUNCH_MPICH=1 MPICH's mpiexec (Hydra), which starts its
#       proxies on the nodes with srun (inside an allocation only)
#
#   SAY      what to print before the placement ("run_on_cluster: job 12,")
#   LIMIT    seconds the job may take
#   LAYOUT   ranks per node, comma-separated (2,3)
#   NODES    the nodes' names, comma-separated, at least one per layout entry

parse_launch_options() {
  local name=$1 help=$2
  shift 2
  limit=120 expect="" envs=()
  while [ $# -gt 0 ]; do
    case "$1" in
      -t) limit=$2; shift 2 ;;
      -x) envs+=(-x "$2"); shift 2 ;;
      --expect-passed) expect=$2; shift 2 ;;
      --plain-mpirun) export RINGMEND_LAUNCH_PLAIN_MPIRUN=1; shift ;;
      --mpich) export RINGMEND_LAUNCH_MPICH=1; shift ;;
      -h | --help) sed -n "${help}p" "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
      -*) echo "$name: unknown option '$1' (--help)" >&2; exit 2 ;;
      *) break ;;
    esac
  done
  [ $# -ge 2 ] || { sed -n "${help}p" "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
  layout=$1
  [[ "$layout" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "$name: bad layout '$layout' (e.g. 3,1)" >&2; exit 2; }
  shift
  command=("$@")
}

check_passed_if_asked() {
  [ -n "$expect" ] || return 0
  local script=$1 e opts=(-t "$limit")
  for e in "${envs[@]}"; do [ "$e" = -x ] || opts+=(-x "$e"); done
  exec "$(dirname "${BASH_SOURCE[0]}")/../mpi/expect_passed.sh" "$expect" "$script" "${opts[@]}" "$layout" "${command[@]}"
}

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
  if [ "${RINGMEND_LAUNCH_MPICH:-0}" = 1 ]; then
    # Hydra takes -genv for -x; each node's proxy is started by srun in the
    # allocation (its Slurm launcher). Every namespace node answers to this
    # machine's hostname, which inside a node is its own loopback: the
    # proxies reach mpiexec at the host's address on the nodes' bridge
    # (scripts/cluster.sh's rmbr0). UCX's shared memory would join ranks of
    # different nodes (one machine underneath): ^sm, as ringmend's own
    # endpoints, so that across nodes MPICH sends over the nodes' links
    # (within a node it has its own shared memory).
    local -a genv=() iface=()
    local ucx_tls=0
    while [ "${1:-}" = -x ]; do
      genv+=(-genv "${2%%=*}" "${2#*=}")
      [ "${2%%=*}" = UCX_TLS ] && ucx_tls=1
      shift 2
    done
    [ "$ucx_tls" = 1 ] || genv+=(-genv UCX_TLS '^sm')
    if [ -n "${RINGMEND_MPICH_IFACE:-}" ]; then
      iface=(-iface "$RINGMEND_MPICH_IFACE")
    elif ip link show rmbr0 >/dev/null 2>&1; then
      iface=(-iface rmbr0)
    fi
    exec timeout -k 5 "$limit" mpiexec.mpich -launcher slurm "${iface[@]}" -hosts "$hosts" -n "$np" "${genv[@]}" "$@"
  fi
  if [ "${RINGMEND_LAUNCH_PLAIN_MPIRUN:-0}" = 1 ]; then
    local -a root=()
    [ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
    exec timeout -k 5 "$limit" "${MPIEXEC:-mpirun}" "${root[@]}" --oversubscribe --map-by slot --host "$hosts" \
      -np "$np" "$@"
  fi
  exec timeout -k 5 "$limit" "$top/scripts/ft-mpirun" --oversubscribe --map-by slot --host "$hosts" -np "$np" "$@"
}
