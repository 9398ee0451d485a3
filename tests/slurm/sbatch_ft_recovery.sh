#!/usr/bin/env bash
# The main use on a cluster: a batch job (sbatch --wait, 2 nodes x 2 tasks)
# runs the training example through ringmend-run; member 2, the first
# rank of the second node, SIGKILLs itself in its 15th allreduce. The job
# must succeed, and its output must show the recovery and a model that
# matches the serial reference.
#   sbatch_ft_recovery.sh RINGMEND_RUN TRAIN_LOGREG
set -u
run=$1 train=$2
. "$(dirname "$0")/cluster_lib.sh"
need_cluster

batch 150 "$work/job.out" -N 2 --ntasks-per-node=2 --overcommit -- \
  "export RINGMEND_TIMEOUT=60 RINGMEND_FAULT=rank=2,call=15,phase=start RINGMEND_FAULT_RECORD=$work/died" \
  "'$run' '$train' --steps=40"
echo "$out"
echo "----"
if [ "$rc" -eq 0 ]; then pass "the job succeeded"; else fail "the job's exit status is $rc"; fi
has "ringmend-run placed 2+2 ranks with fault tolerance" "4 ranks on n1:2,n2:2; fault tolerance on" \
  "--with-ft ulfm" "--host n1:2,n2:2 --map-by slot --prtemca plm_slurm_args --overlap -np 4"
has "the program started with fault tolerance" "train_logreg: 4 ranks" "fault tolerance on (ULFM)"
has "rank 2 was killed" "fault injection: member 2 SIGKILLs itself"
has "the survivors recovered" "membership change: lost member(s) 2; 4 -> 3 ranks" \
  "(recovered: step completed by the survivors" "recovery time:"
has "the result is right" "final loss" "on 3 ranks" "MATCHES the reference"
has "ringmend-run's summary names the loss and its node" \
  "summary: 4 ranks started, 3 finished normally, 1 lost; 1 recovery, final size 3 (epoch 1)" \
  "member 2 on n2: killed by SIGKILL" "exit status 0: the survivors finished normally"
finish
