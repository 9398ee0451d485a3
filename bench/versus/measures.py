"""What the driver measures in a job's worker logs: step time, the job's
end, death -> next step, steps redone, full size again, the final model."""

import os
import statistics

from systems import WORKERS

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
