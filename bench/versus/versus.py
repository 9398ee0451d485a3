"""The versus benchmark's driver: the same DDP job (examples/ddp_model.py,
4 workers on one node, or 2 on each of two nodes of the local cluster),
the same SIGKILL from outside at a fixed step, under each fault-tolerant
system in its recommended configuration (systems.py), and one table.

For each system: one job without failure (the reference model), then
--jobs jobs in which the worker of rank --victim stops at the beginning of
step --kill-step, before its gradients go out, and is SIGKILLed (job.py).
From the workers' step logs (step_log.py; measures.py):

  death -> next step   the kill to the first completion of step --kill-step
                       or later (nobody can complete it without the victim
                       or a recovery; steps redone count as lost time)
  steps redone         steps a rank completed twice (a restarted worker
                       resuming from an older state)
  full size again      the kill to the first step with 4 workers again (a
                       spare or a restarted worker in)
  step time            per job, the median interval between the lowest
                       rank's steps from step 10 (before the kill)
  model                the final model against the system's own job
                       without failure: max |w - w_ref|, and the final loss

Writes versus.json, versus.md and versus.png into --out (report.py), and
with --readme the table into a block of bench/README.md.
"""

import argparse
import os
import shutil
import sys
import tempfile

from job import Job, process_gone
from measures import after_kill, final_model, late_workers, progress_curve, step_time
from report import (fmt_s, into_readme, json_text, keep_plotted_curves, machine, plot, table, teardown_notes,
                    versions)
from systems import SYSTEMS, WORKERS


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
