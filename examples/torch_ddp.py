"""DDP that keeps training in place when a rank dies.

    ringmend-run -n 4 python3 examples/torch_ddp.py --kill-member 2 --kill-step 30

A small MLP learns a synthetic regression with fixed seeds, through
torch.distributed's backend "ringmend" and DistributedDataParallel. Each
step's global batch (240 samples) is split among the members alive; member
`--kill-member` SIGKILLs itself in step `--kill-step`, before its gradients
reach the others (who are waiting in the gradient allreduce). The survivors
recover inside that allreduce, finish the step with their own gradients,
and split the following batches among themselves. At the end every
survivor replays the same steps serially, with the samples each step really
used, and checks the trained model against it.
"""

import argparse
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

import ringmend.torch as rmt

GLOBAL_BATCH = 240  # divisible by every member count from 1 to 6
FEATURES, HIDDEN = 16, 32


def make_model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1)
    ).double()


def batch(step):
    """The global batch of a step: the same on every member and in the replay."""
    g = torch.Generator().manual_seed(10_000 + step)
    x = torch.randn(GLOBAL_BATCH, FEATURES, generator=g, dtype=torch.float64)
    w = torch.linspace(-1, 1, FEATURES, dtype=torch.float64)
    y = torch.sin(x @ w).unsqueeze(1) + 0.01 * torch.randn(GLOBAL_BATCH, 1, generator=g, dtype=torch.float64)
    return x, y


def shard(step, index, parts):
    x, y = batch(step)
    n = GLOBAL_BATCH // parts
    return x[index * n : (index + 1) * n], y[index * n : (index + 1) * n]


def replay(steps_used, lr):
    """Serial training on the samples each step used: (step, parts, shard indices)."""
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for step, parts, indices in steps_used:
        xs, ys = zip(*(shard(step, i, parts) for i in indices))
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(torch.cat(xs)), torch.cat(ys)).backward()
        opt.step()
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--kill-member", type=int, default=-1, help="member id that SIGKILLs itself (-1: none)")
    ap.add_argument("--kill-step", type=int, default=30)
    args = ap.parse_args()

    world = rmt.init_process_group()
    me = world.member_id
    changes = []
    rmt.on_membership_change(changes.append)
    model = torch.nn.parallel.DistributedDataParallel(make_model())
    model.register_comm_hook(None, rmt.elastic_mean_hook)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    if world.rank == 0:
        print(f"torch_ddp: {world.size} ranks, torch {torch.__version__}, backend {dist.get_backend()}, "
              f"{args.steps} steps of {GLOBAL_BATCH} samples", flush=True)

    steps_used = []
    recovery = None
    for step in range(args.steps):
        members = world.member_ids  # who shares this step's batch
        parts, index = len(members), members.index(me)
        x, y = shard(step, index, parts)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        if me == args.kill_member and step == args.kill_step:
            print(f"member {me}: SIGKILLs itself in step {step}, before its gradients are sent", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        seen = len(changes)
        t0 = time.monotonic()
        loss.backward()  # the gradient allreduce runs in here; a failure is recovered in it
        opt.step()
        alive = world.member_ids
        steps_used.append((step, parts, [members.index(m) for m in members if m in alive]))
        if len(changes) > seen:
            c = changes[-1]
            recovery = time.monotonic() - t0
            if world.rank == 0:
                print(f"step {step:3d}: membership change: lost member(s) {c.lost}; {c.old_size} -> {c.new_size} "
                      f"ranks, epoch {c.new_epoch}; rebuilt in {c.recovery_seconds * 1e3:.1f} ms; the step "
                      f"completed with the survivors' gradients in {recovery * 1e3:.1f} ms", flush=True)
        if world.rank == 0 and (step % 10 == 0 or step == args.steps - 1):
            print(f"step {step:3d}  loss {loss.item():.6f}  ranks {len(alive)}", flush=True)

    # Every survivor checks its model against the serial replay, and the
    # survivors' models against each other.
    ref = replay(steps_used, args.lr)
    diff = max((p - q).abs().max().item() for p, q in zip(model.module.parameters(), ref.parameters()))
    x, y = batch(args.steps)
    final = torch.nn.functional.mse_loss(model.module(x), y).item()
    flat = torch.cat([p.detach().view(-1) for p in model.module.parameters()])
    low, high = flat.clone(), flat.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    same = torch.equal(low, high)
    ok = diff < 1e-9 and same
    if world.rank == 0:
        print(f"final loss {final:.6f} on {world.size} ranks (epoch {world.epoch}); "
              f"max |w - w_ref| = {diff:.2e}: {'MATCHES' if diff < 1e-9 else 'DIFFERS FROM'} the reference; "
              f"survivors' models {'identical' if same else 'DIFFER'}", flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
