#!/usr/bin/env bash
# Launched by plain mpirun (ULFM not enabled), ringmend says once that fault
# tolerance is off and why, and works normally.
#   no_ft_launch.sh PROGRAM NP
set -u
program=$1 np=$2
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
out=$(timeout -k 5 60 "${MPIEXEC:-mpirun}" "${root[@]}" --oversubscribe -np "$np" "$program" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: exit status $rc"; exit 1; }
[ "$(grep -c 'fault tolerance OFF' <<<"$out")" -eq 1 ] || { echo "FAIL: expected one 'fault tolerance OFF' notice"; exit 1; }
[ "$(grep -o 'TEST PASSED' <<<"$out" | wc -l)" -eq "$np" ] || { echo "FAIL: not every rank passed"; exit 1; }
