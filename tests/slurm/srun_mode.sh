#!/usr/bin/env bash
# srun direct launch: `srun --mpi=pmix ./app` inside an allocation runs the
# training example correctly on ringmend's native membership, and says once
# that fault tolerance is on (tests/slurm/srun_fault_tolerance.sh kills
# tasks and nodes under it). With RINGMEND_MEMBERSHIP=mpi it runs on MPI
# alone, says once that fault tolerance is off, and shows why the native
# membership starts without MPI: when one task dies while MPI holds its
# connection to Slurm's PMIx server, Slurm ends the whole step.
#   srun_mode.sh TRAIN_LOGREG
set -u
train=$1
. "$(dirname "$0")/cluster_lib.sh"
need_cluster

nodes=$(srun_nodes)
if [ "$nodes" -eq 1 ]; then
  echo "note: this cluster's TmpFS does not name the node (%n), and both of its nodes share /tmp, where"
  echo "note: Slurm's PMIx plugin makes one directory per step and node: srun runs on one node here"
fi
tasks=$((2 * nodes))
# short_job NAME ENV: 20 steps under srun, its output shown.
short_job() {
  batch 120 "$work/$1.out" -N "$nodes" --ntasks-per-node=2 --overcommit -- \
    "export RINGMEND_TIMEOUT=60 $2" \
    "srun --mpi=pmix -n $tasks '$train' --steps=20"
  echo "$out"
  echo "----"
  if [ "$rc" -eq 0 ]; then pass "$1: the srun job succeeded"; else fail "$1: the srun job's exit status is $rc"; fi
}
short_job native ""
has "srun started one job of $tasks ranks" "train_logreg: $tasks ranks" "MATCHES the reference"
notices=$(grep -c ' ringmend INFO  .*: fault tolerance on (the native membership' <<<"$out")
if [ "$notices" -eq 1 ]; then pass "one notice that fault tolerance is on"; else fail "$notices notices, expected 1"; fi

short_job mpi-alone RINGMEND_MEMBERSHIP=mpi
notices=$(grep -c ' ringmend WARN  .*: fault tolerance OFF' <<<"$out")
if [ "$notices" -eq 1 ]; then pass "one notice that fault tolerance is off"; else fail "$notices notices, expected 1"; fi

# Task 1 is SIGKILLed 3 s into a long run on MPI alone, under the options
# that keep a step alive otherwise: Slurm's PMIx plugin still ends the step.
batch 120 "$work/kill.out" -N 1 --ntasks-per-node=2 --overcommit -- \
  "export RINGMEND_TIMEOUT=60 RINGMEND_MEMBERSHIP=mpi" \
  "srun --mpi=pmix --no-kill --kill-on-bad-exit=0 -n 2 bash -c 'if [ \$SLURM_PROCID = 1 ]; then (sleep 3; kill -9 \$\$) & fi; exec \"$train\" --steps=100000000'"
echo "$out" | grep -v '^step ' | grep -v '^\[.*\] \[ *[0-9]*\]'
echo "----"
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then pass "the step failed (exit status $rc)"; else fail "exit status $rc"; fi
# The kill landed: srun names task 1 as killed (any other cause of a
# non-zero status would not pass for it).
has "task 1 was SIGKILLed during the job" "task 1: Killed"
if grep -q "final loss" <<<"$out"; then fail "a survivor finished under srun"; else pass "no survivor finished"; fi
has "Slurm ended the step" "CANCELLED"
finish
