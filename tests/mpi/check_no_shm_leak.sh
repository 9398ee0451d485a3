#!/usr/bin/env bash
# Runs a job whose ranks write their pids to PID_DIR (fault_allreduce
# --pid-dir), then checks that none of its node segments is left in
# /dev/shm: segment names start with "ringmend-<pid of the node leader>-",
# and they must be gone even when leaders were SIGKILLed.
#
#   check_no_shm_leak.sh PID_DIR command [args...]
set -u
pid_dir=$1
shift
rm -rf "$pid_dir" && mkdir -p "$pid_dir"
"$@"
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
leaks=0
for f in "$pid_dir"/*.pid; do
  [ -f "$f" ] || continue
  pid=$(cat "$f")
  for seg in /dev/shm/ringmend-"$pid"-*; do
    [ -e "$seg" ] || continue
    echo "check_no_shm_leak: left behind: $seg" >&2
    leaks=$((leaks + 1))
  done
done
n=$(ls "$pid_dir"/*.pid 2>/dev/null | wc -l)
[ "$n" -gt 0 ] || { echo "check_no_shm_leak: no pid files in $pid_dir: nothing was checked" >&2; exit 1; }
rm -rf "$pid_dir"
[ "$leaks" -eq 0 ] || exit 1
echo "check_no_shm_leak: no segment left by the $n ranks"
