#!/usr/bin/env bash
# The standard benchmark set, with its report: the JSON of every run,
# summary.json, table.md (markdown) and PNG plots (gnuplot).
#
#   bench/run_standard.sh [--quick] [--out DIR] [--build DIR] [--no-build] [--repeats N]
#                         [--rounds N] [--ranks "4 5 6 7 8"] [--max-size SIZE]
#                         [--skip one-node|cluster|recovery]... [--publish]
#   bench/run_standard.sh --report-only DIR [--publish]
#
# The set (bench/README.md describes every program and column):
#   one node, 2 ranks      ringmend_allreduce (ringmend and MPI_Allreduce in Open MPI's
#                          fault-tolerant configuration, with the memory bound),
#                          mpi_allreduce in Open MPI's default configuration and
#                          with MPICH (the baselines), ringmend_gloo_allreduce, and
#                          ringmend_p2p_bw and ringmend_p2p_latency over the
#                          shared-memory channel (--transport shm) and MPI
#   one node, 4 ranks      ringmend_allreduce (ringmend and MPI_Allreduce) and the
#                          two baselines, with
#                          --oversubscribe where the node has fewer than 4 cores
#   two nodes              the same allreduce programs on the local two-node
#                          Slurm cluster (scripts/cluster.sh), 1 and 2 ranks per
#                          node, with Open MPI's default configuration (plain
#                          mpirun across the nodes) and, one rank per node,
#                          MPICH (its mpiexec through srun), and ringmend_p2p_bw and
#                          ringmend_p2p_bibw (UCX and MPI) with 1 rank per node
#   recovery, one node     for N = 4..8 ranks, ROUNDS jobs each of
#                          ringmend_recovery --mode ringmend, --mode ulfm, and a
#                          restart (mpirun -np N-1 ringmend_recovery --init-only, wall time)
#
# Throughput runs are repeated (--repeats, default 3) and the report gives the
# median; the first run of each allreduce program validates its results (-c).
# The cluster is started and stopped here (one that is already running is
# used and left running); without Slurm that part is skipped with a message.
#
#   --quick         a smoke run (1 repeat, small sizes, few iterations, recovery
#                   with 4 ranks and 2 rounds); the table says it is not for publication
#   --out DIR       results directory (default bench/results/<UTC date>_<time>)
#   --build DIR     build directory with the programs (default build/bench); the
#                   programs are rebuilt first (a new directory is configured and
#                   built with scripts/build.sh) unless --no-build
#   --repeats N     runs of each throughput measurement (default 3, quick 1)
#   --rounds N      recovery jobs per rank count and mode (default 5, quick 2)
#   --ranks LIST    rank counts of the recovery part (default "4 5 6 7 8", quick "4")
#   --max-size S    largest allreduce size (default 16M, quick 1M on one node, 256K across nodes)
#   --skip PART     leave out one-node, cluster or recovery (repeatable)
#   --publish       copy table.md, summary.json, machine.json and the PNGs to
#                   bench/results/published/ (kept in git; everything else under
#                   bench/results/ is ignored) and rewrite the README's speed
#                   section from them (bench_report.py readme)
#   --report-only DIR  only (re)make the report of DIR
#
# Environment: MPIEXEC (the ULFM mpirun; default: the one scripts/ft-mpirun
# finds), RINGMEND_CLUSTER_DIR (see scripts/cluster.sh). Needs python3 for the
# report and gnuplot (Debian: gnuplot-nox) for the PNGs. Exit status: 0 when
# every run succeeded and every validation found no wrong element.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2; }
invocation="bench/run_standard.sh$(printf ' %q' "$@")"
[ $# -gt 0 ] || invocation="bench/run_standard.sh"

quick=0 out="" build="$top/build/bench" do_build=1 repeats="" rounds="" ranks="" max_size="" publish=0
report_only="" skip_one=0 skip_cluster=0 skip_recovery=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --repeats) repeats=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --max-size) max_size=$2; shift 2 ;;
    --skip)
      case "$2" in
        one-node) skip_one=1 ;;
        cluster) skip_cluster=1 ;;
        recovery) skip_recovery=1 ;;
        *) echo "run_standard: --skip takes one-node, cluster or recovery" >&2; exit 2 ;;
      esac
      shift 2 ;;
    --publish) publish=1; shift ;;
    --report-only) report_only=$2; shift 2 ;;
    -h | --help) usage ;;
    *) echo "run_standard: unknown argument '$1'" >&2; usage ;;
  esac
done
command -v python3 >/dev/null || { echo "run_standard: python3 is needed for the report" >&2; exit 2; }

publish_results() {
  local dst=$top/bench/results/published
  mkdir -p "$dst"
  rm -f "$dst"/*.png
  cp "$1"/table.md "$1"/summary.json "$1"/machine.json "$dst"/
  cp "$1"/*.png "$dst"/ 2>/dev/null || true
  echo "run_standard: published to $dst"
  # The README's speed section comes from the published data only.
  python3 "$here/bench_report.py" readme "$dst" "$top/README.md"
}

if [ -n "$report_only" ]; then
  rc=0
  python3 "$here/bench_report.py" report "$report_only" || rc=$?
  [ "$publish" = 1 ] && publish_results "$report_only"
  exit "$rc"
fi

is_count() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
if [ "$quick" = 1 ]; then
  : "${repeats:=1}" "${rounds:=2}" "${ranks:=4}"
  one_max=${max_size:-1M} cl_max=${max_size:-256K}
  one_iters=(-i 20 -x 5) cl_iters=(-i 10 -x 3) p2p_opts=(-m 1:256K -i 10 -x 2)
  shm_bw_opts=(-m 1:1M -i 10 -x 2) shm_lat_opts=(-m 1:1M -i 100 -x 10)
else
  : "${repeats:=3}" "${rounds:=5}" "${ranks:=4 5 6 7 8}"
  one_max=${max_size:-16M} cl_max=${max_size:-16M}
  # One node: OSU's iteration counts (ringmend_allreduce's defaults). Two nodes:
  # fewer (MPI takes ms per call there); first touches of large buffers are
  # slow on VMs, hence 20 warm-up calls.
  one_iters=() cl_iters=(-i 40 -x 20) p2p_opts=(-m 1:16M)
  # One-node point to point: OSU's iterations and window, up to 4 MiB.
  shm_bw_opts=(-m 1:4M) shm_lat_opts=(-m 1:4M)
fi
if ! is_count "$repeats" || ! is_count "$rounds"; then
  echo "run_standard: bad --repeats/--rounds" >&2
  exit 2
fi
for n in $ranks; do
  if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 2 ]; then
    echo "run_standard: bad rank count '$n' in --ranks" >&2
    exit 2
  fi
done
out=${out:-$top/bench/results/$(date -u +%Y-%m-%d_%H%M%S)}
mkdir -p "$out/json" "$out/logs"
out=$(cd "$out" && pwd)
: >"$out/runs.tsv"
: >"$out/skipped.txt"
START=$SECONDS
failures=0
say() { printf '[%3d:%02d] %s\n' $(((SECONDS - START) / 60)) $(((SECONDS - START) % 60)) "$*"; }

# ------------------------------------------------------------ set-up

# The ULFM mpirun (the bootstrap's cache unless MPIEXEC names one), exported
# so that scripts/ft-mpirun (through ringmend-run) uses the same one and the
# restart baseline can time mpirun itself.
if [ -z "${MPIEXEC:-}" ]; then
  m="$("$top/scripts/bootstrap.sh" --print-prefix)/bin/mpirun"
  if [ -x "$m" ]; then MPIEXEC=$m; fi
fi
export MPIEXEC=${MPIEXEC:-mpirun}
command -v "$MPIEXEC" >/dev/null || { echo "run_standard: no mpirun ('$MPIEXEC'); set MPIEXEC" >&2; exit 2; }
mapfile -t FT_ARGS < <(grep -v '^#' "$top/ulfm/ft_mpirun_args.txt" | grep -v '^[[:space:]]*$')
if [ "$(id -u)" -eq 0 ]; then FT_ARGS=(--allow-run-as-root "${FT_ARGS[@]}"); fi
FT="$top/scripts/ft-mpirun"
CORES=$(nproc)

# A configured build directory gets only the benchmark programs rebuilt; a
# new one is configured and built by scripts/build.sh.
build_programs() {
  if [ ! -f "$build/CMakeCache.txt" ]; then
    "$top/scripts/build.sh" "$build"
    return
  fi
  local targets=(ringmend_allreduce ringmend_p2p_bw ringmend_p2p_bibw ringmend_p2p_latency ringmend_recovery)
  local t
  for t in ringmend_gloo_allreduce mpi_allreduce_openmpi ringmend_mpich_baseline; do
    if cmake --build "$build" --target help 2>/dev/null | grep -q "^$t:"; then targets+=("$t"); fi
  done
  cmake --build "$build" --target "${targets[@]}"
}
if [ "$do_build" = 1 ]; then
  say "build: $build (log: $out/logs/build.log)"
  build_programs >"$out/logs/build.log" 2>&1 || {
    tail -n 30 "$out/logs/build.log" >&2
    echo "run_standard: the build failed" >&2
    exit 1
  }
fi
BIN=$build/bench
for p in ringmend_allreduce ringmend_p2p_bw ringmend_p2p_bibw ringmend_p2p_latency ringmend_recovery; do
  [ -x "$BIN/$p" ] || { echo "run_standard: $BIN/$p is missing (build with scripts/build.sh $build)" >&2; exit 1; }
done
have_gloo=1
[ -x "$BIN/ringmend_gloo_allreduce" ] || have_gloo=0

# The baselines a user who gives up fault tolerance would run instead:
# MPI_Allreduce alone (bench/mpi_allreduce.c), built with this build's Open
# MPI and run by its mpirun with no MCA setting (Open MPI's default
# configuration), and built with MPICH's mpicc and run by its own launcher
# (Debian's mpich). Each is left out, with the reason in the report, where
# it was not built.
baseline_skip() {
  say "  baseline $1: SKIPPED: $2"
  printf 'baseline_%s\t%s\n' "$1" "$2" >>"$out/skipped.txt"
}
have_ompi_default=0 have_mpich=0
if [ -x "$BIN/mpi_allreduce_openmpi" ]; then
  have_ompi_default=1
else
  baseline_skip openmpi_default "$BIN/mpi_allreduce_openmpi was not built (logs/build.log)"
fi
if [ -x "$BIN/mpi_allreduce_mpich" ] && command -v mpiexec.mpich >/dev/null; then
  have_mpich=1
else
  baseline_skip mpich "MPICH is not installed (Debian's libmpich-dev and mpich; scripts/bootstrap.sh installs them)"
fi
ROOT_ARGS=()
[ "$(id -u)" -eq 0 ] && ROOT_ARGS=(--allow-run-as-root)

# The smaller of two sizes written with K/M/G suffixes.
smaller_size() {
  local a b
  a=$(numfmt --from=iec "$1") b=$(numfmt --from=iec "$2")
  if [ "$a" -le "$b" ]; then echo "$1"; else echo "$2"; fi
}

# baselines CONFIG REP NP TIMEOUT [--oversubscribe] -- the size and iteration
# options: one run of each baseline built above.
baselines() {
  local config=$1 rep=$2 np=$3 limit=$4 over=()
  shift 4
  if [ "${1:-}" = --oversubscribe ]; then over=(--oversubscribe); shift; fi
  if [ "$have_ompi_default" = 1 ]; then
    run throughput "$config" openmpi_default "$rep" "$np" "json/$config.openmpi_default.$rep.json" "$limit" \
      "$MPIEXEC" "${ROOT_ARGS[@]}" "${over[@]}" -np "$np" "$BIN/mpi_allreduce_openmpi" --impl openmpi_default \
      "$@" "${vflag[@]}" --json "$out/json/$config.openmpi_default.$rep.json"
  fi
  if [ "$have_mpich" = 1 ]; then
    run throughput "$config" mpich "$rep" "$np" "json/$config.mpich.$rep.json" "$limit" \
      mpiexec.mpich -n "$np" "$BIN/mpi_allreduce_mpich" --impl mpich \
      "$@" "${vflag[@]}" --json "$out/json/$config.mpich.$rep.json"
  fi
}

python3 "$here/bench_report.py" machine "$out/machine.json" \
  --command "$invocation" \
  --mode "$([ "$quick" = 1 ] && echo quick || echo full)" --mpirun "$MPIEXEC"
say "results in $out ($([ "$quick" = 1 ] && echo quick || echo full) mode; $CORES cores; load $(cut -d' ' -f1-3 /proc/loadavg))"

# run PART CONFIG BENCH REP RANKS JSON TIMEOUT command...: one job; its line
# goes to runs.tsv (wall seconds of the whole command, exit status).
run() {
  local part=$1 config=$2 bench=$3 rep=$4 nranks=$5 json=$6 limit=$7
  shift 7
  local log="$out/logs/$config.$bench.$rep.log" rc=0 t0 t1 wall
  t0=$(date +%s%N)
  timeout -k 5 "$limit" "$@" >"$log" 2>&1 || rc=$?
  t1=$(date +%s%N)
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$part" "$config" "$bench" "$rep" "$nranks" "$rc" "$wall" \
    "${json#"$out"/}" "${log#"$out"/}" >>"$out/runs.tsv"
  if [ "$rc" -ne 0 ]; then
    failures=$((failures + 1))
    say "  $config $bench #$rep: FAILED (exit $rc$([ "$rc" -eq 124 ] && echo ", timed out")); log: $log"
    tail -n 5 "$log" | sed 's/^/      /'
  else
    say "  $config $bench #$rep: ok (${wall%???} s)"
  fi
}

# The first run of each allreduce program validates its results.
vflag=()
set_validation() { if [ "$1" -eq 1 ]; then vflag=(-c); else vflag=(); fi; }

# ------------------------------------------------------------ one node

one_node() {
  say "one node, 2 ranks: allreduce up to $one_max, point to point (shared memory), $repeats run(s)"
  local over=()
  [ "$CORES" -lt 2 ] && over=(--oversubscribe)
  local rep
  for rep in $(seq 1 "$repeats"); do
    set_validation "$rep"
    run throughput one_node allreduce "$rep" 2 "json/one_node.allreduce.$rep.json" 600 \
      "$FT" "${over[@]}" -np 2 "$BIN/ringmend_allreduce" -m "4:$one_max" "${one_iters[@]}" -f "${vflag[@]}" \
      --json "$out/json/one_node.allreduce.$rep.json"
    baselines one_node "$rep" 2 600 "${over[@]}" -m "4:$one_max" "${one_iters[@]}"
    if [ "$have_gloo" = 1 ]; then
      run throughput one_node gloo "$rep" 2 "json/one_node.gloo.$rep.json" 600 \
        "$FT" "${over[@]}" -np 2 "$BIN/ringmend_gloo_allreduce" -m "4:$one_max" "${one_iters[@]}" -f "${vflag[@]}" \
        --json "$out/json/one_node.gloo.$rep.json"
    fi
    run throughput one_node p2p_bw "$rep" 2 "json/one_node.p2p_bw.$rep.json" 600 \
      "$FT" "${over[@]}" -np 2 "$BIN/ringmend_p2p_bw" --transport shm --impl both "${shm_bw_opts[@]}" \
      --json "$out/json/one_node.p2p_bw.$rep.json"
    run throughput one_node p2p_latency "$rep" 2 "json/one_node.p2p_latency.$rep.json" 600 \
      "$FT" "${over[@]}" -np 2 "$BIN/ringmend_p2p_latency" --transport shm --impl both "${shm_lat_opts[@]}" \
      --json "$out/json/one_node.p2p_latency.$rep.json"
  done
  [ "$have_gloo" = 1 ] || say "  Gloo: ringmend_gloo_allreduce not built (libgloo-dev missing), left out"
  # Four ranks: on a 2-core machine the ranks outnumber the cores, where
  # waits must yield rather than spin (bench/README.md).
  say "one node, 4 ranks: allreduce up to $one_max, $repeats run(s)"
  over=()
  [ "$CORES" -lt 4 ] && over=(--oversubscribe)
  for rep in $(seq 1 "$repeats"); do
    set_validation "$rep"
    run throughput one_node_4 allreduce "$rep" 4 "json/one_node_4.allreduce.$rep.json" 900 \
      "$FT" "${over[@]}" -np 4 "$BIN/ringmend_allreduce" -m "4:$one_max" "${one_iters[@]}" -f "${vflag[@]}" \
      --json "$out/json/one_node_4.allreduce.$rep.json"
    # The baselines stop at 16 MiB here: MPICH busy-polls, and with more
    # ranks than cores one run up to 64 MiB takes over three minutes.
    baselines one_node_4 "$rep" 4 900 "${over[@]}" -m "4:$(smaller_size "$one_max" 16M)" "${one_iters[@]}"
  done
}

# ------------------------------------------------------------ two nodes

cluster_started=0
stop_cluster() {
  if [ "$cluster_started" = 1 ]; then
    cluster_started=0
    "$top/scripts/cluster.sh" stop >>"$out/logs/cluster.log" 2>&1 || true
    say "cluster stopped"
  fi
}
trap stop_cluster EXIT
trap 'exit 130' INT TERM

skip_cluster_part() {
  say "two nodes: SKIPPED: $1"
  printf 'cluster_1ppn\t%s\ncluster_2ppn\t%s\n' "$1" "$1" >>"$out/skipped.txt"
}

two_nodes() {
  local c missing=()
  for c in slurmctld slurmd salloc sinfo scontrol; do command -v "$c" >/dev/null 2>&1 || missing+=("$c"); done
  if [ ${#missing[@]} -gt 0 ]; then
    skip_cluster_part "Slurm is not installed (missing ${missing[*]}; scripts/bootstrap.sh --with-cluster-tools)"
    return 0
  fi
  export SLURM_CONF=${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}/slurm.conf
  if "$top/scripts/cluster.sh" status >/dev/null 2>&1; then
    say "two nodes: the local cluster is already running; it is used and left running"
  else
    say "two nodes: starting the local cluster"
    if ! "$top/scripts/cluster.sh" start >>"$out/logs/cluster.log" 2>&1; then
      "$top/scripts/cluster.sh" stop >>"$out/logs/cluster.log" 2>&1 || true
      skip_cluster_part "the local cluster did not start (see logs/cluster.log)"
      return 0
    fi
    cluster_started=1
  fi
  # Gloo finds its peers through the nodes' own interface (eth1 in each
  # node's network namespace, scripts/cluster.sh): the host name resolves to
  # the loopback, which is each node's own.
  local roc="$top/tests/cluster/run_on_cluster.sh" layout config rep np
  for layout in 1,1 2,2; do
    config=cluster_${layout%%,*}ppn
    np=$((${layout%%,*} * 2))
    say "two nodes, layout $layout: allreduce up to $cl_max, $repeats run(s)"
    for rep in $(seq 1 "$repeats"); do
      set_validation "$rep"
      run throughput "$config" allreduce "$rep" "$np" "json/$config.allreduce.$rep.json" 900 \
        "$roc" -t 880 "$layout" "$BIN/ringmend_allreduce" -m "4:$cl_max" "${cl_iters[@]}" -f "${vflag[@]}" \
        --json "$out/json/$config.allreduce.$rep.json"
      if [ "$have_gloo" = 1 ]; then
        run throughput "$config" gloo "$rep" "$np" "json/$config.gloo.$rep.json" 900 \
          "$roc" -t 880 "$layout" "$BIN/ringmend_gloo_allreduce" -m "4:$cl_max" "${cl_iters[@]}" -f "${vflag[@]}" \
          --iface eth1 \
          --json "$out/json/$config.gloo.$rep.json"
      fi
      # Open MPI's default configuration across the nodes (mpirun without
      # the FT arguments): what a user gives up fault tolerance for.
      if [ "$have_ompi_default" = 1 ]; then
        run throughput "$config" openmpi_default "$rep" "$np" "json/$config.openmpi_default.$rep.json" 900 \
          "$roc" -t 880 --plain-mpirun "$layout" "$BIN/mpi_allreduce_openmpi" --impl openmpi_default \
          -m "4:$cl_max" "${cl_iters[@]}" "${vflag[@]}" --json "$out/json/$config.openmpi_default.$rep.json"
      fi
      # MPICH across the nodes, one rank per node (its ranks poll without
      # yielding: more of them than this machine's CPUs measure time slices).
      if [ "$have_mpich" = 1 ] && [ "$layout" = 1,1 ]; then
        run throughput "$config" mpich "$rep" "$np" "json/$config.mpich.$rep.json" 900 \
          "$roc" -t 880 --mpich -x UCX_NET_DEVICES=eth1 "$layout" "$BIN/mpi_allreduce_mpich" --impl mpich \
          -m "4:$cl_max" "${cl_iters[@]}" "${vflag[@]}" --json "$out/json/$config.mpich.$rep.json"
      fi
      if [ "$layout" = 1,1 ]; then
        run throughput "$config" p2p_bw "$rep" "$np" "json/$config.p2p_bw.$rep.json" 900 \
          "$roc" -t 880 "$layout" "$BIN/ringmend_p2p_bw" "${p2p_opts[@]}" \
          --json "$out/json/$config.p2p_bw.$rep.json"
        run throughput "$config" p2p_bibw "$rep" "$np" "json/$config.p2p_bibw.$rep.json" 900 \
          "$roc" -t 880 "$layout" "$BIN/ringmend_p2p_bibw" --impl both "${p2p_opts[@]}" \
          --json "$out/json/$config.p2p_bibw.$rep.json"
      fi
    done
  done
  stop_cluster
}

# ------------------------------------------------------------ recovery

recovery() {
  say "recovery: ranks $ranks, $rounds round(s) of each (one job per round)"
  local rnd n over
  for rnd in $(seq 1 "$rounds"); do
    for n in $ranks; do
      over=()
      [ "$n" -gt "$CORES" ] && over=(--oversubscribe)
      run recovery "recovery_n$n" ringmend "$rnd" "$n" "json/recovery_n$n.ringmend.$rnd.json" 180 \
        "$FT" "${over[@]}" -np "$n" "$BIN/ringmend_recovery" --mode ringmend -r 1 \
        --json "$out/json/recovery_n$n.ringmend.$rnd.json"
      run recovery "recovery_n$n" ulfm "$rnd" "$n" "json/recovery_n$n.ulfm.$rnd.json" 180 \
        "$FT" "${over[@]}" -np "$n" "$BIN/ringmend_recovery" --mode ulfm -r 1 \
        --json "$out/json/recovery_n$n.ulfm.$rnd.json"
      # The restart: mpirun itself is timed (no wrapper script in between).
      over=()
      [ "$((n - 1))" -gt "$CORES" ] && over=(--oversubscribe)
      run recovery "recovery_n$n" restart "$rnd" "$n" "json/recovery_n$n.restart.$rnd.json" 180 \
        "$MPIEXEC" "${FT_ARGS[@]}" "${over[@]}" -np "$((n - 1))" "$BIN/ringmend_recovery" --init-only \
        --json "$out/json/recovery_n$n.restart.$rnd.json"
    done
  done
}

[ "$skip_one" = 1 ] || one_node
[ "$skip_cluster" = 1 ] || two_nodes
[ "$skip_recovery" = 1 ] || recovery

python3 "$here/bench_report.py" loadavg "$out/machine.json"
say "report"
rc=0
python3 "$here/bench_report.py" report "$out" || rc=$?
[ "$publish" = 1 ] && publish_results "$out"
say "done: $failures failed run(s); results in $out"
[ "$failures" -eq 0 ] || rc=1
exit "$rc"
