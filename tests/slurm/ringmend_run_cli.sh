#!/usr/bin/env bash
# ringmend-run without a cluster: its help, the commands it builds (for
# made-up Slurm allocations and on this machine) and its errors, with
# stand-in mpiruns for the MPIs it must refuse. With `local`, it also runs a
# real job on this machine with a rank killed.
#
#   ringmend_run_cli.sh help|dry_run|errors|local RINGMEND_RUN PROGRAM SOURCE_DIR
#
# MPIEXEC: the ULFM mpirun (as ringmend was built with). Prints PASS/FAIL per check.
set -u
what=$1 run=$2 app=$3 src=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
pass() { echo "PASS: $*"; }
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# No Slurm and no RINGMEND_* from the caller's environment, whatever it is.
base_env=(env)
while IFS= read -r name; do base_env+=(-u "$name"); done < <(env | sed -n 's/^\(SLURM[A-Z0-9_]*\|RINGMEND_[A-Z0-9_]*\)=.*/\1/p')

# rr [VAR=VALUE...] -- ringmend-run arguments: sets $out and $rc.
rr() {
  local vars=()
  while [ "$1" != "--" ]; do
    vars+=("$1")
    shift
  done
  shift
  out=$("${base_env[@]}" "${vars[@]}" "$run" "$@" 2>&1)
  rc=$?
}
# ok NAME STRING...: exit 0 and every STRING in the output.
ok() {
  local name=$1 s
  shift
  [ "$rc" -eq 0 ] || { fail "$name: exit status $rc: $out"; return; }
  for s in "$@"; do grep -qF -- "$s" <<<"$out" || { fail "$name: no '$s' in:"$'\n'"$out"; return; }; done
  pass "$name"
}
# err NAME STRING...: exit 2, one error line, and every STRING in it.
err() {
  local name=$1 s
  shift
  [ "$rc" -eq 2 ] || { fail "$name: exit status $rc, expected 2: $out"; return; }
  [ "$(grep -c '^ringmend-run: error: ' <<<"$out")" -eq 1 ] || { fail "$name: not one error line: $out"; return; }
  for s in "$@"; do grep -qF -- "$s" <<<"$out" || { fail "$name: no '$s' in: $out"; return; }; done
  pass "$name: $(grep '^ringmend-run: error: ' <<<"$out" | cut -c1-160)"
}
# The last line (the command) must be exactly $1.
command_is() {
  local name=$1 want=$2 got
  got=$(tail -n 1 <<<"$out")
  [ "$rc" -eq 0 ] && [ "$got" = "$want" ] && { pass "$name"; return; }
  fail "$name: exit $rc"$'\n'"  got:  $got"$'\n'"  want: $want"$'\n'"$out"
}

mpirun=${MPIEXEC:?MPIEXEC must name the ULFM mpirun}
root=""
[ "$(id -u)" -eq 0 ] && root="--allow-run-as-root "
# The FT arguments as the one file has them, quoted as the launcher quotes them.
ft=""
while IFS= read -r a; do
  if [[ "$a" =~ ^[A-Za-z0-9_@%+=:,./-]+$ ]]; then ft+="$a "; else ft+="'$a' "; fi
done < <(grep -v '^[[:space:]]*#' "$src/ulfm/ft_mpirun_args.txt" | grep -v '^[[:space:]]*$')
[ -n "$ft" ] || fail "no FT arguments in $src/ulfm/ft_mpirun_args.txt"
head="$mpirun $root$ft"
# Every rank starts under ringmend-rank, which reports how it ended.
rank=$(realpath "$(dirname "$run")/ringmend-rank")
alloc=(MPIEXEC="$mpirun" SLURM_JOB_ID=42 'SLURM_JOB_NODELIST=n[001-004,010],gpu[1-2]' 'SLURM_TASKS_PER_NODE=2(x3),1(x3),4')

case "$what" in
help)
  rr -- --help
  ok "--help" "Usage: ringmend-run [options]" "--network-check" "--dry-run" "--ranks-per-node" "--no-ft" \
    "MPIEXEC" "srun --mpi=pmix --no-kill --kill-on-bad-exit=0" "ends the whole job step" "#SBATCH" "Exit status" "--exclude-file" \
    "--mpirun-args" "5  a node was lost"
  rr -- -h
  ok "-h" "Usage: ringmend-run"
  rr -- --version
  ok "--version" "ringmend-run "
  ;;

dry_run)
  rr MPIEXEC="$mpirun" -- --dry-run -n 2 "$app" --steps=3
  ok "local summary" "# not in a Slurm allocation: 2 ranks on this machine; fault tolerance on (Open MPI 5"
  command_is "local command" "$head-np 2 $rank $app --steps=3"
  rr "${alloc[@]}" -- --dry-run "$app"
  ok "allocation summary" "# Slurm job 42: 13 ranks on n001:2,n002:2,n003:2,n004:1,n010:1,gpu1:1,gpu2:4"
  command_is "every slot" "$head--host n001:2,n002:2,n003:2,n004:1,n010:1,gpu1:1,gpu2:4 --map-by slot --prtemca plm_slurm_args --overlap -np 13 $rank $app"
  rr "${alloc[@]}" -- --dry-run -n 5 "$app"
  command_is "-n 5 fills nodes in order" "$head--host n001:2,n002:2,n003:1 --map-by slot --prtemca plm_slurm_args --overlap -np 5 $rank $app"
  rr "${alloc[@]}" -- --dry-run --ranks-per-node 1 -n 3 "$app"
  command_is "--ranks-per-node 1 -n 3" "$head--host n001:1,n002:1,n003:1 --map-by slot --prtemca plm_slurm_args --overlap -np 3 $rank $app"
  rr "${alloc[@]}" -- --dry-run -N 2 "$app"
  command_is "-N 2" "$head--host n001:2,n002:2 --map-by slot --prtemca plm_slurm_args --overlap -np 4 $rank $app"
  rr "${alloc[@]}" -- --dry-run -N 2 -n 2 "$app"
  command_is "-N 2 -n 2 spreads" "$head--host n001:1,n002:1 --map-by slot --prtemca plm_slurm_args --overlap -np 2 $rank $app"
  rr "${alloc[@]}" -- --dry-run --no-ft -n 2 "$app"
  ok "--no-ft summary" "fault tolerance OFF (--no-ft)"
  command_is "--no-ft" "$mpirun $root--host n001:2 --map-by slot --prtemca plm_slurm_args --overlap -np 2 $rank $app"
  rr "${alloc[@]}" -- --dry-run -n 2 -x FOO=1 --mca btl_tcp_if_include lo --mpirun-arg=--report-bindings \
    "$app" a 'b c' -n 7
  command_is "pass-through, program arguments kept" \
    "$head--host n001:2 --map-by slot --prtemca plm_slurm_args --overlap -np 2 -x FOO=1 --mca btl_tcp_if_include lo --report-bindings $rank $app a 'b c' -n 7"
  rr "${alloc[@]}" SLURM_CPUS_PER_TASK=2 -- --dry-run -n 2 "$app"
  command_is "cpus per task" "$head--host n001:2 --map-by slot:PE=2 --prtemca plm_slurm_args --overlap -np 2 $rank $app"
  rr "${alloc[@]}" RINGMEND_TIMEOUT=30 RINGMEND_ROOT=/opt/x -- --dry-run -n 2 -- "$app"
  command_is "RINGMEND_* forwarded, the module's own not" "$head--host n001:2 --map-by slot --prtemca plm_slurm_args --overlap -np 2 -x RINGMEND_TIMEOUT $rank $app"
  rr "${alloc[@]}" -- --dry-run -n 20 --oversubscribe "$app"
  command_is "--oversubscribe" \
    "$head--host n001:3,n002:3,n003:3,n004:2,n010:2,gpu1:2,gpu2:5 --map-by slot --prtemca plm_slurm_args --overlap -np 20 --oversubscribe $rank $app"
  printf '# a site copy\n--with-ft\nulfm\n\n--mca\nbtl_tcp_if_include\nib0\n' >"$work/ft.txt"
  rr MPIEXEC="$mpirun" RINGMEND_FT_ARGS_FILE="$work/ft.txt" -- --dry-run -v -n 1 "$app"
  ok "RINGMEND_FT_ARGS_FILE" "FT arguments from $work/ft.txt"
  command_is "RINGMEND_FT_ARGS_FILE command" "$mpirun $root--with-ft ulfm --mca btl_tcp_if_include ib0 -np 1 $rank $app"
  rr MPIEXEC="$mpirun" -- --dry-run -v -n 1 "$app"
  ok "FT arguments from the one file (build tree)" "FT arguments from $(realpath "$src/ulfm/ft_mpirun_args.txt")"
  rr MPIEXEC="$mpirun" -- --dry-run --network-check -n 1 "$app"
  ok "network check outside Slurm" "not in a Slurm allocation, only this machine; nothing to compare"
  rr MPIEXEC="$mpirun" SLURM_JOB_ID=7 SLURM_JOB_NODELIST=n1 SLURM_TASKS_PER_NODE=2 -- --dry-run --network-check "$app"
  ok "network check on one node" "the allocation has one node; nothing to compare" "--host n1:2"
  rr "${alloc[@]}" -- --dry-run --network-check --network-check-ratio 0.3 -n 2 "$app"
  ok "a dry run shows the network check without running it" "# network check (not run by --dry-run" \
    "--host n001:1,n002:1,n003:1,n004:1,n010:1,gpu1:1,gpu2:1 --map-by slot --prtemca plm_slurm_args --overlap -np 7 " "ringmend-netcheck" \
    "'--nodes=n[001-004,010],gpu[1-2]' --ratio=0.3 --min-bw=0 --seconds=0.15"
  command_is "the command after a dry network check" "$head--host n001:2 --map-by slot --prtemca plm_slurm_args --overlap -np 2 $rank $app"
  rr "${alloc[@]}" -- --dry-run --exclude 'n[002-003]' -n 3 "$app"
  ok "--exclude" "(n[002-003] left out: --exclude)"
  command_is "--exclude command" "$head--host n001:2,n004:1 --map-by slot --prtemca plm_slurm_args --overlap -np 3 $rank $app"
  printf '# lost nodes\nn001\ngpu[1-2]\n' >"$work/lost"
  rr "${alloc[@]}" -- --dry-run --exclude-file "$work/lost" "$app"
  command_is "--exclude-file" "$head--host n002:2,n003:2,n004:1,n010:1 --map-by slot --prtemca plm_slurm_args --overlap -np 6 $rank $app"
  rr "${alloc[@]}" -- --dry-run --exclude-file "$work/none-yet" -n 1 "$app"
  command_is "--exclude-file not there yet" "$head--host n001:1 --map-by slot --prtemca plm_slurm_args --overlap -np 1 $rank $app"
  # --mpirun-args: mpirun's own command line, as is (scripts/ft-mpirun).
  rr MPIEXEC="$mpirun" -- --dry-run --mpirun-args --oversubscribe -np 3 "$app" --steps=3
  command_is "--mpirun-args" "$head--prtemca odls_base_exec_agent $rank --oversubscribe -np 3 $app --steps=3"
  rr MPIEXEC="$mpirun" -- --dry-run --no-ft --mpirun-args -np 1 "$app"
  command_is "--mpirun-args --no-ft" "$mpirun $root--prtemca odls_base_exec_agent $rank -np 1 $app"
  # --launcher srun: one srun step on the native membership, placed as mpirun would be.
  if srun=$(command -v srun); then
    rr "${alloc[@]}" -- --dry-run --launcher srun -n 3 "$app" --steps=3
    ok "--launcher srun summary" "fault tolerance on (srun, the native membership"
    command_is "--launcher srun" "$srun --mpi=pmix --no-kill --kill-on-bad-exit=0 -n 3 -w n001,n001,n002 -m arbitrary $rank $app --steps=3"
    rr "${alloc[@]}" RINGMEND_LAUNCHER=srun -- --dry-run --spares 1 -n 2 "$app"
    command_is "RINGMEND_LAUNCHER=srun with a spare" "$srun --mpi=pmix --no-kill --kill-on-bad-exit=0 -n 3 -w n001,n001,n002 -m arbitrary $rank $app"
  else
    echo "SKIP: --launcher srun: no srun on PATH"
  fi
  ;;

errors)
  mkdir -p "$work/mpich" "$work/ompi4" "$work/ompi5"
  printf '#!/bin/sh\necho "HYDRA build details:"\necho "    Version: 4.0.2"\n' >"$work/mpich/mpirun"
  printf '#!/bin/sh\necho "mpirun (Open MPI) 4.1.4"\n' >"$work/ompi4/mpirun"
  printf '#!/bin/sh\necho "mpirun (Open MPI) 5.0.7"\n' >"$work/ompi5/mpirun"
  printf '#!/bin/sh\necho "options:mpi_ext:affinity, cuda"\n' >"$work/ompi5/ompi_info"
  chmod +x "$work"/*/mpirun "$work"/*/ompi_info
  rr MPIEXEC="$work/mpich/mpirun" -- --dry-run -n 1 "$app"
  err "MPICH's mpirun" "is not Open MPI's mpirun (it says: HYDRA build details:)" "MPIEXEC"
  rr MPIEXEC="$work/ompi4/mpirun" -- --dry-run -n 1 "$app"
  err "Open MPI 4" "is Open MPI 4.1.4, which has no ULFM" "--no-ft"
  rr MPIEXEC="$work/ompi4/mpirun" -- --dry-run --no-ft -n 1 "$app"
  ok "Open MPI 4 with --no-ft" "$work/ompi4/mpirun"
  rr MPIEXEC="$work/ompi5/mpirun" -- --dry-run -n 1 "$app"
  err "Open MPI 5 without ULFM" "is Open MPI 5.0.7 built without ULFM" "no ftmpi extension" "--with-ft=ulfm"
  rr MPIEXEC=/nonexistent/mpirun -- --dry-run -n 1 "$app"
  err "MPIEXEC missing" "MPIEXEC names '/nonexistent/mpirun', which is not an executable file"
  rr -- --launcher pbs "$app"
  err "--launcher unknown" "--launcher 'pbs': srun or mpirun"
  rr -- --launcher srun "$app"
  err "--launcher srun outside an allocation" "--launcher srun starts the job as a step of a Slurm allocation"
  rr "${alloc[@]}" -- --launcher srun --mca btl tcp "$app"
  err "--launcher srun with an mpirun option" "'--mca' is an mpirun option"
  rr -- --dry-run --mpirun "$work/nothing" -n 1 "$app"
  err "--mpirun missing" "--mpirun names"
  rr MPIEXEC="$mpirun" SLURM_JOB_ID=42 'SLURM_JOB_NODELIST=n[1-2]' 'SLURM_TASKS_PER_NODE=2(x2)' -- --dry-run -n 5 "$app"
  err "more ranks than slots" "more ranks than slots: 5 ranks asked, the allocation has 4 task slots (n[1-2] with 2(x2) task slots per node; SLURM_TASKS_PER_NODE=2(x2))" \
    "--oversubscribe"
  rr MPIEXEC="$mpirun" SLURM_JOB_ID=42 'SLURM_JOB_NODELIST=n[1-2]' 'SLURM_TASKS_PER_NODE=2(x2)' -- --dry-run -N 3 "$app"
  err "more nodes than the allocation" "--nodes 3: the allocation has 2 usable nodes"
  rr MPIEXEC="$mpirun" SLURM_JOB_ID=42 'SLURM_JOB_NODELIST=n[1-2]' 'SLURM_TASKS_PER_NODE=2(x2)' -- --dry-run \
    --ranks-per-node 3 "$app"
  err "more ranks per node than slots" "node n1 has 2 task slots"
  cpus=$(nproc)
  rr MPIEXEC="$mpirun" -- --dry-run -n $((cpus + 1)) "$app"
  err "more ranks than CPUs here" "more ranks than slots: $((cpus + 1)) ranks asked, this machine has $cpus CPU" \
    "--oversubscribe"
  rr MPIEXEC="$mpirun" -- --dry-run -n $((cpus + 1)) --oversubscribe "$app"
  ok "--oversubscribe here" "--oversubscribe"
  rr MPIEXEC="$mpirun" -- --dry-run -N 2 "$app"
  err "nodes outside an allocation" "--nodes 2 needs a Slurm allocation" "salloc"
  rr MPIEXEC="$mpirun" -- --dry-run -n 1 "$work/no-such-app"
  err "program missing" "the program '$work/no-such-app' does not exist"
  touch "$work/not-executable"
  rr MPIEXEC="$mpirun" -- --dry-run -n 1 "$work/not-executable"
  err "program not executable" "is not executable"
  rr MPIEXEC="$mpirun" -- --dry-run -n 1 "$work"
  err "program is a directory" "is a directory"
  rr MPIEXEC="$mpirun" -- --dry-run -n 1 no-such-app-anywhere
  err "program not on PATH" "'no-such-app-anywhere' is not on PATH"
  rr MPIEXEC="$mpirun" SLURM_JOB_ID=42 'SLURM_JOB_NODELIST=n[1-2' SLURM_TASKS_PER_NODE=1 -- --dry-run "$app"
  err "malformed SLURM_JOB_NODELIST" "SLURM_JOB_NODELIST: hostlist \"n[1-2\": at character 2"
  rr MPIEXEC="$mpirun" SLURM_JOB_ID=42 'SLURM_JOB_NODELIST=n[1-2]' 'SLURM_TASKS_PER_NODE=2(x3)' -- --dry-run "$app"
  err "inconsistent SLURM_TASKS_PER_NODE" "describes 3 nodes"
  rr MPIEXEC="$mpirun" SLURM_JOB_ID=42 'SLURM_JOB_NODELIST=n[1-2]' 'SLURM_JOB_CPUS_PER_NODE=2(x2)' SLURM_STEP_ID=0 \
    SLURM_PROCID=1 -- --dry-run "$app"
  err "inside a job step" "runs inside job step 42.0" "batch script or the salloc shell"
  rr MPIEXEC="$mpirun" -- --frobnicate "$app"
  err "unknown option" "unknown option '--frobnicate'" "--help"
  rr MPIEXEC="$mpirun" -- --dry-run
  err "no program" "no program given"
  rr MPIEXEC="$mpirun" -- -n zero "$app"
  err "bad -n" "--np: wants a whole number of at least 1, got 'zero'" "--help"
  rr MPIEXEC="$mpirun" -- --network-check-ratio 2 "$app"
  err "bad ratio" "--network-check-ratio: wants a number from 0.01 to 1, got '2'"
  rr MPIEXEC="$mpirun" -- --spares -1 "$app"
  err "negative --spares" "--spares: wants a whole number, 0 or more, got '-1'"
  rr MPIEXEC="$mpirun" -- -N 0 "$app"
  err "-N 0" "--nodes: wants a whole number of at least 1, got '0'"
  rr MPIEXEC="$mpirun" -- --network-check-seconds fast "$app"
  err "bad --network-check-seconds" "--network-check-seconds: wants a number from 0.01 to 60, got 'fast'"
  rr MPIEXEC="$mpirun" -- --launcher
  err "--launcher without a value" "--launcher: 1 required"
  rr MPIEXEC="$mpirun" RINGMEND_LAUNCHER=pbs -- "$app"
  err "bad RINGMEND_LAUNCHER" "RINGMEND_LAUNCHER='pbs': srun or mpirun"
  # ringmend-netcheck (started by ringmend-run, one rank per node) reads
  # its command line before MPI starts: a bad one ends every rank alike.
  netcheck=$(dirname "$run")/ringmend-netcheck
  out=$("$netcheck" --help 2>&1) && [[ "$out" == *"--nodes"* && "$out" == *"--min-bw"* ]] \
    || fail "ringmend-netcheck --help: $out"
  echo "PASS: ringmend-netcheck --help"
  out=$("$netcheck" --nodes=n1 --ratio=3 2>&1) && fail "ringmend-netcheck --ratio=3 succeeded"
  [[ "$out" == *"ringmend-netcheck: error: --ratio: Value 3 not in range"* ]] || fail "ringmend-netcheck --ratio=3: $out"
  echo "PASS: ringmend-netcheck bad value"
  out=$("$netcheck" --nodes='n[1-' 2>&1) && fail "ringmend-netcheck bad --nodes succeeded"
  [[ "$out" == *"ringmend-netcheck: error: --nodes:"* ]] || fail "ringmend-netcheck bad --nodes: $out"
  echo "PASS: ringmend-netcheck bad --nodes"
  rr MPIEXEC="$mpirun" -- --mca btl
  err "--mca without value" "--mca: 2 required NAME VALUE missing"
  rr MPIEXEC="$mpirun" RINGMEND_FT_ARGS_FILE="$work/none.txt" -- --dry-run "$app"
  err "unreadable RINGMEND_FT_ARGS_FILE" "RINGMEND_FT_ARGS_FILE='$work/none.txt' cannot be read"
  rr MPIEXEC="$mpirun" -- --dry-run --exclude n1 -n 1 "$app"
  err "--exclude outside an allocation" "--exclude leaves out nodes of a Slurm allocation"
  rr MPIEXEC="$mpirun" -- --exclude 'n[1-' -n 1 "$app"
  err "bad --exclude" "--exclude 'n[1-'"
  rr "${alloc[@]}" -- --dry-run --exclude 'n[001-004,010],gpu[1-2]' "$app"
  err "every node excluded" "no node is left to run on" "left out: n[001-004,010],gpu[1-2]"
  rr MPIEXEC="$mpirun" -- --mpirun-args
  err "--mpirun-args alone" "--mpirun-args: no mpirun arguments follow"
  rr MPIEXEC="$mpirun" -- -n 2 --mpirun-args -np 2 "$app"
  err "placement options with --mpirun-args" "are written in mpirun's own arguments"
  ;;

local)
  # A real job on this machine: rank 1 of 3 is killed in its 10th allreduce.
  rr MPIEXEC="$mpirun" RINGMEND_TIMEOUT=60 RINGMEND_FAULT=rank=1,call=10,phase=start -- \
    -n 3 --oversubscribe "$app" --steps=20
  ok "local run survives a killed rank" "fault tolerance on" "membership change: lost member(s) 1; 3 -> 2 ranks" \
    "MATCHES the reference"
  ok "its summary names the loss" "summary: 3 ranks started, 2 finished normally, 1 lost; 1 recovery, final size 2" \
    "member 1 on $(hostname): killed by SIGKILL" "exit status 0: the survivors finished normally"
  ok "one INFO line for the recovery, by default" \
    "ringmend INFO  $(hostname):" "member 0 epoch 1: recovered from the loss of member 1 (node $(hostname)) in collective #10"
  [ "$(grep -c 'recovered from the loss of member' <<<"$out")" -eq 1 ] && pass "only one such line" ||
    fail "not one recovery line at the default level: $out"
  rr MPIEXEC="$mpirun" RINGMEND_TIMEOUT=60 -- --no-ft -n 2 "$app" --steps=5
  ok "local run with --no-ft" "fault tolerance OFF" "MATCHES the reference" "exit status 0: every rank finished normally"

  # The exit status tells what happened (mpirun with ULFM exits 0 whatever).
  # status NAME WANT STRING...: exit status WANT and every STRING in the output.
  status() {
    local name=$1 want=$2 s
    shift 2
    [ "$rc" -eq "$want" ] || { fail "$name: exit status $rc, expected $want: $out"; return; }
    for s in "$@"; do grep -qF -- "$s" <<<"$out" || { fail "$name: no '$s' in:"$'\n'"$out"; return; }; done
    pass "$name"
  }
  rr MPIEXEC="$mpirun" RINGMEND_TIMEOUT=60 RINGMEND_FAULT="rank=0,call=3,phase=start,signal=SEGV;rank=1,call=3,phase=start,signal=SEGV" \
    -- -q -n 2 "$app" --steps=8
  status "every rank crashed: not a success" 1 "2 ranks started, 0 finished normally, 2 lost" \
    "member 0 on $(hostname): crashed with SIGSEGV (a crash is probably a bug" "member 1 on $(hostname): crashed with SIGSEGV" \
    "exit status 1: no rank finished normally"
  rr MPIEXEC="$mpirun" RINGMEND_TIMEOUT=60 RINGMEND_FAULT=rank=1,call=3,phase=start,exit=3 -- -q -n 3 --oversubscribe "$app" --steps=8
  status "a rank that exits 3 mid-run is a loss the others recover from" 0 "MATCHES the reference" \
    "3 ranks started, 2 finished normally, 1 lost" "member 1 on $(hostname): exited with status 3"
  rr MPIEXEC="$mpirun" RINGMEND_TIMEOUT=60 RINGMEND_FAULT=rank=2,call=4,phase=start -- -q --fail-on-loss -n 3 --oversubscribe "$app" --steps=8
  status "--fail-on-loss" 3 "MATCHES the reference" "killed by SIGKILL" "exit status 3: ranks were lost and --fail-on-loss"
  rr MPIEXEC="$mpirun" RINGMEND_TIMEOUT=60 -- -q -n 2 sh -c "\"$app\" --steps=4 && exit 5"
  status "a survivor's own non-zero status is the job's" 5 "MATCHES the reference" \
    "finished its work, then exited with status 5" "exit status 5: a rank that finished its work exited with it"
  rr MPIEXEC="$mpirun" -- -q -n 2 sh -c 'exit 4'
  status "a program that fails on every rank" 4 "2 ranks started, 0 finished normally, 2 lost" "exited with status 4"

  # A rank that dies leaves no shared-memory segment of its own behind, even
  # when no rank of its node is left to remove it: its launcher does.
  "$rank" sh -c "touch /dev/shm/ringmend-\$\$-0-e0 && echo \$\$ >'$work/segpid' && kill -9 \$\$" 2>/dev/null
  seg=/dev/shm/ringmend-$(cat "$work/segpid" 2>/dev/null)-0-e0
  if [ -s "$work/segpid" ] && [ ! -e "$seg" ]; then pass "ringmend-rank removes a dead rank's segment"; else
    fail "ringmend-rank left $seg"; rm -f "$seg"; fi

  # scripts/ft-mpirun: a plain mpirun command line, judged the same way.
  ftm() {
    out=$("${base_env[@]}" MPIEXEC="$mpirun" RINGMEND_RUN="$run" RINGMEND_TIMEOUT=60 "$@" 2>&1)
    rc=$?
  }
  ftm RINGMEND_FAULT=rank=1,call=4,phase=start "$src/scripts/ft-mpirun" --oversubscribe -np 3 "$app" --steps=8
  status "ft-mpirun: a killed rank, recovered" 0 "MATCHES the reference" \
    "3 ranks started, 2 finished normally, 1 lost" "exit status 0: the survivors finished normally"
  ftm RINGMEND_FAULT="rank=0,call=3,phase=start,signal=SEGV;rank=1,call=3,phase=start,signal=SEGV" \
    "$src/scripts/ft-mpirun" -np 2 "$app" --steps=8
  status "ft-mpirun: every rank crashed" 1 "2 ranks started, 0 finished normally, 2 lost" "crashed with SIGSEGV"
  ;;

*)
  echo "usage: ringmend_run_cli.sh help|dry_run|errors|local RINGMEND_RUN PROGRAM SOURCE_DIR" >&2
  exit 2
  ;;
esac

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
