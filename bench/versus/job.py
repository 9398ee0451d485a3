"""One job of a system: its processes, its workers' logs (step_log.py),
and the SIGKILL of the victim when it says it waits for it."""

import collections
import glob
import os
import signal
import subprocess
import tempfile
import time

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
