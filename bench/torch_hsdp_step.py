"""What fault tolerance costs HSDP per step: FSDP2's HSDP over a (2, 2)
DeviceMesh of ringmend subgroups, its steps timed as they are (plain) and
through ringmend.torch.hsdp.FaultTolerantHSDP (the vote after every step,
recovery by the step), in one job, the same model and samples, no failure.

    ringmend-run -n 4 python3 bench/torch_hsdp_step.py [--steps 40] [--runs 5] [--width 512]

Each run: --steps steps of each kind, timed as a whole after a warm-up
step; printed per kind, min / median / max over --runs runs of the mean
step time, and the median's ratio. The model: Linear(width, 4 width),
Tanh, Linear(4 width, width) (about 8 width^2 parameters), a batch of 32 per
rank, SGD with momentum. Rank 0 prints; the numbers belong to the machine
they ran on (it names it, and the torch version).
"""

import argparse
import json
import platform
import statistics
import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import ringmend.torch as rmt
from ringmend.torch import hsdp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--json", default="", help="also write the figures here (rank 0)")
    args = ap.parse_args()

    step = torch.zeros(1, dtype=torch.int64)
    world = rmt.init_process_group(state=hsdp.spare_state(step), subgroup_recovery="step")
    if world.size != 4:
        raise SystemExit("run with 4 ranks")
    w = args.width

    def make_model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(w, 4 * w), torch.nn.Tanh(), torch.nn.Linear(4 * w, w))

    def make_optimizer(params):
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)

    data = torch.randn(32, w, generator=torch.Generator().manual_seed(dist.get_rank()))

    def compute(model):
        model(data).pow(2).mean().backward()

    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replica", "shard"))
    plain = make_model()
    fully_shard(plain, mesh=mesh)
    plain_opt = make_optimizer(plain.parameters())

    def plain_steps(n):
        for _ in range(n):
            compute(plain)
            plain_opt.step()
            plain_opt.zero_grad()

    ft = hsdp.FaultTolerantHSDP(make_model, make_optimizer, (2, 2), step)

    def ft_steps(n):
        for _ in range(n):
            ft.run_step(compute)

    def timed(steps_of):
        steps_of(1)  # warm-up: FSDP2's lazy initialisation, the first mesh
        dist.barrier()
        t0 = time.perf_counter()
        steps_of(args.steps)
        dist.barrier()
        return (time.perf_counter() - t0) / args.steps

    figures = {"plain HSDP": [], "fault-tolerant HSDP": []}
    for _ in range(args.runs):
        figures["plain HSDP"].append(timed(plain_steps))
        figures["fault-tolerant HSDP"].append(timed(ft_steps))
    if dist.get_rank() == 0:
        params = sum(p.numel() for p in make_model().parameters())
        print(f"machine {platform.node()}, torch {torch.__version__}, 4 ranks, (2, 2) mesh, "
              f"{params} parameters, {args.steps} steps x {args.runs} runs")
        for name, times in figures.items():
            t = sorted(times)
            print(f"  {name:22s} step {t[0] * 1e3:7.2f} / {statistics.median(t) * 1e3:7.2f} / "
                  f"{t[-1] * 1e3:7.2f} ms (min / median / max)")
        ratio = statistics.median(figures["fault-tolerant HSDP"]) / statistics.median(figures["plain HSDP"])
        print(f"  fault-tolerant / plain: {ratio:.3f} (medians)")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"machine": platform.node(), "torch": torch.__version__, "parameters": params,
                           "steps": args.steps, "step_seconds": figures}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
