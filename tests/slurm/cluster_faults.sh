#!/usr/bin/env bash
# The test bed's faults do what they say (scripts/cluster.sh): on the
# namespace cluster, a job step runs on n3 and listens there;
#   cut-node n3   a connection from n1 to n3 gets no answer (silently: the
#                 connect times out, no refusal), while the step on n3 lives;
#   heal-node n3  the same connection is accepted again;
#   kill-node n3  every process of n3 (slurmd, the step) is gone at once,
#                 and the node comes back with heal-node (and runs a step);
#   shape n3 RATE a transfer from n1 to n3 takes at least size/RATE;
# and bad input (no such node, a bad rate, a delay without netem) is a
# clear error. Every node is healed at the end, whatever happened.
#   cluster_faults.sh REPO_ROOT
set -u
top=$1
. "$(dirname "$0")/cluster_lib.sh"
need_cluster
cluster=$top/scripts/cluster.sh
layout=${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}/layout
grep -qx "NETNS=1" "$layout" 2>/dev/null ||
  skip "the cluster runs its nodes on 127.0.0.1, not in network namespaces (needs root or CAP_NET_ADMIN)"
[ "$("$cluster" nodes | wc -l)" -ge 3 ] || skip "the cluster has fewer than 3 nodes"
command -v python3 >/dev/null || skip "python3 is not installed"
trap 'for n in $("$cluster" nodes); do "$cluster" heal-node "$n" >/dev/null 2>&1; done
  timeout -k 2 10 scancel -n "ringmend-$test_name" 2>/dev/null; cleanup_jobs' EXIT
n3_addr=$(. "$layout"; echo "$SUBNET.3")

# A TCP connect from n1 to n3's port $1 within $2 s: prints connected,
# refused or timeout.
probe() {
  "$cluster" exec n1 python3 -c "
import socket, sys
s = socket.socket(); s.settimeout($2)
try:
    s.connect(('$n3_addr', $1)); print('connected')
except socket.timeout: print('timeout')
except ConnectionRefusedError: print('refused')
except OSError as e: print('error', e)"
}

# A step on n3 that listens on port 29999 and answers every connection.
timeout -k 2 120 srun -w n3 -N 1 -n 1 -J "ringmend-$test_name" python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', 29999)); s.listen(16)
while True:
    c, _ = s.accept(); c.close()" >"$work/step.out" 2>&1 &
step_srun=$!
for _ in $(seq 1 100); do [ "$(probe 29999 1)" = connected ] && break; sleep 0.1; done
[ "$(probe 29999 1)" = connected ] && pass "a step on n3 answers from n1" || fail "the step on n3 never answered"
[ "$(probe 29998 1)" = refused ] && pass "a closed port of n3 refuses" || fail "a closed port of n3 does not refuse"

out=$("$cluster" cut-node n3 2>&1)
echo "$out"
[ "$(probe 29999 1)" = timeout ] && pass "cut-node: a connect to n3 times out (no answer, no refusal)" ||
  fail "cut-node: n3 still answers"
[ "$(probe 29998 1)" = timeout ] && pass "cut-node: even a closed port gives no refusal" || fail "cut-node: a refusal came back"
n3_pids=$(ip netns pids ringmend-n3 | wc -l)
[ "$n3_pids" -ge 2 ] && pass "cut-node: n3's processes live on ($n3_pids)" || fail "cut-node: n3 has $n3_pids processes"
kill -0 "$step_srun" 2>/dev/null && pass "cut-node: the step's srun waits on" || fail "cut-node: the step's srun ended"
out=$("$cluster" heal-node n3 2>&1)
echo "$out"
[ "$(probe 29999 2)" = connected ] && pass "heal-node: n3 answers again" || fail "heal-node: n3 does not answer"

out=$("$cluster" kill-node n3 2>&1)
echo "$out"
left=$(ip netns pids ringmend-n3 | wc -l)
[ "$left" -eq 0 ] && pass "kill-node: no process left on n3" || fail "kill-node: $left processes left on n3"
grep -q "slurmd n3.*not running" <<<"$("$cluster" status 2>&1)" && pass "kill-node: n3's slurmd is gone" ||
  fail "kill-node: n3's slurmd runs"
[ "$(probe 29999 1)" = refused ] && pass "kill-node: the listener died with its node (its kernel refuses)" ||
  fail "kill-node: n3's port does not refuse"
# The step's srun is not told: like on a real cluster, it waits until
# slurmctld declares the node down (SlurmdTimeout), which this test does
# not wait for.
kill -9 "$step_srun" 2>/dev/null
out=$("$cluster" heal-node n3 2>&1)
echo "$out"
grep -q "powered on" <<<"$out" && pass "heal-node: n3 powered on" || fail "heal-node: n3 not powered on"
if timeout -k 2 30 srun -w n3 -N 1 -n 1 true; then pass "heal-node: n3 runs a step again"; else fail "heal-node: n3 runs no step"; fi

out=$("$cluster" kill-node n3 --silent 2>&1)
echo "$out"
[ "$(probe 29999 1)" = timeout ] && pass "kill-node --silent: n3 neither answers nor refuses" || fail "kill-node --silent: n3 is not silent"
"$cluster" heal-node n3 >/dev/null 2>&1 || fail "heal-node after kill-node --silent failed"

# Shaping: 4 MB from n1 to n3 at 100 Mbit/s takes >= 0.32 s; unshaped, far less.
xfer_s() {
  timeout -k 2 60 srun -w n3 -N 1 -n 1 python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', 29997)); s.listen(1)
c, _ = s.accept()
while c.recv(1 << 20): pass" &
  local sink=$!
  "$cluster" exec n1 python3 -c "
import socket, time
for _ in range(100):
    try: s = socket.create_connection(('$n3_addr', 29997), timeout=1); break
    except OSError: time.sleep(0.1)
buf = b'x' * (1 << 20); t = time.time()
for _ in range(4): s.sendall(buf)
s.shutdown(socket.SHUT_WR); s.recv(1)
print('%.3f' % (time.time() - t))"
  wait "$sink"
}
"$cluster" shape n3 100mbit || fail "shape n3 100mbit refused"
shaped=$(xfer_s)
"$cluster" shape n3 off
plain=$(xfer_s)
echo "4 MB from n1 to n3: ${shaped} s at 100mbit, ${plain} s unshaped"
python3 -c "import sys; sys.exit(0 if float('$shaped') >= 0.30 and float('$plain') < float('$shaped') / 2 else 1)" &&
  pass "shape: 100mbit holds a transfer to the rate" || fail "shape: ${shaped} s shaped, ${plain} s plain"

# Bad input: a clear error, exit status 1, nothing changed.
bad() {
  local what=$1 want=$2 out rc
  shift 2
  out=$("$cluster" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ] && grep -q -- "$want" <<<"$out"; then pass "$what: '$out'"; else fail "$what: status $rc, '$out'"; fi
}
bad "kill-node of no such node" "no node 'n9'" kill-node n9
bad "cut-node without a name" "name a node" cut-node
bad "a bad rate" "a rate is a whole number" shape n2 fast
bad "a bad delay" "a delay is a whole number" shape n2 1gbit soon
if grep -q "CONFIG_NET_SCH_NETEM=y" <(zcat /proc/config.gz 2>/dev/null); then
  pass "this kernel has netem (delays are possible; not tested here)"
else
  bad "a delay without netem" "no netem" shape n2 1gbit 50us
fi
finish
