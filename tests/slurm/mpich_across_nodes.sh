#!/usr/bin/env bash
# The MPICH baseline across namespace nodes (run_on_cluster.sh --mpich, as
# bench/links/run.sh and bench/run_standard.sh run it): its results are
# exact (the benchmark's own check, -c), and its bytes go over n1's link
# (eth1's counter), not through UCX's shared memory between two nodes of
# one machine, which would make the baseline a one-node figure.
#   mpich_across_nodes.sh MPI_ALLREDUCE_MPICH SOURCE_DIR
set -u
bench=$1 root=$2
. "$(dirname "$0")/cluster_lib.sh"
need_cluster
need_namespace_nodes
command -v mpiexec.mpich >/dev/null || skip "MPICH is not installed (mpiexec.mpich; Debian's mpich)"
cluster=$root/scripts/cluster.sh
tx() { "$cluster" exec n1 cat /sys/class/net/eth1/statistics/tx_bytes; }
calls=60 bytes=$((1 << 20))
before=$(tx)
timeout -k 5 150 "$root/tests/cluster/run_on_cluster.sh" -t 140 --mpich -x UCX_NET_DEVICES=eth1 1,1 \
  "$bench" --impl mpich -m 1M:1M -i $((calls - 10)) -x 10 -c >"$work/mpich.log" 2>&1
rc=$?
after=$(tx)
row=$(awk '$1 == 1048576' "$work/mpich.log")
if [ "$rc" -ne 0 ] || [ -z "$row" ]; then
  fail "the MPICH job failed (exit $rc): $(tail -5 "$work/mpich.log")"
  finish
fi
wrong=$(awk '{print $NF}' <<<"$row")
[ "$wrong" = 0 ] && pass "MPICH's 1 MiB allreduce across n1 and n2 exact ($row)" ||
  fail "MPICH's results: $wrong elements wrong ($row)"
# A 2-rank allreduce sends about the call's size each way per call.
sent=$((after - before)) need=$((calls * bytes * 9 / 10))
[ "$sent" -ge "$need" ] && pass "n1's eth1 sent $sent bytes in the job (>= $need: the calls went over the link)" ||
  fail "n1's eth1 sent $sent bytes, < $need: MPICH's ranks did not talk over the nodes' link"
finish
