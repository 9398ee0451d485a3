#!/usr/bin/env bash
# Runs an MPI program with ULFM fault tolerance on (scripts/ft-mpirun), its
# ranks placed on nodes emulated on this one machine, without Slurm:
#
#   run_on_emulated_nodes.sh [-t SECONDS] [-x VAR=VALUE]... [--expect-passed N] LAYOUT program [args...]
#
#   LAYOUT        ranks per node, comma-separated, as for run_on_cluster.sh:
#                 2,3 puts ranks 0-1 on node 1 and ranks 2-4 on node 2
#   -t SECONDS    limit for the whole job (default 120)
#   -x VAR=VALUE  environment variable for every rank
#   --expect-passed N  check the output with tests/mpi/expect_passed.sh, as
#                 run_on_cluster.sh does
#
# mpirun starts one PRRTE daemon per node through its ssh agent, which is
# this script (--agent): it runs the daemon here, in a UTS namespace whose
# host name is the node's name. A daemon reports that name, so PMIx tells
# each rank which ranks share its node and ringmend plans as on separate
# machines: shared memory inside a node, UCX between the nodes (TCP over
# the loopback), leaders, rails and a ring per node. The nodes share the
# machine's cores and memory, as the two nodes of the local Slurm cluster
# do (scripts/cluster.sh), but nothing needs to be installed or started
# and a job starts in about a second instead of an allocation's two.
#
# Needs unshare(1) and the right to make a UTS namespace (root, or
# CAP_SYS_ADMIN); exits 77 (skipped) when the machine does not allow it.
# Environment: MPIEXEC (the ULFM mpirun), RINGMEND_RUN (see scripts/ft-mpirun).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ "${1:-}" = "--agent" ]; then
  # Called by PRRTE as an ssh: [options] HOST COMMAND...
  shift
  while [[ "${1:-}" == -* ]]; do shift; done
  node=$1
  shift
  exec unshare --uts /bin/sh -c "hostname '$node' && exec /bin/sh -c \"\$0\"" "$*"
fi

# shellcheck source=tests/cluster/launch_on_nodes.sh
source "$here/launch_on_nodes.sh"
parse_launch_options run_on_emulated_nodes 2,13 "$@"

if ! command -v unshare >/dev/null 2>&1 || ! unshare --uts true 2>/dev/null; then
  echo "run_on_emulated_nodes: SKIPPED: this machine does not let unshare(1) make a UTS namespace (needs root or CAP_SYS_ADMIN)"
  exit 77
fi

check_passed_if_asked "$0"

# Node names that no real host is likely to have: PRRTE must not take one
# for this machine (it would start no daemon for it).
IFS=, read -r -a counts <<<"$layout"
node_names=""
for i in "${!counts[@]}"; do node_names+="${node_names:+,}rmnode$((i + 1))"; done
export PRTE_MCA_plm_ssh_agent="$here/run_on_emulated_nodes.sh --agent"
exec_on_nodes "run_on_emulated_nodes:" "$limit" "$layout" "$node_names" "${envs[@]}" "${command[@]}"
