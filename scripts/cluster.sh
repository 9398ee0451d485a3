#!/usr/bin/env bash
# Runs a Slurm cluster of N nodes on this one machine, each node in its own
# network namespace, so that multi-node jobs (`salloc -N 3 ... mpirun ...`,
# `srun -N 3 ...`) cross real interfaces and a node can be lost for real.
#
#   scripts/cluster.sh start            start it (says so if it is already up) and wait until every node is idle
#   scripts/cluster.sh stop             stop the daemons, kill what is left on the nodes, remove the namespaces
#   scripts/cluster.sh status           daemons, node states and addresses; exit 0 when up, 3 when down
#   scripts/cluster.sh restart
#   scripts/cluster.sh kill-node NAME [--silent]  power-off: every process of node NAME (slurmd included)
#                                       SIGKILLed at once; --silent: its link cut first (no FIN/RST leaves it)
#   scripts/cluster.sh cut-node NAME    its link silently drops every packet, both ways; its processes live on
#   scripts/cluster.sh heal-node NAME   link back; a powered-off node is powered on again (its slurmd restarted)
#   scripts/cluster.sh shape LINK RATE [DELAY]   shape a node's link (LINK: a node name or `all`; RATE as tc
#                                       says it, e.g. 1gbit, or `off`; DELAY e.g. 50us, needs the kernel's netem)
#   scripts/cluster.sh exec NAME CMD... run a command on node NAME (in its namespace)
#   scripts/cluster.sh nodes            the node names, one per line
#
# RINGMEND_CLUSTER_DRY_FAULTS=1: kill-node and cut-node say what they would
# do and do nothing, so that a test run with it shows which of its checks
# rest on the fault having happened (every test of a fault must then fail).
#
# Then: export SLURM_CONF=$RINGMEND_CLUSTER_DIR/slurm.conf; sinfo; salloc -N 3 ...
#
# The layout. slurmctld runs in this machine's own namespace (the "head
# node", which is also where salloc and srun are typed); node nI runs its
# slurmd in the namespace ringmend-nI with the address SUBNET.I on eth1, a
# veth whose other end (rm-nI) is a port of the bridge rmbr0 (SUBNET.254,
# slurmctld's address). With RINGMEND_CLUSTER_RAILS=2 each node has a second
# interface eth2 on a second bridge (rmbr1, subnet SUBNET2): two NICs, two
# rails. Everything a job starts on a node (slurmstepd, PRRTE's daemon, the
# ranks) is a child of that node's slurmd, so it lives in the node's
# namespace. The nodes share this machine's file systems, /dev/shm and
# process table, as the nodes of the earlier loopback cluster did; they share
# no network.
#
# kill-node SIGKILLs everything the node runs at once. The machine's kernel
# lives on, as a node's does when its GPU, a driver or the OOM killer takes
# its processes: the peers' TCP connections to it close or reset at once.
# `kill-node NAME --silent` is a power cut as the network sees it: the
# node's link goes dark first, then its processes die, so no FIN or RST
# leaves it and its peers learn of it only by timeouts. cut-node disables the
# node's bridge port(s) (a switch port shut): frames are dropped both ways
# without an error to either side, while the node's processes run on and
# talk among themselves: a node that hangs on the network or is partitioned
# away. Slurm declares a cut or killed node DOWN after SlurmdTimeout (30 s);
# heal-node brings it back (ReturnToService=2).
#
# Environment:
#   RINGMEND_CLUSTER_DIR     configuration, state, spool and logs (default /tmp/ringmend-cluster)
#   RINGMEND_CLUSTER_NODES   number of nodes (default 3)
#   RINGMEND_CLUSTER_PORT    slurmctld port; node nI's slurmd uses PORT+I (default 17810)
#   RINGMEND_CLUSTER_CPUS    CPUs each node advertises (default 16; more than the machine has is fine)
#   RINGMEND_CLUSTER_SUBNET  first three octets of the nodes' /24 (default 10.77.0; rail 2: 10.78.0)
#   RINGMEND_CLUSTER_SUBNET2 the second rail's /24 (default: the third octet plus one)
#   RINGMEND_CLUSTER_RAILS   interfaces per node, 1 or 2 (default 1)
#   RINGMEND_CLUSTER_NETNS   auto (default): namespaces when this user may make them, else every
#                            node on 127.0.0.1 as before (kill-node and cut-node then refuse); 1: must; 0: never
#
# No munge: authentication and credentials are off (auth/none, cred/none),
# which is only fit for a private test machine. Needs Debian's slurmctld,
# slurmd, slurm-client and iproute2 (scripts/bootstrap.sh --with-cluster-tools).
set -euo pipefail

DIR=${RINGMEND_CLUSTER_DIR:-/tmp/ringmend-cluster}
PORT=${RINGMEND_CLUSTER_PORT:-17810}
CPUS=${RINGMEND_CLUSTER_CPUS:-16}
CONF=$DIR/slurm.conf
# What `start` chose (node count, namespaces, subnets) is kept here, so that
# the other verbs act on the cluster that runs, whatever their environment.
LAYOUT_FILE=$DIR/layout
WAIT_S=30

say() { echo "cluster: $*"; }
die() {
  echo "cluster: $*" >&2
  exit 1
}

if [ -f "$LAYOUT_FILE" ] && [ "${1:-}" != start ] && [ "${1:-}" != restart ]; then
  # shellcheck source=/dev/null
  . "$LAYOUT_FILE"
else
  NNODES=${RINGMEND_CLUSTER_NODES:-3}
  SUBNET=${RINGMEND_CLUSTER_SUBNET:-10.77.0}
  SUBNET2=${RINGMEND_CLUSTER_SUBNET2:-${SUBNET%.*}.$((${SUBNET##*.} + 1))}
  RAILS=${RINGMEND_CLUSTER_RAILS:-1}
  NETNS=${RINGMEND_CLUSTER_NETNS:-auto}
fi
[[ "$NNODES" =~ ^[1-9][0-9]?$ ]] && [ "$NNODES" -le 60 ] || die "RINGMEND_CLUSTER_NODES must be 1..60, not '$NNODES'"
[[ "$RAILS" =~ ^[12]$ ]] || die "RINGMEND_CLUSTER_RAILS must be 1 or 2, not '$RAILS'"
for s in "$SUBNET" "$SUBNET2"; do
  [[ "$s" =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || die "a subnet is given as its first three octets (e.g. 10.77.0), not '$s'"
done
NODES=()
for i in $(seq 1 "$NNODES"); do NODES+=("n$i"); done
BRIDGES=(rmbr0 rmbr1)

netns_of() { echo "ringmend-$1"; }
node_index() { echo "${1#n}"; }
is_node() {
  local n
  for n in "${NODES[@]}"; do [ "$n" = "$1" ] && return 0; done
  return 1
}
need_node() {
  [ -n "${1:-}" ] || die "name a node (${NODES[*]})"
  is_node "$1" || die "no node '$1' in this cluster (nodes: ${NODES[*]})"
}
# The address of node $1 on rail $2 (0 or 1).
node_addr() {
  local i
  i=$(node_index "$1")
  if [ "$NETNS" = 1 ]; then
    if [ "${2:-0}" = 1 ]; then echo "$SUBNET2.$i"; else echo "$SUBNET.$i"; fi
  else echo 127.0.0.1; fi
}
head_addr() { if [ "$NETNS" = 1 ]; then echo "$SUBNET.254"; else echo 127.0.0.1; fi; }
# Runs "$@" on node $1: in its namespace, or here when there are none.
# Not `ip netns exec`: that mounts a fresh /sys without the cgroup
# hierarchies under it, and slurmd will not start without them. This enters
# the node's network namespace and a mount namespace of its own, where a
# sysfs made inside the node's network namespace (so that /sys/class/net
# lists the node's interfaces, which UCX and hwloc read) is mounted over
# /sys with this machine's cgroup tree moved under it.
on_node() {
  local node=$1
  shift
  if [ "$NETNS" != 1 ]; then
    "$@"
    return
  fi
  # shellcheck disable=SC2016
  nsenter --net="/run/netns/$(netns_of "$node")" unshare --mount --propagation slave sh -c '
    d=$(mktemp -d) && mount --rbind /sys/fs/cgroup "$d" && mount -t sysfs sysfs /sys &&
      mount --move "$d" /sys/fs/cgroup && rmdir "$d" && exec "$@"' sh "$@"
}

need_slurm() {
  local missing=()
  for c in slurmctld slurmd sinfo scontrol salloc; do
    command -v "$c" >/dev/null 2>&1 || missing+=("$c")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    die "Slurm is not installed (missing: ${missing[*]}); run scripts/bootstrap.sh --with-cluster-tools"
  fi
}

# pid of a daemon of this cluster if it runs, empty otherwise. The pid file
# alone is not trusted: the process must be that daemon with this configuration.
daemon_pid() {
  local pidfile=$1 name=$2 pid
  [ -f "$pidfile" ] || return 0
  pid=$(tr -dc '0-9' <"$pidfile")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 0
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] || return 0
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$CONF" || return 0
  echo "$pid"
}
ctld_pid() { daemon_pid "$DIR/run/slurmctld.pid" slurmctld; }
slurmd_pid() { daemon_pid "$DIR/run/slurmd-$1.pid" slurmd; }

running_count() {
  local n=0
  [ -n "$(ctld_pid)" ] && n=$((n + 1))
  for node in "${NODES[@]}"; do [ -n "$(slurmd_pid "$node")" ] && n=$((n + 1)); done
  echo "$n"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# --- network namespaces -------------------------------------------------

# Can this user make namespaces, veths and bridges? Tried with a throwaway
# namespace, so that `auto` falls back cleanly where it cannot.
netns_possible() {
  command -v ip >/dev/null 2>&1 || return 1
  local probe=ringmend-probe-$$ ok=1
  ip netns add "$probe" 2>/dev/null || return 1
  ip -n "$probe" link add rm-probe type veth peer name rm-probe2 2>/dev/null || ok=0
  ip netns del "$probe" 2>/dev/null || true
  [ "$ok" = 1 ]
}

bridge_up() {
  local br=$1 addr=$2
  ip link show "$br" >/dev/null 2>&1 || ip link add "$br" type bridge
  ip addr replace "$addr/24" dev "$br"
  ip link set "$br" up
}

# Host-side name of node $1's veth on rail $2 (at most 15 characters).
veth_of() { if [ "${2:-0}" = 1 ]; then echo "rm2-$1"; else echo "rm-$1"; fi; }

make_node_netns() {
  local node=$1 ns rail dev
  ns=$(netns_of "$node")
  ip netns del "$ns" 2>/dev/null || true
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  for rail in $(seq 0 $((RAILS - 1))); do
    dev=eth$((rail + 1))
    ip link del "$(veth_of "$node" "$rail")" 2>/dev/null || true
    ip link add "$(veth_of "$node" "$rail")" type veth peer name "$dev" netns "$ns"
    ip link set "$(veth_of "$node" "$rail")" master "${BRIDGES[$rail]}" up
    ip -n "$ns" addr add "$(node_addr "$node" "$rail")/24" dev "$dev"
    ip -n "$ns" link set "$dev" up
  done
  # The head node's other addresses (this machine's own) through rail 1.
  ip -n "$ns" route add default via "$SUBNET.254"
}

remove_netns() {
  local node ns
  for node in "${NODES[@]}"; do
    ns=$(netns_of "$node")
    ip netns list 2>/dev/null | grep -qw "^$ns" || continue
    kill_netns_processes "$ns"
    ip netns del "$ns" 2>/dev/null || true
  done
  for br in "${BRIDGES[@]}"; do ip link del "$br" 2>/dev/null || true; done
}

# SIGKILLs every process in namespace $1 until none is left (a process may
# fork while the first ones die); bounded.
kill_netns_processes() {
  local ns=$1 pids tries=0
  while pids=$(ip netns pids "$ns" 2>/dev/null) && [ -n "$pids" ]; do
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    tries=$((tries + 1))
    [ "$tries" -lt 50 ] || { echo "cluster: processes left in $ns: $pids" >&2; return 1; }
    sleep 0.02
  done
}

# --- configuration ------------------------------------------------------

write_config() {
  mkdir -p "$DIR/state" "$DIR/log" "$DIR/run"
  # One TmpFS per node: the nodes share /tmp, where srun's PMIx plugin
  # would otherwise create the same per-step directory twice.
  for node in "${NODES[@]}"; do mkdir -p "$DIR/spool/$node" "$DIR/tmp/$node"; done
  : >"$DIR/plugstack.conf"
  local user host
  user=$(id -un)
  host=$(hostname -s)
  {
    echo "# Generated by scripts/cluster.sh: ${#NODES[@]} nodes on one machine."
    echo "ClusterName=ringmend"
    echo "SlurmctldHost=$host($(head_addr))"
    echo "SlurmctldPort=$PORT"
    echo "SlurmUser=$user"
    echo "SlurmdUser=$user"
    echo "TmpFS=$DIR/tmp/%n"
    echo "AuthType=auth/none"
    echo "CredType=cred/none"
    echo "MpiDefault=none"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "SwitchType=switch/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "SchedulerType=sched/backfill"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "PlugStackConfig=$DIR/plugstack.conf"
    echo "SlurmdParameters=config_overrides"
    echo "ReturnToService=2"
    echo "KillWait=5"
    echo "MinJobAge=5"
    echo "InactiveLimit=0"
    echo "SlurmctldTimeout=30"
    echo "SlurmdTimeout=30"
    echo "StateSaveLocation=$DIR/state"
    echo "SlurmdSpoolDir=$DIR/spool/%n"
    echo "SlurmctldPidFile=$DIR/run/slurmctld.pid"
    echo "SlurmdPidFile=$DIR/run/slurmd-%n.pid"
    echo "SlurmctldLogFile=$DIR/log/slurmctld.log"
    echo "SlurmdLogFile=$DIR/log/slurmd-%n.log"
    echo "SlurmctldDebug=info"
    echo "SlurmdDebug=info"
    local node
    for node in "${NODES[@]}"; do
      echo "NodeName=$node NodeHostname=$host NodeAddr=$(node_addr "$node") Port=$((PORT + $(node_index "$node"))) CPUs=$CPUS RealMemory=4000 State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=n[1-${#NODES[@]}] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
  } >"$CONF"
}

write_layout() {
  {
    echo "# Written by scripts/cluster.sh start: the cluster that runs."
    echo "NNODES=$NNODES"
    echo "SUBNET=$SUBNET"
    echo "SUBNET2=$SUBNET2"
    echo "RAILS=$RAILS"
    echo "NETNS=$NETNS"
  } >"$LAYOUT_FILE"
}

node_states() { SLURM_CONF=$CONF timeout -k 2 5 sinfo -h -N -o '%N %T' 2>/dev/null | sort -u; }

# wait_nodes STATES NODE...: waits until every NODE is in one of STATES
# (Slurm's short names, e.g. idle or idle|mix|alloc|comp; a node that does
# not answer carries a *, so it never matches); a node left DOWN/DRAINED
# (from an earlier run's state, or a fault) is resumed. Bounded by WAIT_S.
wait_nodes() {
  local want=$1 deadline=$((SECONDS + WAIT_S)) states ok resumed_at=-100 n
  shift
  while :; do
    states=$(SLURM_CONF=$CONF timeout -k 2 5 sinfo -h -N -o '%N %t' 2>/dev/null | sort -u || true)
    ok=0
    for n in "$@"; do grep -qE "^$n ($want)$" <<<"$states" && ok=$((ok + 1)); done
    [ "$ok" -eq $# ] && return 0
    if grep -qiE 'down|drain|fail' <<<"$states" && [ $((SECONDS - resumed_at)) -ge 3 ]; then
      for n in "$@"; do
        SLURM_CONF=$CONF timeout -k 2 5 scontrol update nodename="$n" state=resume >/dev/null 2>&1 || true
      done
      resumed_at=$SECONDS
    fi
    if [ $SECONDS -ge $deadline ]; then
      echo "cluster: nodes $* not $want after ${WAIT_S} s:" >&2
      echo "${states:-(sinfo gave no answer)}" | sed 's/^/  /' >&2
      echo "cluster: logs in $DIR/log/" >&2
      tail -n 5 "$DIR"/log/*.log 2>/dev/null | sed 's/^/  /' >&2 || true
      return 1
    fi
    sleep 0.3
  done
}
wait_idle() { wait_nodes idle "${NODES[@]}"; }

usage_hint() {
  echo "  export SLURM_CONF=$CONF"
  echo "  sinfo; salloc -N ${#NODES[@]} -n $((2 * ${#NODES[@]})) --overcommit ...   (scripts/cluster.sh stop to end it)"
}

start_slurmd() {
  local node=$1
  on_node "$node" slurmd -f "$CONF" -N "$node" || die "slurmd $node did not start; see $DIR/log/slurmd-$node.log"
}

start() {
  need_slurm
  local up
  up=$(running_count)
  if [ -f "$LAYOUT_FILE" ] && [ "$up" -eq $((1 + ${#NODES[@]})) ]; then
    say "already running (SLURM_CONF=$CONF)"
    wait_idle || exit 1
    usage_hint
    return 0
  fi
  if [ -f "$LAYOUT_FILE" ] || [ "$up" -gt 0 ]; then
    say "partly running ($up of $((1 + ${#NODES[@]})) daemons); restarting"
    stop
  fi
  case "$NETNS" in
    0) ;;
    1) netns_possible || die "RINGMEND_CLUSTER_NETNS=1, but this user cannot make network namespaces (needs root or CAP_NET_ADMIN and iproute2)" ;;
    auto)
      if netns_possible; then NETNS=1; else
        NETNS=0
        say "network namespaces cannot be made here: every node on 127.0.0.1 (kill-node, cut-node and shape will refuse)"
      fi
      ;;
    *) die "RINGMEND_CLUSTER_NETNS must be auto, 1 or 0, not '$NETNS'" ;;
  esac
  [ "$NETNS" = 1 ] || [ "$RAILS" = 1 ] || die "two rails need network namespaces"
  port_busy "$PORT" && die "port $PORT on 127.0.0.1 is in use by another program; choose another with RINGMEND_CLUSTER_PORT=N"
  if [ "$NETNS" = 0 ]; then
    for p in $(seq $((PORT + 1)) $((PORT + ${#NODES[@]}))); do
      port_busy "$p" && die "port $p on 127.0.0.1 is in use by another program; choose others with RINGMEND_CLUSTER_PORT=N (uses N..N+${#NODES[@]})"
    done
  fi
  mkdir -p "$DIR"
  if [ "$NETNS" = 1 ]; then
    ip -br addr 2>/dev/null | grep -qE " ($SUBNET|$SUBNET2)\.[0-9]+/" &&
      ! ip link show rmbr0 >/dev/null 2>&1 &&
      die "this machine already has an address in $SUBNET.0/24 or $SUBNET2.0/24; choose other subnets with RINGMEND_CLUSTER_SUBNET"
    bridge_up rmbr0 "$SUBNET.254"
    [ "$RAILS" = 1 ] || bridge_up rmbr1 "$SUBNET2.254"
    for node in "${NODES[@]}"; do make_node_netns "$node"; done
  fi
  write_layout
  write_config
  # -c: start from a clean state (no jobs or node states left from an earlier run).
  slurmctld -c -f "$CONF" || die "slurmctld did not start; see $DIR/log/slurmctld.log"
  for node in "${NODES[@]}"; do start_slurmd "$node"; done
  if ! wait_idle; then
    stop >&2 || true
    die "the cluster did not come up"
  fi
  if [ "$NETNS" = 1 ]; then
    say "running: ${NODES[*]} idle, each in its own network namespace ($SUBNET.1-${#NODES[@]}$([ "$RAILS" = 1 ] || echo " and $SUBNET2.1-${#NODES[@]}"); conf, state and logs in $DIR)"
  else
    say "running: ${NODES[*]} idle, all on 127.0.0.1 (conf, state and logs in $DIR)"
  fi
  usage_hint
}

stop_pid() {
  local pid=$1 what=$2 deadline
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  deadline=$((SECONDS + 10))
  while [ -d "/proc/$pid" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  if [ -d "/proc/$pid" ]; then
    echo "cluster: $what ($pid) did not stop in 10 s; SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
}

stop() {
  if [ ! -f "$CONF" ] || { [ "$(running_count)" -eq 0 ] && [ ! -f "$LAYOUT_FILE" ]; }; then
    say "not running"
    return 0
  fi
  # End the jobs first so that their steps do not outlive the daemons.
  if [ -n "$(ctld_pid)" ] && command -v scancel >/dev/null; then
    SLURM_CONF=$CONF timeout -k 2 5 scancel --quiet --user "$(id -un)" 2>/dev/null || true
  fi
  for node in "${NODES[@]}"; do stop_pid "$(slurmd_pid "$node")" "slurmd $node"; done
  stop_pid "$(ctld_pid)" slurmctld
  # srun clients of the tests' jobs (named ringmend-*) whose steps were on
  # a node cut or powered off wait for a controller that is gone, for ever.
  pkill -KILL -f -- "srun .*-J ringmend-" 2>/dev/null || true
  # Whatever a node still runs (steps of a cut node, say) goes with it.
  [ "$NETNS" = 1 ] && remove_netns
  rm -f "$LAYOUT_FILE" "$DIR"/run/cut-* "$DIR"/run/shape-*
  say "stopped"
}

status() {
  local rc=0
  show() {
    if [ -n "$2" ]; then echo "$1: running (pid $2)"; else echo "$1: not running"; rc=3; fi
  }
  show slurmctld "$(ctld_pid)"
  for node in "${NODES[@]}"; do
    local extra=""
    [ -f "$DIR/run/cut-$node" ] && extra=" (cut)"
    [ "$NETNS" = 1 ] && extra=" [$(netns_of "$node") $(node_addr "$node")$([ "$RAILS" = 1 ] || echo " $(node_addr "$node" 1)")]$extra"
    show "slurmd $node$extra" "$(slurmd_pid "$node")"
  done
  if [ -n "$(ctld_pid)" ]; then
    echo "nodes:"
    node_states | sed 's/^/  /'
    echo "SLURM_CONF=$CONF"
  fi
  return "$rc"
}

# --- faults -------------------------------------------------------------

need_netns() {
  [ -f "$LAYOUT_FILE" ] || die "the cluster is not running (scripts/cluster.sh start)"
  [ "$NETNS" = 1 ] || die "$1 needs nodes in network namespaces; this cluster runs every node on 127.0.0.1 (RINGMEND_CLUSTER_NETNS=0, or namespaces could not be made)"
}

# A dry run of a fault (RINGMEND_CLUSTER_DRY_FAULTS=1): said, not done.
dry_fault() {
  [ "${RINGMEND_CLUSTER_DRY_FAULTS:-0}" = 1 ] || return 1
  say "$1 (dry run: RINGMEND_CLUSTER_DRY_FAULTS=1, nothing done)"
}

kill_node() {
  local node=$1 silent=${2:-} n
  need_netns kill-node
  need_node "$node"
  dry_fault "$node powered off" && return 0
  case "$silent" in
    "") ;;
    --silent) cut_node "$node" >/dev/null ;;
    *) die "kill-node NAME [--silent], not '$silent'" ;;
  esac
  n=$(ip netns pids "$(netns_of "$node")" 2>/dev/null | wc -l)
  kill_netns_processes "$(netns_of "$node")" || die "could not power $node off"
  touch "$DIR/run/off-$node"
  say "$node powered off ($n processes SIGKILLed)"
}

set_ports_state() {
  local node=$1 state=$2 rail
  for rail in $(seq 0 $((RAILS - 1))); do
    bridge link set dev "$(veth_of "$node" "$rail")" state "$state"
  done
}

cut_node() {
  local node=$1
  need_netns cut-node
  need_node "$node"
  dry_fault "$node cut off" && return 0
  # Port state 0 (disabled): the bridge drops every frame from and to the
  # port, silently (no carrier change, no ICMP, no error to a sender).
  set_ports_state "$node" 0
  touch "$DIR/run/cut-$node"
  say "$node cut off (its link drops every packet; its processes run on)"
}

heal_node() {
  local node=$1 did=()
  need_netns heal-node
  need_node "$node"
  if [ -f "$DIR/run/cut-$node" ]; then
    set_ports_state "$node" 3 # forwarding
    rm -f "$DIR/run/cut-$node"
    did+=("link back")
  fi
  if [ -z "$(slurmd_pid "$node")" ]; then
    rm -f "$DIR/run/off-$node"
    start_slurmd "$node"
    did+=("powered on")
  fi
  if [ ${#did[@]} -eq 0 ]; then
    say "$node was neither cut nor off"
    return 0
  fi
  # Slurm may have declared it DOWN meanwhile: resume it, and wait until it
  # answers (idle, or still running a job that survived the fault).
  wait_nodes 'idle|mix|alloc|comp' "$node" || die "$node did not come back (see $DIR/log/slurmd-$node.log)"
  local what="${did[0]}"
  [ ${#did[@]} -lt 2 ] || what+=", ${did[1]}"
  say "$node healed ($what); $(node_states | sed -n "s/^$node //p")"
}

# tc on both ends of each of the node's links: the host side shapes what the
# node receives, the node side what it sends.
shape_one() {
  local node=$1 rate=$2 delay=$3 rail ns dev
  ns=$(netns_of "$node")
  for rail in $(seq 0 $((RAILS - 1))); do
    dev=eth$((rail + 1))
    tc qdisc del dev "$(veth_of "$node" "$rail")" root 2>/dev/null || true
    ip netns exec "$ns" tc qdisc del dev "$dev" root 2>/dev/null || true
    [ "$rate" = off ] && continue
    local q
    if [ -n "$delay" ]; then
      q=(netem rate "$rate" delay "$delay" limit 100000)
    else
      # tbf: a bucket of 1 ms at the rate (at least 64 KiB) and a queue of
      # 20 ms, so that TCP sees a link, not a policer.
      q=(tbf rate "$rate" burst "$(shape_burst "$rate")" latency 20ms)
    fi
    tc qdisc add dev "$(veth_of "$node" "$rail")" root "${q[@]}" || return 1
    ip netns exec "$ns" tc qdisc add dev "$dev" root "${q[@]}" || return 1
  done
}

# Bytes sent in 1 ms at rate $1 (tc's units), at least 64 KiB.
shape_burst() {
  local r=$1 num unit bps
  num=${r%%[a-zA-Z]*}
  unit=${r#"$num"}
  case "${unit,,}" in
    bit) bps=$num ;;
    kbit) bps=$((num * 1000)) ;;
    mbit) bps=$((num * 1000000)) ;;
    gbit) bps=$((num * 1000000000)) ;;
    *) die "a rate is a whole number with bit, kbit, mbit or gbit (e.g. 5gbit), not '$r'" ;;
  esac
  local b=$((bps / 8 / 1000))
  [ "$b" -ge 65536 ] || b=65536
  echo "$b"
}

shape() {
  local link=${1:-} rate=${2:-} delay=${3:-} targets=() node
  need_netns shape
  [ -n "$link" ] && [ -n "$rate" ] || die "usage: scripts/cluster.sh shape LINK RATE [DELAY]  (LINK: a node or all; RATE: e.g. 2gbit, or off)"
  if [ "$link" = all ]; then targets=("${NODES[@]}"); else
    need_node "$link"
    targets=("$link")
  fi
  [ "$rate" = off ] || shape_burst "$rate" >/dev/null
  [[ -z "$delay" || "$delay" =~ ^[0-9]+(us|ms)$ ]] || die "a delay is a whole number with us or ms (e.g. 50us), not '$delay'"
  if [ -n "$delay" ] && ! tc qdisc add dev rmbr0 root netem delay 0us 2>/dev/null; then
    die "this kernel has no netem queue (CONFIG_NET_SCH_NETEM): links can get a rate here, not a delay"
  fi
  [ -z "$delay" ] || tc qdisc del dev rmbr0 root 2>/dev/null || true
  for node in "${targets[@]}"; do
    shape_one "$node" "$rate" "$delay" || die "tc refused to shape $node's link"
    if [ "$rate" = off ]; then rm -f "$DIR/run/shape-$node"; else echo "$rate $delay" >"$DIR/run/shape-$node"; fi
  done
  if [ "$rate" = off ]; then say "${targets[*]}: links unshaped"; else
    say "${targets[*]}: each link $rate each way${delay:+, $delay delay}"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status)
    need_slurm
    status
    ;;
  restart)
    need_slurm
    stop
    start
    ;;
  kill-node) kill_node "${2:-}" "${3:-}" ;;
  cut-node) cut_node "${2:-}" ;;
  heal-node) heal_node "${2:-}" ;;
  shape)
    shift
    shape "$@"
    ;;
  exec)
    [ -f "$LAYOUT_FILE" ] || die "the cluster is not running (scripts/cluster.sh start)"
    need_node "${2:-}"
    node=$2
    shift 2
    [ $# -gt 0 ] || die "usage: scripts/cluster.sh exec NAME CMD..."
    on_node "$node" "$@"
    ;;
  nodes) printf '%s\n' "${NODES[@]}" ;;
  *)
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
