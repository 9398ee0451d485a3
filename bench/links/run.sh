#!/usr/bin/env bash
# Allreduce across nodes on links that behave like a network: the local Slurm
# cluster (scripts/cluster.sh, every node in its own network namespace) with
# one or two NICs per node, each link shaped by tc to a rate (and a delay),
# so that the wire, not this machine's CPUs, is the limit. Side by side in
# one run, on the same links:
#   ringmend           ringmend_allreduce (ULFM on), rail i on NIC i (RINGMEND_RAIL_DEVICES)
#   openmpi_ft         MPI_Allreduce of the same job: Open MPI with ULFM's arguments
#   openmpi_default    MPI_Allreduce under mpirun as it comes (its TCP BTL stripes over every NIC)
#   bound              the link: one-way point-to-point bandwidth of each NIC
#                      (ringmend_p2p_bw, UCX on that NIC alone), summed over the
#                      node's NICs; a ring allreduce's bus bandwidth cannot exceed it
#   mpich              MPI_Allreduce of MPICH (Debian's, ch4:ucx), launched by its
#                      mpiexec whose proxies srun starts on the nodes; one rank
#                      per node only: with two, its ranks poll without ever
#                      yielding, and 4 of them on this machine's 2 CPUs take
#                      10-70 ms a call (time slices), which no node of a real
#                      cluster would show
#
#   bench/links/run.sh [--quick] [--rate R] [--delay D] [--nodes "2 3 4"] [--ppn "1 2"]
#                      [--nics "1 2"] [--max-size S] [--repeats N] [--build DIR] [--out DIR] [--publish]
#
# Results: bench/results/links-<UTC date>_<time>/ (runs.tsv, json/, logs/,
# machine.json, summary.json, table.md); --publish copies the summary and
# table to bench/results/published/links/ and the table into README.md here.
# Needs root (network namespaces, tc), Slurm (scripts/bootstrap.sh
# --with-cluster-tools) and python3.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
invocation="bench/links/run.sh $*"

usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
quick=0 publish=0 rate=2gbit delay="" nodes_list="2 3 4" ppn_list="1 2" nics_list="1 2" max_size="" repeats=""
build=$top/build/bench-release out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --publish) publish=1 ;;
    --rate) rate=$2; shift ;;
    --delay) delay=$2; shift ;;
    --nodes) nodes_list=$2; shift ;;
    --ppn) ppn_list=$2; shift ;;
    --nics) nics_list=$2; shift ;;
    --max-size) max_size=$2; shift ;;
    --repeats) repeats=$2; shift ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    -h | --help) usage ;;
    *) echo "links: unknown argument '$1'" >&2; usage 2 ;;
  esac
  shift
done
if [ "$quick" = 1 ]; then
  : "${repeats:=1}" "${max_size:=1M}"
  iters=(-i 5 -x 2)
else
  : "${repeats:=3}" "${max_size:=64M}"
  # Few calls per size: at 2 Gbit/s a 64 MiB allreduce takes about 0.5 s.
  iters=(-i 10 -x 3)
fi
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "links: --repeats wants a positive count" >&2; exit 2; }
for n in $nodes_list; do [[ "$n" =~ ^[2-9]$ ]] || { echo "links: --nodes wants counts of 2-9" >&2; exit 2; }; done
for n in $ppn_list; do [[ "$n" =~ ^[1-4]$ ]] || { echo "links: --ppn wants counts of 1-4" >&2; exit 2; }; done
for n in $nics_list; do [[ "$n" =~ ^[12]$ ]] || { echo "links: --nics wants 1 and/or 2" >&2; exit 2; }; done
[ "$(id -u)" -eq 0 ] || { echo "links: needs root (network namespaces and tc)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "links: python3 is needed for the report" >&2; exit 2; }
for c in salloc sinfo slurmctld slurmd; do
  command -v "$c" >/dev/null || { echo "links: Slurm is not installed ('$c'); scripts/bootstrap.sh --with-cluster-tools" >&2; exit 2; }
done

out=${out:-$top/bench/results/links-$(date -u +%Y-%m-%d_%H%M%S)}
mkdir -p "$out/json" "$out/logs"
out=$(cd "$out" && pwd)
: >"$out/runs.tsv"
START=$SECONDS
say() { printf '[%3d:%02d] %s\n' $(((SECONDS - START) / 60)) $(((SECONDS - START) % 60)) "$*"; }

# ------------------------------------------------------------ set-up
prefix=$("$top/scripts/bootstrap.sh" --print-prefix)
export MPIEXEC=${MPIEXEC:-$prefix/bin/mpirun}
[ -x "$MPIEXEC" ] || { echo "links: no ULFM mpirun at $MPIEXEC (scripts/bootstrap.sh)" >&2; exit 2; }
programs=(ringmend_allreduce ringmend_p2p_bw mpi_allreduce_openmpi)
targets=("${programs[@]}")
# MPICH's program is built where MPICH is installed (Debian's libmpich-dev).
if command -v mpiexec.mpich >/dev/null; then
  programs+=(mpi_allreduce_mpich)
  targets+=(ringmend_mpich_baseline)
fi
say "build: $build (Release; log: $out/logs/build.log)"
{
  if [ ! -f "$build/CMakeCache.txt" ]; then
    "$top/scripts/build.sh" "$build" -DCMAKE_BUILD_TYPE=Release -DRINGMEND_BUILD_TESTS=OFF
  else
    cmake --build "$build" --target "${targets[@]}"
  fi
} >"$out/logs/build.log" 2>&1 || { tail -n 30 "$out/logs/build.log" >&2; echo "links: the build failed" >&2; exit 1; }
BIN=$build/bench
for p in "${programs[@]}"; do [ -x "$BIN/$p" ] || { echo "links: $BIN/$p was not built" >&2; exit 1; }; done

python3 "$top/bench/bench_report.py" machine "$out/machine.json" --command "$invocation" \
  --mode "$([ "$quick" = 1 ] && echo quick || echo full)" --mpirun "$MPIEXEC"
printf '{"rate": "%s", "delay": "%s", "nodes": "%s", "ppn": "%s", "nics": "%s", "max_size": "%s", "repeats": %s}\n' \
  "$rate" "$delay" "$nodes_list" "$ppn_list" "$nics_list" "$max_size" "$repeats" >"$out/links.json"

export RINGMEND_CLUSTER_DIR=${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}
export SLURM_CONF=$RINGMEND_CLUSTER_DIR/slurm.conf
cluster=$top/scripts/cluster.sh
roc=$top/tests/cluster/run_on_cluster.sh
max_nodes=0
for n in $nodes_list; do [ "$n" -gt "$max_nodes" ] && max_nodes=$n; done
was_running=0
"$cluster" status >/dev/null 2>&1 && was_running=1
restore() {
  "$cluster" stop >>"$out/logs/cluster.log" 2>&1
  if [ "$was_running" = 1 ]; then "$cluster" start >>"$out/logs/cluster.log" 2>&1; fi
}
trap restore EXIT

# job CONFIG WHAT REP command...: one job, its line in runs.tsv (config,
# what, rep, exit status, wall seconds, json, log).
failures=0
job() {
  local config=$1 what=$2 rep=$3 rc=0 t0
  shift 3
  local json=json/$config.$what.$rep.json log=logs/$config.$what.$rep.log
  t0=$SECONDS
  timeout -k 5 900 "$@" --json "$out/$json" >"$out/$log" 2>&1 || rc=$?
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$config" "$what" "$rep" "$rc" $((SECONDS - t0)) "$json" "$log" >>"$out/runs.tsv"
  if [ "$rc" -ne 0 ]; then
    failures=$((failures + 1))
    say "  $config $what #$rep: FAILED (exit $rc); $out/$log"
    tail -n 4 "$out/$log" | sed 's/^/      /'
  else
    say "  $config $what #$rep: ok ($((SECONDS - t0)) s)"
  fi
}

# ------------------------------------------------------------ the runs
for nics in $nics_list; do
  say "cluster: $max_nodes nodes, $nics NIC(s) each, every link $rate${delay:+, $delay delay}"
  "$cluster" stop >>"$out/logs/cluster.log" 2>&1
  RINGMEND_CLUSTER_NODES=$max_nodes RINGMEND_CLUSTER_RAILS=$nics "$cluster" start >>"$out/logs/cluster.log" 2>&1 ||
    { echo "links: the cluster did not start (logs/cluster.log)" >&2; exit 1; }
  "$cluster" shape all "$rate" $delay >>"$out/logs/cluster.log" 2>&1 ||
    { echo "links: tc could not shape the links (logs/cluster.log)" >&2; exit 1; }
  devices=eth1
  [ "$nics" = 2 ] && devices=eth1,eth2
  for rep in $(seq 1 "$repeats"); do
    # The bound: each NIC alone, one way, between n1 and n2.
    for dev in ${devices//,/ }; do
      job "nics$nics" "p2p_$dev" "$rep" "$roc" -t 880 -x UCX_NET_DEVICES="$dev" 1,1 \
        "$BIN/ringmend_p2p_bw" --impl ringmend -m 1M:4M -i 20 -x 5
    done
    for n in $nodes_list; do
      for ppn in $ppn_list; do
        layout=$(printf "$ppn%.0s," $(seq 1 "$n"))
        layout=${layout%,}
        config=nics$nics.nodes$n.ppn$ppn
        job "$config" ringmend "$rep" "$roc" -t 880 -x RINGMEND_RAIL_DEVICES="$devices" "$layout" \
          "$BIN/ringmend_allreduce" --impl both -m "4:$max_size" "${iters[@]}" --no-bound
        job "$config" openmpi_default "$rep" "$roc" -t 880 --plain-mpirun "$layout" \
          "$BIN/mpi_allreduce_openmpi" --impl openmpi_default -m "4:$max_size" "${iters[@]}"
        if [ "$ppn" = 1 ] && [ -x "$BIN/mpi_allreduce_mpich" ] && command -v mpiexec.mpich >/dev/null; then
          job "$config" mpich "$rep" "$roc" -t 880 --mpich -x UCX_NET_DEVICES="$devices" "$layout" \
            "$BIN/mpi_allreduce_mpich" --impl mpich -m "4:$max_size" "${iters[@]}"
        fi
      done
    done
  done
done
trap - EXIT
restore

say "report"
python3 "$here/report.py" "$out" || failures=$((failures + 1))
if [ "$publish" = 1 ]; then
  dst=$top/bench/results/published/links
  mkdir -p "$dst"
  cp "$out/summary.json" "$out/table.md" "$out/machine.json" "$out/links.json" "$dst/"
  python3 "$here/report.py" --readme "$dst" "$here/README.md"
  say "published to $dst"
fi
say "done: $out ($failures failed job(s))"
[ "$failures" -eq 0 ]
