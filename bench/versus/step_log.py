"""What every worker of the versus benchmark writes: when it started, when
each training step was committed (on the monotonic clock, which every
process of the machine shares), and the final model.

One file per process, `<system>-<pid>.log` under $VERSUS_LOG, one line per
event, flushed at once so that a SIGKILLed worker leaves every line it
wrote:

    start <pid> <rank> <t>
    waiting <step> <t>
    step <step> <t> <workers in the step>
    final <loss on the batch after the last step>

The kill lands at the same moment under every system: the victim
($VERSUS_VICTIM, the rank) stops at the beginning of step $VERSUS_KILL_STEP,
before its gradients go out, says `waiting`, and sleeps until the driver
SIGKILLs it; the others wait for its gradients in that step's allreduce. It
does so once per job (a restarted worker of that rank does not).

The driver (versus.py) reads them; nothing here depends on the system
measured, so every system is timed by the same code.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))

import torch  # noqa: E402

from ddp_model import batch  # noqa: E402


def arguments(description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=0.05)
    return ap


class StepLog:
    def __init__(self, system, rank):
        self.dir = os.environ["VERSUS_LOG"]
        self.file = open(os.path.join(self.dir, f"{system}-{os.getpid()}.log"), "a", buffering=1)
        self.file.write(f"start {os.getpid()} {rank} {time.monotonic():.6f}\n")

        self.rank = rank
        victim = int(os.environ.get("VERSUS_VICTIM", "-1"))
        self.kill_step = int(os.environ["VERSUS_KILL_STEP"]) if victim == rank else None

    def wait_for_peers(self, workers, seconds=300):
        """Until `workers` ranks have started: a start line up for every
        system alike, where the system itself lets workers train before the
        others are up (torchft's groups join its quorum when they come)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ranks = set()
            for name in os.listdir(self.dir):
                if name.endswith(".log"):
                    with open(os.path.join(self.dir, name)) as f:
                        words = f.readline().split()
                    if len(words) == 4 and words[0] == "start":
                        ranks.add(int(words[2]))
            if len(ranks) >= workers:
                return
            time.sleep(0.05)
        raise RuntimeError(f"step_log: {workers} workers did not start within {seconds} s")

    def begin(self, step):
        """At the beginning of each step, before its forward pass."""
        if step != self.kill_step:
            return
        try:
            os.close(os.open(os.path.join(self.dir, "victim-waited"), os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return  # the victim of this job died already: this is a restarted worker
        self.file.write(f"waiting {step} {time.monotonic():.6f}\n")
        time.sleep(60)  # the driver's SIGKILL ends this
        raise RuntimeError(f"step_log: rank {self.rank} was not killed in step {step}")

    def step(self, step, workers):
        self.file.write(f"step {step} {time.monotonic():.6f} {workers}\n")

    def final(self, module, steps):
        """The model after the last step, by the one worker that writes it."""
        x, y = batch(steps)
        with torch.no_grad():
            loss = torch.nn.functional.mse_loss(module(x), y).item()
        self.file.write(f"final {loss:.12g}\n")
        flat = torch.cat([p.detach().reshape(-1) for p in module.parameters()])
        torch.save(flat, os.path.join(self.dir, "final.pt"))
