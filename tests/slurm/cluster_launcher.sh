#!/usr/bin/env bash
# ringmend-run inside a real allocation (salloc -N 2 --ntasks-per-node=2):
# the commands --dry-run prints for the usual requests, and the errors for
# requests the allocation cannot meet or launches from the wrong place.
#   cluster_launcher.sh RINGMEND_RUN TRAIN_LOGREG
set -u
run=$1 train=$2
. "$(dirname "$0")/cluster_lib.sh"
need_cluster

# Everything runs in one allocation; its output is checked afterwards.
cat >"$work/inside.sh" <<INSIDE
#!/bin/bash
r() { echo "=== \$*"; "\$@" 2>&1; echo "=== exit \$?"; }
r '$run' --dry-run '$train'
r '$run' --dry-run -n 3 '$train'
r '$run' --dry-run --ranks-per-node 1 '$train'
r '$run' --dry-run -N 1 '$train'
r '$run' --dry-run --no-ft -n 2 -x FOO=1 --mca btl_tcp_if_include lo '$train' --steps=3
r '$run' -n 5 '$train'
r '$run' -N 3 '$train'
r '$run' --ranks-per-node 3 '$train'
r '$run' '$work/no-such-program'
r env MPIEXEC=/usr/bin/mpirun '$run' '$train'
r srun -N 1 -n 1 --overlap '$run' '$train'
INSIDE
chmod +x "$work/inside.sh"
out=$(timeout -k 5 120 salloc -N 2 --ntasks-per-node=2 --overcommit --immediate=30 --time=3 -J ringmend-launcher \
  --quiet "$work/inside.sh" 2>&1)
rc=$?
echo "$out"
echo "----"
[ "$rc" -eq 0 ] || fail "salloc exit status $rc"

# section N: the output of the N-th command (from 1).
section() { awk -v n="$1" '/^=== exit/{if (k==n) exit} /^=== /&&!/^=== exit/{k++} k==n' <<<"$out"; }
status() { grep '^=== exit' <<<"$out" | sed -n "$1p" | awk '{print $3}'; }
expect() {  # expect N STATUS NAME STRING...
  local n=$1 st=$2 name=$3 s text
  shift 3
  text=$(section "$n")
  [ "$(status "$n")" = "$st" ] || { fail "$name: exit status $(status "$n"), expected $st"; return; }
  for s in "$@"; do grep -qF -- "$s" <<<"$text" || { fail "$name: no '$s' in:"$'\n'"$text"; return; }; done
  pass "$name"
}
root=""
[ "$(id -u)" -eq 0 ] && root="--allow-run-as-root "
# The FT arguments, from the one file that lists them, as the dry run
# quotes them.
ft=""
while read -r a; do
  case $a in '' | '#'*) continue ;; esac
  if [[ $a =~ ^[A-Za-z0-9_,./=:+-]+$ ]]; then ft+="$a "; else ft+="'$a' "; fi
done <"$(dirname "$0")/../../ulfm/ft_mpirun_args.txt"
# Every rank starts under ringmend-rank, which reports how it ended.
rank=$(realpath "$(dirname "$run")/ringmend-rank")
expect 1 0 "dry run: every slot" "# Slurm job" "4 ranks on n1:2,n2:2; fault tolerance on" \
  "mpirun $root$ft--host n1:2,n2:2 --map-by slot --prtemca plm_slurm_args --overlap -np 4 $rank $train"
expect 2 0 "dry run: -n 3" "--host n1:2,n2:1 --map-by slot --prtemca plm_slurm_args --overlap -np 3 $rank $train"
expect 3 0 "dry run: --ranks-per-node 1" "--host n1:1,n2:1 --map-by slot --prtemca plm_slurm_args --overlap -np 2 $rank $train"
expect 4 0 "dry run: -N 1" "--host n1:2 --map-by slot --prtemca plm_slurm_args --overlap -np 2 $rank $train"
expect 5 0 "dry run: --no-ft and pass-through" "fault tolerance OFF (--no-ft)" \
  "mpirun $root--host n1:2 --map-by slot --prtemca plm_slurm_args --overlap -np 2 -x FOO=1 --mca btl_tcp_if_include lo $rank $train --steps=3"
if section 5 | grep -q -- "--with-ft"; then fail "--no-ft still has --with-ft"; fi
expect 6 2 "error: more ranks than slots" "ringmend-run: error: more ranks than slots: 5 ranks asked, the allocation has 4 task slots (n[1-2] with 2(x2) task slots per node; SLURM_TASKS_PER_NODE=2(x2))"
expect 7 2 "error: more nodes than allocated" "ringmend-run: error: --nodes 3: the allocation has 2 usable nodes"
expect 8 2 "error: more ranks per node than slots" "ringmend-run: error: --ranks-per-node 3: node n1 has 2 task slots"
expect 9 2 "error: program missing" "ringmend-run: error: the program '$work/no-such-program' does not exist"
expect 10 2 "error: an mpirun without ULFM" "ringmend-run: error:"
expect 11 2 "error: started inside a job step" "ringmend-run: error: ringmend-run runs inside job step" \
  "batch script or the salloc shell"
finish
