#!/usr/bin/env bash
# CTest fixture for the cluster tests: `setup` starts the local Slurm
# cluster (scripts/cluster.sh start), `cleanup` stops it again, but only if
# setup started it (a cluster that was already up is left running).
# Exits 77 (skipped) when Slurm is not installed.
#
#   cluster_fixture.sh setup|cleanup
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}
marker=$dir/.started-by-ctest
case "${1:-}" in
  setup)
    for c in slurmctld slurmd salloc sinfo; do
      if ! command -v "$c" >/dev/null 2>&1; then
        echo "cluster_fixture: SKIPPED: Slurm is not installed ('$c' not found); run scripts/bootstrap.sh --with-cluster-tools"
        exit 77
      fi
    done
    if "$top/scripts/cluster.sh" status >/dev/null 2>&1; then
      echo "cluster_fixture: the cluster is already running; it will be left running"
      "$top/scripts/cluster.sh" start
    else
      "$top/scripts/cluster.sh" start
      touch "$marker"
    fi
    ;;
  cleanup)
    if [ -f "$marker" ]; then
      rm -f "$marker"
      "$top/scripts/cluster.sh" stop
    elif command -v slurmctld >/dev/null 2>&1; then
      echo "cluster_fixture: the cluster was running before the tests; left running"
    else
      echo "cluster_fixture: SKIPPED: Slurm is not installed"
      exit 77
    fi
    ;;
  *) echo "usage: cluster_fixture.sh setup|cleanup" >&2; exit 2 ;;
esac
