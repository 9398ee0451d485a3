"""The versus benchmark's driver: the same DDP job (examples/ddp_model.py,
4 workers on this machine), the same SIGKILL from outside at a fixed step,
run under each fault-tolerant system in its recommended configuration,
and one table.

For each system: one job without failure (its step time and its final
model, the reference), then --jobs jobs in which the worker of rank
--victim is SIGKILLed as soon as it logged step --kill-step - 1 (so, inside
step --kill-step). From the workers' step logs (step_log.py, one monotonic
clock for every process of the machine):

  death -> next step   the kill to the first completion of a step beyond
                       the last one completed before the kill (steps redone
                       from a checkpoint count as lost time)
  steps redone         steps completed before the kill and again after it
  full size again      the kill to the first step with as many workers as
                       at the start (a spare or a restarted worker in)
  step time            median interval between rank 0's steps, without
                       failure (steps 10 on)
  model                the final model against the system's own job without
                       failure: max |w - w_ref|, and the final loss

Writes versus.json, versus.md and versus.png into --out.
"""

import argparse
import collections
import glob
import importlib.metadata
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
WORKERS = 4


# ----------------------------------------------------------------- systems
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


# ------------------------------------------------------------- one job

# One worker process's log (step_log.py): steps are (step, t, workers).
WorkerLog = collections.namedtuple("WorkerLog", "pid rank start steps final waiting")


class Job:
    """One run of a system: its processes, its log folder, the kill."""

    def __init__(self, args, system, index, kill):
        self.args, self.system, self.kill = args, system, kill
        self.dir = tempfile.mkdtemp(prefix=f"versus-{system}-{index}-", dir=args.work)
        self.out = open(os.path.join(self.dir, "output.txt"), "w")
        self.port = 29400 + 20 * (index % 40)
        self.killed = None  # (pid, monotonic time of the kill)
        self.status = None
        self.timed_out = False

    def start(self, spec):
        env = dict(os.environ, VERSUS_LOG=self.dir, PYTHONWARNINGS="ignore::FutureWarning",
                   VERSUS_VICTIM=str(self.args.victim if self.kill else -1), VERSUS_KILL_STEP=str(self.args.kill_step))
        if self.args.nodes == 2:
            env.setdefault("SLURM_CONF", os.path.join(os.environ.get("RINGMEND_CLUSTER_DIR", "/tmp/ringmend-cluster"),
                                                      "slurm.conf"))
        spec = spec if isinstance(spec, dict) else {"service": None, "parts": spec}
        common = ["--steps", str(self.args.steps)]
        self.service = None
        if spec["service"]:
            self.service = subprocess.Popen(spec["service"], stdout=self.out, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)
            time.sleep(0.5)
        self.parts = [subprocess.Popen(cmd + common, stdout=self.out, stderr=subprocess.STDOUT, env=env,
                                       start_new_session=True) for cmd in spec["parts"]]

    def logs(self):
        """A WorkerLog per process."""
        found = []
        for path in glob.glob(os.path.join(self.dir, "*.log")):
            pid = rank = start = None
            steps, final, waiting = [], None, False
            with open(path) as f:
                for line in f:
                    w = line.split()
                    if not line.endswith("\n"):
                        break  # a line the kill cut short
                    if w[0] == "start":
                        pid, rank, start = int(w[1]), int(w[2]), float(w[3])
                    elif w[0] == "step":
                        steps.append((int(w[1]), float(w[2]), int(w[3])))
                    elif w[0] == "waiting":
                        waiting = True
                    elif w[0] == "final":
                        final = float(w[1])
            found.append(WorkerLog(pid, rank, start, steps, final, waiting))
        return found

    def watch(self):
        """Waits for the job's end; kills the victim at its step."""
        deadline = time.monotonic() + self.args.timeout
        while any(p.poll() is None for p in self.parts):
            if time.monotonic() > deadline:
                self.timed_out = True
                break
            if self.kill and self.killed is None:
                self.try_kill()
            time.sleep(0.001 if self.kill and self.killed is None else 0.05)
        for p in self.parts + ([self.service] if self.service else []):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        self.status = [p.returncode for p in self.parts]
        self.out.close()

    def try_kill(self):
        for log in self.logs():
            if log.waiting:
                pid = log.pid
                t = time.monotonic()
                os.kill(pid, signal.SIGKILL)
                self.killed = (pid, t)
                return


def process_gone(pid, within):
    """Whether `pid` is dead (gone, or a zombie its parent did not reap yet)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.01)
    return False


# ------------------------------------------------------------- measures

def step_time(logs, last):
    """Median interval between the lowest rank's steps 10 to `last` (in
    the logs of every process that had that rank)."""
    lowest = min(l.rank for l in logs if l.steps)
    t = sorted(t for l in logs if l.rank == lowest for s, t, _ in l.steps if 10 <= s <= last)
    gaps = [b - a for a, b in zip(t, t[1:])]
    return statistics.median(gaps) if gaps else None


def job_end(logs):
    """When the job's workers completed its last step; a worker started
    after the first of them (one that failed at exit, started again by its
    agent, training again) is not the job's: late_workers()."""
    last = max((s for l in logs for s, _, _ in l.steps), default=-1)
    first = min((t for l in logs for s, t, _ in l.steps if s == last), default=float("inf"))
    return max((t for l in logs if l.start <= first for s, t, _ in l.steps if s == last), default=float("inf"))


def late_workers(logs):
    last = max((s for l in logs for s, _, _ in l.steps), default=-1)
    first = min((t for l in logs for s, t, _ in l.steps if s == last), default=float("inf"))
    return [l for l in logs if l.start > first]


def after_kill(logs, t_kill, kill_step):
    """death -> next step, steps redone, full size again (seconds or None).
    The victim died in step `kill_step`, which nobody could finish without
    its gradients or a recovery. A step is redone when a rank completes it
    a second time (a restarted worker resuming from an older state)."""
    events = [e for l in logs for e in l.steps]
    end = job_end(logs)
    later = sorted((t, s, w) for s, t, w in events if t_kill <= t <= end)
    next_step = next((t for t, s, _ in later if s >= kill_step), None)
    full = next((t for t, s, w in later if w >= WORKERS and s >= kill_step), None)
    by_rank = {}
    for l in logs:
        by_rank.setdefault(l.rank, []).extend(s for s, t, _ in l.steps if t <= end)
    redone = max((len(s) - len(set(s)) for s in by_rank.values()), default=0)
    return {"kill_step": kill_step,
            "death_to_next_step_s": None if next_step is None else next_step - t_kill,
            "steps_redone": redone,
            "full_size_again_s": None if full is None else full - t_kill}


def final_model(job):
    import torch
    path = os.path.join(job.dir, "final.pt")
    loss = next((l.final for l in job.logs() if l.final is not None), None)
    return (torch.load(path) if os.path.exists(path) else None), loss


def progress_curve(logs, t_zero):
    """(seconds since t_zero, highest step completed so far) over the job."""
    events = sorted((t - t_zero, s) for l in logs for s, t, _ in l.steps)
    curve, top = [], -1
    for t, s in events:
        if s > top:
            top = s
            curve.append((t, s))
    return curve


def summary(values):
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {"min": min(v), "median": statistics.median(v), "max": max(v), "n": len(v)}


# ------------------------------------------------------------- driver

def run_system(args, name):
    system = SYSTEMS[name]
    result = {"system": name, "configuration": system["how"], "jobs": []}
    reference = None
    for index in range(args.jobs + 1 if system["kill"] else 1):
        kill = system["kill"] and index > 0
        job = Job(args, name, index, kill)
        job.start(system["job"](args, job.port))
        job.watch()
        logs = job.logs()
        model, loss = final_model(job)
        record = {"kill": kill, "status": job.status, "timed_out": job.timed_out,
                  "final_loss": loss, "steps_logged": sum(len(l.steps) for l in logs),
                  "steps_after_the_end": sum(len(l.steps) for l in late_workers(logs))}
        if logs and any(l.steps for l in logs):
            # Without failure: every step; with the kill, the steps before it.
            record["step_time_s"] = step_time(logs, args.kill_step - 2 if kill else args.steps)
        if not kill:
            reference = model
            record["curve"] = progress_curve(logs, min(t for l in logs for _, t, _ in l.steps) if
                                             record["steps_logged"] else 0)
        else:
            if job.killed is None:
                record["error"] = "the victim never reached the kill step"
            else:
                pid, t_kill = job.killed
                record["victim_died"] = process_gone(pid, 5)
                victim = [l for l in logs if l.pid == pid]
                record["victim_last_step"] = victim[0].steps[-1][0] if victim and victim[0].steps else None
                record.update(after_kill(logs, t_kill, job.args.kill_step))
                record["curve"] = progress_curve(logs, t_kill)
        if model is not None and reference is not None:
            record["max_abs_diff_to_reference"] = float((model - reference).abs().max())
        record["error"] = record.get("error") or job_error(job, record)
        result["jobs"].append(record)
        print(f"versus: {name} job {index} ({'kill' if kill else 'no failure'}): " + one_line(record),
              flush=True)
        if record["error"] and index == 0:
            break  # a system that cannot run without failure is not run again
    return result


def job_error(job, record):
    """Why the job does not count, or None. A job that finished its work
    (every step and the final model) and then failed in its teardown
    counts, with the failure noted (torch 2.15's gloo aborts now and then
    at exit: "terminate called without an active exception")."""
    if job.timed_out:
        return f"the job did not end within {job.args.timeout} s"
    if record["steps_logged"] == 0:
        return f"no step was logged; exit status {job.status}: {exit_cause(job)}"
    if record["kill"] and not record.get("victim_died"):
        return "the kill did not land"
    if record["kill"] and (record.get("victim_last_step") or -1) >= job.args.kill_step:
        return f"the victim completed step {record['victim_last_step']}: it was not killed in step {job.args.kill_step}"
    if any(s != 0 for s in job.status):
        if record["final_loss"] is None:
            return f"exit status {job.status}: {exit_cause(job)[:300]}"
        record["teardown_error"] = f"exit status {job.status} after the last step: {exit_cause(job)[:200]}"
    if record["steps_after_the_end"]:
        record["teardown_error"] = (f"{record['steps_after_the_end']} steps logged after the job's last step: a worker "
                                    "failed at exit and its agent started it again")
    if record["final_loss"] is None:
        return "no final model"
    return None


def exit_cause(job):
    """The line of the job's output that says why it failed, or its last."""
    with open(os.path.join(job.dir, "output.txt")) as f:
        said = [l.strip() for l in f if l.strip() and "Warning" not in l and "pynvml" not in l]
    return next((l for l in said if "Error" in l or "terminate called" in l), said[-1] if said else "(no output)")


def one_line(r):
    if r["error"]:
        return "FAILED: " + r["error"]
    parts = []
    if r.get("step_time_s"):
        parts.append(f"step {r['step_time_s'] * 1e3:.2f} ms")
    if r["kill"]:
        nxt, full = r["death_to_next_step_s"], r["full_size_again_s"]
        parts.append(f"killed in step {r['kill_step']}; next step after {fmt_s(nxt)}, {r['steps_redone']} redone,"
                     f" full size after {fmt_s(full)}")
    if "max_abs_diff_to_reference" in r:
        parts.append(f"max |w - w_ref| {r['max_abs_diff_to_reference']:.2e}")
    parts.append(f"final loss {r['final_loss']:.6f}")
    if r.get("teardown_error"):
        parts.append(r["teardown_error"])
    return "; ".join(parts)


def fmt_s(s):
    if s is None:
        return "never"
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def table(results):
    rows = ["| system | failure-free step (ms): min / median / max | death -> next step: min / median / max | steps redone, median | "
            "full size again, median | model vs. its run without failure: max abs diff, median | jobs |",
            "|---|---|---|---|---|---|---|"]
    for r in results:
        jobs = r["jobs"]
        ref = next((j for j in jobs if not j["kill"]), {})
        if ref.get("error"):
            rows.append(f"| {r['system']} | cannot run here: {ref['error']} | | | | | 0 |")
            continue
        times = summary([j.get("step_time_s") for j in jobs if not j["error"]])
        step = "—" if not times else (f"{times['min'] * 1e3:.2f} / {times['median'] * 1e3:.2f} / "
                                      f"{times['max'] * 1e3:.2f}")
        if not SYSTEMS[r["system"]]["kill"]:
            rows.append(f"| {r['system']} | {step} | no fault tolerance | | | | 1 |")
            continue
        killed = [j for j in jobs if j["kill"] and not j["error"]]
        failed = len([j for j in jobs if j["kill"]]) - len(killed)
        nxt = summary([j["death_to_next_step_s"] for j in killed])
        redo = summary([j["steps_redone"] for j in killed])
        full = summary([j["full_size_again_s"] for j in killed])
        diff = summary([j.get("max_abs_diff_to_reference") for j in killed])
        next_cell = f"{fmt_s(nxt['min'])} / {fmt_s(nxt['median'])} / {fmt_s(nxt['max'])}" if nxt else "never"
        redo_cell = f"{redo['median']:g}" if redo else "—"
        full_cell = fmt_s(full["median"]) if full and full["n"] == len(killed) else (
            "never" if not full else f"{fmt_s(full['median'])} ({full['n']} of {len(killed)} jobs)")
        diff_cell = f"{diff['median']:.1e}" if diff else "—"
        jobs_cell = f"{len(killed)}" + (f" ({failed} failed)" if failed else "")
        rows.append(f"| {r['system']} | {step} | {next_cell} | {redo_cell} | {full_cell} | {diff_cell} | "
                    f"{jobs_cell} |")
    return "\n".join(rows)


def teardown_notes(results):
    notes = []
    for r in results:
        bad = [j["teardown_error"] for j in r["jobs"] if j.get("teardown_error")]
        if bad:
            notes.append(f"- {r['system']}: {len(bad)} of {len(r['jobs'])} jobs finished their work and then "
                         f"failed at exit ({bad[0]})")
    return ("\nCounted, but not clean:\n" + "\n".join(notes) + "\n") if notes else ""


def plotted_job(result):
    """The system's job with the kill whose recovery took the median time."""
    killed = [j for j in result["jobs"] if j["kill"] and not j["error"] and j.get("curve")]
    killed.sort(key=lambda j: j["death_to_next_step_s"] or float("inf"))
    return killed[len(killed) // 2] if killed else None


def keep_plotted_curves(results):
    """Only the plotted job's progress curve stays in the JSON (rounded to
    0.1 ms): the others are many thousand points that say nothing more."""
    for r in results:
        keep = plotted_job(r)
        for j in r["jobs"]:
            if j is keep:
                j["curve"] = [(round(t, 4), s) for t, s in j["curve"]]
            else:
                j.pop("curve", None)


def json_text(report):
    """Indented, with each point of a curve on one line."""
    return re.sub(r"\[\s+(-?[0-9.e+-]+),\s+(-?[0-9]+)\s+\]", r"[\1, \2]", json.dumps(report, indent=1)) + "\n"


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    for r in results:
        job = plotted_job(r)
        if not job:
            continue
        t, s = zip(*job["curve"])
        for ax in axes:
            ax.plot(t, s, drawstyle="steps-post", label=r["system"])
    for ax, (lo, hi), title in ((axes[0], (-2, None), "the whole job"), (axes[1], (-0.05, 0.5), "around the kill")):
        ax.axvline(0, color="red", linestyle=":", label="SIGKILL")
        ax.set_xlim(lo, hi)
        ax.set_xlabel("seconds since the SIGKILL")
        ax.set_ylabel("highest step completed")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[1].legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def into_readme(path, block, text, picture):
    """Replaces the block named `block` in `path`."""
    BEGIN = f"<!-- {block}: generated by bench/versus/run.sh --publish; do not edit -->"
    END = f"<!-- /{block} -->"
    with open(path) as f:
        readme = f.read()
    if BEGIN not in readme or END not in readme:
        sys.exit(f"versus: {path} has no block {BEGIN} ... {END}")
    head, rest = readme.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    block = f"{BEGIN}\n{text}\n![time since the kill against the step reached, one line per system]({picture})\n{END}"
    with open(path, "w") as f:
        f.write(head + block + tail)


def versions():
    import torch
    found = {"python": platform.python_version(), "torch": torch.__version__}
    for name in ("torchft", "dlrover", "matplotlib"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    commit = subprocess.run(["git", "-C", TOP, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", TOP, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return {"host": socket.gethostname(), "cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
            "commit": commit + ("+changes" if dirty else ""), "date": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                                     time.gmtime())}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="ringmend's build folder (ringmend-run, ringmend-python)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated, of: " + ", ".join(SYSTEMS))
    ap.add_argument("--jobs", type=int, default=5, help="jobs with a kill, per system")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--kill-step", type=int, default=100)
    ap.add_argument("--victim", type=int, default=2, help="rank (torchft: replica group) to kill")
    ap.add_argument("--timeout", type=float, default=240, help="seconds a job may take")
    ap.add_argument("--nodes", type=int, choices=(1, 2), default=1,
                    help="2: two nodes of the local cluster (scripts/cluster.sh, running), 2 workers each")
    ap.add_argument("--readme", help="a markdown file whose versus block gets the table and the plot")
    ap.add_argument("--keep", action="store_true", help="keep every job's logs (else only when one failed)")
    args = ap.parse_args()
    unknown = [s for s in args.systems.split(",") if s not in SYSTEMS]
    if unknown or not 0 < args.kill_step < args.steps or not 0 <= args.victim < WORKERS:
        ap.error(f"unknown system(s) {unknown}" if unknown else "need 0 < --kill-step < --steps, 0 <= --victim < 4")
    os.makedirs(args.out, exist_ok=True)
    args.work = tempfile.mkdtemp(prefix="versus-")
    where = machine()  # the tree the jobs run from: read before they run
    results = [run_system(args, name) for name in args.systems.split(",")]
    report = {"machine": where, "versions": versions(),
              "job": {"workers": WORKERS, "nodes": args.nodes, "steps": args.steps, "kill_step": args.kill_step, "victim": args.victim,
                      "jobs_with_kill": args.jobs, "model": "examples/ddp_model.py"},
              "results": results}
    plot(results, os.path.join(args.out, "versus.png"))
    keep_plotted_curves(results)
    with open(os.path.join(args.out, "versus.json"), "w") as f:
        f.write(json_text(report))
    m, v = report["machine"], report["versions"]
    text = (f"Machine {m['host']} ({m['cpu']}, {m['cores']} cores, Linux {m['kernel']}), commit {m['commit']}, "
            f"{m['date']}; torch {v['torch']}, torchft {v['torchft']}, DLRover {v['dlrover']}. "
            f"{WORKERS} workers ({'on one node' if args.nodes == 1 else '2 on each of 2 nodes of the local cluster'}), "
            f"{args.steps} steps, rank {args.victim} SIGKILLed from outside in step "
            f"{args.kill_step}; {args.jobs} jobs with the kill per system.\n\n" + table(results) + "\n\n" +
            "\n".join(f"- **{r['system']}**: {r['configuration']}" for r in results) + "\n" + teardown_notes(results))
    with open(os.path.join(args.out, "versus.md"), "w") as f:
        f.write(text)
    print(text)
    if args.readme:
        into_readme(args.readme, "versus" if args.nodes == 1 else "versus-two-nodes", text, os.path.relpath(os.path.join(args.out, "versus.png"),
                                                       os.path.dirname(os.path.abspath(args.readme))))
    # A peer that cannot run is a finding for the table; ringmend failing is an error.
    failed = [r["system"] for r in results if any(j["error"] for j in r["jobs"])]
    if failed or args.keep:
        said = f"jobs of {', '.join(failed)} failed; " if failed else ""
        print(f"versus: {said}the jobs' logs are in {args.work}", flush=True)
    else:
        shutil.rmtree(args.work, ignore_errors=True)
    return 1 if any(s.startswith("ringmend") for s in failed) else 0


if __name__ == "__main__":
    sys.exit(main())
