# Sourced by the cluster tests of tests/slurm (bash): the local
# Slurm cluster of scripts/cluster.sh, a scratch directory, batch jobs that
# cannot outlive the test, and PASS/FAIL checks.
#
# Slurm not installed: the test is skipped (exit 77, reason printed). The
# cluster not answering: the test fails (the ctest fixture starts it).

export SLURM_CONF=${SLURM_CONF:-${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}/slurm.conf}
test_name=$(basename "$0" .sh)
fails=0
failed_checks=()
work=$(mktemp -d)
job_ids=()

skip() {
  echo "$test_name: SKIPPED: $*"
  exit 77
}
pass() { echo "PASS: $*"; }
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
  failed_checks+=("$*")
}
# The failed checks again at the end, where a log cut to its head and tail
# still shows them.
finish() {
  if [ "$fails" -ne 0 ]; then
    echo "$test_name: $fails check(s) failed:"
    printf '  FAIL: %s\n' "${failed_checks[@]}"
    exit 1
  fi
  echo "$test_name: all checks passed"
  exit 0
}

cleanup_jobs() {
  local id
  for id in "${job_ids[@]}"; do timeout -k 2 10 scancel "$id" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup_jobs EXIT

need_cluster() {
  local c nodes
  for c in sbatch salloc srun sinfo scontrol scancel; do
    command -v "$c" >/dev/null 2>&1 ||
      skip "Slurm is not installed ('$c' not found); run scripts/bootstrap.sh --with-cluster-tools"
  done
  if ! nodes=$(timeout -k 2 10 sinfo -h -N -o '%N' 2>/dev/null | sort -u | wc -l) || [ "$nodes" -lt 2 ]; then
    echo "$test_name: no Slurm cluster of two nodes or more answers (SLURM_CONF=$SLURM_CONF); start it with scripts/cluster.sh start"
    exit 1
  fi
}

# batch LIMIT OUTFILE SBATCH_OPTIONS... -- SCRIPT_LINE...
# Submits a batch script made of the lines and waits for it (sbatch --wait),
# at most LIMIT seconds; a job still there then is cancelled. Sets $rc to the
# job's exit status (124: too slow) and $out to its output.
batch() {
  local limit=$1 outfile=$2 opts=() script
  shift 2
  while [ "$1" != "--" ]; do
    opts+=("$1")
    shift
  done
  shift
  script=$(mktemp "$work/job.XXXXXX.sh")
  {
    echo "#!/bin/bash"
    printf '%s\n' "$@"
  } >"$script"
  chmod +x "$script"
  timeout -k 5 "$limit" sbatch --wait --parsable -J "ringmend-$test_name" -D "$work" -o "$outfile" \
    --time=$(((limit + 59) / 60 + 1)) "${opts[@]}" "$script" >"$script.id" 2>"$script.err"
  rc=$?
  local id
  id=$(head -n 1 "$script.id" | cut -d';' -f1)
  [ -n "$id" ] && job_ids+=("$id")
  out=$(cat "$outfile" 2>/dev/null)
  [ "$rc" -eq 124 ] && out+=$'\n'"(the job did not finish within $limit s)"
  [ -s "$script.err" ] && out+=$'\n'"sbatch: $(cat "$script.err")"
}

# has NAME STRING...: every STRING is in $out.
has() {
  local name=$1 s
  shift
  for s in "$@"; do grep -qF -- "$s" <<<"$out" || { fail "$name: no '$s' in the output"; return 1; }; done
  pass "$name"
}

# The nodes of the local cluster share this machine's /tmp. Slurm's PMIx
# plugin (srun --mpi=pmix) makes a per-step directory in the node's TmpFS;
# unless TmpFS names the node (%n), the second node finds the first one's
# directory and its tasks fail to start. Prints how many nodes srun can use.
srun_nodes() {
  local tmpfs
  tmpfs=$(timeout -k 2 10 scontrol show config 2>/dev/null | sed -n 's/^TmpFS *= *//p')
  if [[ "$tmpfs" == *%n* ]]; then echo 2; else echo 1; fi
}

# need_namespace_nodes: skips unless the cluster's nodes live in network
# namespaces (so that one can be powered off or cut) and there are 3 or more.
need_namespace_nodes() {
  grep -qx "NETNS=1" "${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}/layout" 2>/dev/null ||
    skip "the cluster runs its nodes on 127.0.0.1, not in network namespaces: no node can be lost"
  [ "$(timeout -k 2 10 sinfo -h -N -o '%N' | sort -u | wc -l)" -ge 3 ] || skip "fewer than 3 nodes"
}

# stop_steps: cancels this test's srun steps (named ringmend-TEST).
stop_steps() {
  local id
  for id in $(squeue -h -n "ringmend-$test_name" -o %i 2>/dev/null); do timeout -k 2 10 scancel "$id"; done
}

# power_off_when_running NODE PROGRAM LOG (run it in the background): once
# two of PROGRAM's processes run on NODE, waits 1.5 s and powers NODE off
# ($cluster kill-node); LOG says what happened, $work/job names the job.
power_off_when_running() {
  local node=$1 prog=$2 log=$3
  for _ in $(seq 1 300); do
    if [ "$(pgrep -f "$prog" | while read -r p; do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -x "SLURMD_NODENAME=$node"; done | wc -l)" -ge 2 ]; then
      squeue -h -n "ringmend-$test_name" -o %i 2>/dev/null | head -n 1 >"$work/job"
      sleep 1.5
      "$cluster" kill-node "$node" >"$log" 2>&1
      return 0
    fi
    sleep 0.1
  done
  echo "the job's ranks never ran on $node" >"$log"
}

# wait_for_training DIR: until the training example logs a step in one of
# DIR/out-*.log (at most 60 s); fails otherwise.
wait_for_training() {
  for _ in $(seq 1 600); do
    [ "$(cat "$1"/out-*.log 2>/dev/null | grep -c '^step ')" -ge 1 ] && return 0
    sleep 0.1
  done
  return 1
}

# wait_for_recovery DIR: until a recovery is logged in DIR/out-*.log (at
# most 20 s); fails otherwise.
wait_for_recovery() {
  for _ in $(seq 1 200); do
    grep -q "recovered from the loss" "$1"/out-*.log 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
