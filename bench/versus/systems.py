"""How the versus benchmark starts one job of each system, in its
recommended configuration, on one node or on two nodes of the local
cluster, and what the table says about that configuration."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
WORKERS = 4

# Each system: how to start one job (a list of commands started together;
# or a dict with a "service" started first and the "parts") and what is
# said about its set-up. With --nodes 2 the job runs on two nodes of the
# local cluster (scripts/cluster.sh: network namespaces on this machine,
# one process table, one clock), 2 workers on each.

CLUSTER = os.path.join(TOP, "scripts", "cluster.sh")
SUBNET = os.environ.get("RINGMEND_CLUSTER_SUBNET", "10.77.0")
NODES = ["n1", "n2"]


def node_addr(node):
    return f"{SUBNET}.{node[1:]}"


def on_node(node, cmd):
    """`cmd` in node's namespace, its gloo traffic on the node's interface."""
    return [CLUSTER, "exec", node, "env", "GLOO_SOCKET_IFNAME=eth1"] + cmd


def ringmend_job(args, spares, membership):
    run = os.path.join(args.build, "slurm", "ringmend-run")
    python = os.path.join(args.build, "python", "ringmend-python")
    cmd = [run, "-q", "--oversubscribe", "-n", str(WORKERS), "--spares", str(spares), "-x", "VERSUS_LOG",
           "-x", "VERSUS_VICTIM", "-x", "VERSUS_KILL_STEP", "-x", f"RINGMEND_MEMBERSHIP={membership}",
           python, os.path.join(HERE, "worker_ringmend.py")]
    if args.nodes == 2:
        # An allocation of the two nodes; ringmend-run places the ranks
        # (and the spare) on them.
        per_node = (WORKERS + spares + 1) // 2
        cmd = ["salloc", "-N", "2", f"--ntasks-per-node={per_node}", "--overcommit", "--immediate=30",
               "--time=10", "--quiet", "-J", "versus"] + cmd
    return [cmd]


def torchrun_job(args, worker_args, restarts, port):
    # TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1: torch 2.15's agent hands its
    # workers the same store in every round of the rendezvous, unprefixed,
    # so restarted workers read the dead ones' gloo addresses and fail
    # (pytorch/pytorch#135712, #167288); without it no restart succeeds here.
    # is_host: the agent that serves the rendezvous store (torchrun guesses
    # it from the host's names, which a namespace node does not change).
    def agent(nodes, per_node, endpoint, local, host):
        return ["env", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1", sys.executable, "-m", "torch.distributed.run",
                f"--nnodes={nodes}", f"--nproc-per-node={per_node}", f"--max-restarts={restarts}",
                "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}:{port}", "--rdzv-id=versus",
                f"--rdzv-conf=is_host={int(host)}", f"--local-addr={local}",
                os.path.join(HERE, "worker_torchrun.py")] + worker_args
    if args.nodes == 1:
        return [agent(1, WORKERS, "127.0.0.1", "127.0.0.1", True)]
    return [on_node(n, agent(2, WORKERS // 2, node_addr(NODES[0]), node_addr(n), n == NODES[0])) for n in NODES]


def torchft_job(args, port):
    bind = "127.0.0.1" if args.nodes == 1 else "0.0.0.0"
    lighthouse_addr = "127.0.0.1" if args.nodes == 1 else f"{SUBNET}.254"  # the head node, on the bridge
    lighthouse = [os.path.join(os.path.dirname(sys.executable), "torchft_lighthouse"), "--min_replicas", "1",
                  "--quorum_tick_ms", "100", "--join_timeout_ms", "10000", "--bind", f"{bind}:{port}"]
    groups = []
    for g in range(WORKERS):
        node = NODES[g * len(NODES) // WORKERS]
        host = "127.0.0.1" if args.nodes == 1 else node_addr(node)
        # Every address a group hands out (its store, its manager) is its
        # node's, so that the other node's groups reach it.
        cmd = ["env", f"REPLICA_GROUP_ID={g}", f"NUM_REPLICA_GROUPS={WORKERS}", f"VERSUS_HOST={host}",
               f"TORCHFT_LIGHTHOUSE=http://{lighthouse_addr}:{port}", sys.executable, "-m",
               "torch.distributed.run", "--nnodes=1", "--nproc-per-node=1", "--max-restarts=3",
               f"--master-addr={host}", f"--master-port={port + 1 + g}", os.path.join(HERE, "worker_torchft.py")]
        groups.append(cmd if args.nodes == 1 else on_node(node, cmd))
    # The lighthouse serves the job; the job ends when every group ends.
    return {"service": lighthouse, "parts": groups}


def dlrover_job(args):
    return [[os.path.join(os.path.dirname(sys.executable), "dlrover-run"), "--standalone",
             f"--nproc_per_node={WORKERS}", "--max-restarts=3", os.path.join(HERE, "worker_dlrover.py")]]


SYSTEMS = {
    "ringmend": {
        "how": "ringmend-run -n 4 (mpirun, ULFM), no spare: the survivors recover inside the step's allreduce "
               "and go on at 3",
        "job": lambda a, p: ringmend_job(a, 0, "mpi"), "kill": True},
    "ringmend+spare": {
        "how": "ringmend-run -n 4 --spares 1 (mpirun, ULFM): the spare is admitted inside the step's allreduce "
               "with the model, optimizer state and step, and computes the dead worker's share",
        "job": lambda a, p: ringmend_job(a, 1, "mpi"), "kill": True},
    "ringmend-native": {
        "how": "the same without spare on ringmend's own membership (RINGMEND_MEMBERSHIP=native, what an srun "
               "launch uses): no MPI in the recovery",
        "job": lambda a, p: ringmend_job(a, 0, "native"), "kill": True},
    "ringmend-native+spare": {
        "how": "the same with a spare on ringmend's own membership",
        "job": lambda a, p: ringmend_job(a, 1, "native"), "kill": True},
    "torchrun": {
        "how": "torchrun --max-restarts=3 --rdzv-backend=c10d, gloo DDP, a checkpoint to local disk after "
               "every step (rank 0, atomic), resumed from at restart, as TorchElastic's docs advise; "
               "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1, without which no restart succeeds with torch 2.15 "
               "(stale store keys, pytorch/pytorch#135712)",
        "job": lambda a, p: torchrun_job(a, [], 3, p), "kill": True},
    "torchft": {
        "how": "torchft 0.2.0: Lighthouse (--min_replicas 1 --quorum_tick_ms 100 --join_timeout_ms 10000, "
               "its README's), 4 replica groups of 1 worker, each under torchrun --max-restarts=3, Manager "
               "+ its DDP + Optimizer over ProcessGroupGloo, live recovery from a healthy group "
               "(PGTransport), the timeouts of its train_ddp.py",
        "job": lambda a, p: torchft_job(a, p), "kill": True},
    "dlrover": {
        "how": "dlrover-run --standalone (local master) --max-restarts=3, gloo DDP, flash checkpoint to "
               "shared memory after every step",
        "job": lambda a, p: dlrover_job(a), "kill": True},
    "gloo": {
        "how": "plain DDP over gloo under torchrun --max-restarts=0, no checkpoint: no fault tolerance, "
               "the failure-free reference",
        "job": lambda a, p: torchrun_job(a, ["--no-checkpoint", "--system", "gloo"], 0, p), "kill": False},
}
