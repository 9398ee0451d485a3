"""torch.distributed collectives through the backend "ringmend" against
torch's gloo backend, in one job, on the same tensors; then the DDP step
time of examples/torch_ddp.py's model with each backend.

    ringmend-run -n 2 python3 bench/torch_allreduce.py [--sizes 4K:64M] [--runs 5]
        [--ops all_reduce,all_gather,reduce_scatter,all_to_all]

For each operation and size (the bytes of the full buffer: the allreduce's
tensor, the allgather's output, the reduce-scatter's input): busbw (GB/s)
as nccl-tests count it, 2 (n-1)/n x bytes / time for all_reduce and
(n-1)/n x bytes / time for all_gather_into_tensor, reduce_scatter_tensor
(the traffic per rank of a ring) and all_to_all_single (each rank's input
less its own block, the bytes being the input), min / median / max over --runs runs of
--iters calls each, for each backend, and the ratio of the medians. Rank 0
prints; the numbers belong to the machine they ran on.
"""

import argparse
import json
import platform
import statistics
import time

import torch
import torch.distributed as dist

import ringmend.torch as rmt


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def sizes(spec):
    lo, hi = (parse_size(s) for s in spec.split(":"))
    s = lo
    while s <= hi:
        yield s
        s *= 4


def buffers(op, size, n):
    """The tensors of one call of `op` whose full buffer is `size` bytes."""
    if op == "all_reduce":
        return (torch.ones(size // 4, dtype=torch.float32),)
    block = size // 4 // n
    if op == "all_to_all":
        return torch.empty(block * n, dtype=torch.float32), torch.ones(block * n, dtype=torch.float32)
    if op == "all_gather":
        return torch.empty(block * n, dtype=torch.float32), torch.ones(block, dtype=torch.float32)
    return torch.empty(block, dtype=torch.float32), torch.ones(block * n, dtype=torch.float32)


def call(op, tensors, group):
    if op == "all_reduce":
        dist.all_reduce(tensors[0], group=group)
    elif op == "all_gather":
        dist.all_gather_into_tensor(tensors[0], tensors[1], group=group)
    elif op == "all_to_all":
        dist.all_to_all_single(tensors[0], tensors[1], group=group)
    else:
        dist.reduce_scatter_tensor(tensors[0], tensors[1], group=group)


def time_calls(op, tensors, group, iters):
    dist.barrier(group=group)
    t0 = time.perf_counter()
    for _ in range(iters):
        call(op, tensors, group)
    dist.barrier(group=group)
    return (time.perf_counter() - t0) / iters


def ddp_step_time(group, steps):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 1024), torch.nn.Tanh(), torch.nn.Linear(1024, 1024), torch.nn.Tanh(),
        torch.nn.Linear(1024, 1)
    )
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
    if group is None:
        ddp.register_comm_hook(None, rmt.elastic_mean_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randn(64, 1)
    times = []
    for i in range(steps + 3):
        dist.barrier(group=group)
        t0 = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        if i >= 3:  # warm-up
            times.append(time.perf_counter() - t0)
    return times


def _cpu():
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        return f"{len(names)} x {names[0]}" if names else platform.machine()
    except OSError:
        return platform.machine()


def spread(values):
    return min(values), statistics.median(values), max(values)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4K:64M")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ops", default="all_reduce,all_gather,reduce_scatter")
    ap.add_argument("--ddp-steps", type=int, default=20)
    ap.add_argument("--json", help="write the rows and the machine here")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch's compute threads per rank (default 1: ranks share the cores)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    world = rmt.init_process_group()
    gloo = dist.new_group(backend="gloo")
    n = dist.get_world_size()
    rank0 = dist.get_rank() == 0
    if rank0:
        print(f"# torch {torch.__version__}, {n} ranks, {platform.node()} ({_cpu()}), "
              f"{torch.get_num_threads()} torch thread(s) per rank")
        print("# busbw GB/s: min / median / max over runs; ratio = ringmend median / gloo median")
    rows = []
    for op in args.ops.split(","):
        if rank0:
            print(f"# {op}\n# {'bytes':>10} {'ringmend':>24} {'gloo':>24} {'ratio':>6}")
        for size in sizes(args.sizes):
            tensors = buffers(op, size, n)
            iters = max(3, min(200, (64 << 20) // size))
            factor = (2 if op == "all_reduce" else 1) * (n - 1) / n * size / 1e9
            bw = {"ringmend": [], "gloo": []}
            for _ in range(args.runs):
                for name, group in (("ringmend", None), ("gloo", gloo)):
                    bw[name].append(factor / time_calls(op, tensors, group, iters))
            r, g = spread(bw["ringmend"]), spread(bw["gloo"])
            rows.append({"op": op, "bytes": size, "ringmend_busbw": r, "gloo_busbw": g, "ratio": r[1] / g[1]})
            if rank0:
                print(f"  {size:>10} {r[0]:7.2f} {r[1]:7.2f} {r[2]:7.2f}  {g[0]:7.2f} {g[1]:7.2f} {g[2]:7.2f} "
                      f"{r[1] / g[1]:6.2f}", flush=True)
    step = {name: spread(ddp_step_time(group, args.ddp_steps)) for name, group in (("ringmend", None), ("gloo", gloo))}
    if rank0:
        for name, (lo, med, hi) in step.items():
            print(f"# DDP step ({name}): {lo * 1e3:.2f} / {med * 1e3:.2f} / {hi * 1e3:.2f} ms (min / median / max)")
        print(f"# DDP step ratio gloo / ringmend: {step['gloo'][1] / step['ringmend'][1]:.2f}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"machine": platform.node(), "ranks": n, "torch": torch.__version__, "rows": rows,
                           "ddp_step_seconds": step}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
