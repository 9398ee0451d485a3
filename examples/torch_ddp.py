"""DDP that keeps training in place when a rank dies, and at its size when
a spare waits.

    ringmend-run -n 4 python3 examples/torch_ddp.py --kill-member 2 --kill-step 30
    ringmend-run -n 4 --spares 1 python3 examples/torch_ddp.py --kill-member 2 --kill-step 30

A small MLP learns a synthetic regression with fixed seeds, through
torch.distributed's backend "ringmend" and DistributedDataParallel
(ringmend.torch's, which reduces each step's gradients in one call). Each
step's global batch (240 samples) is split among the members by rank;
member `--kill-member` SIGKILLs itself in step `--kill-step`, before its
gradients reach the others (who are waiting in the gradient allreduce).

Without a spare the survivors recover inside that allreduce, finish the
step with their own gradients, and split the following batches among
themselves. With one, the spare (waiting in init_process_group) is admitted
inside that allreduce in the dead member's place: it receives the model,
the optimizer's state and the step counter (training_state), computes the
step's gradients on the dead member's share and takes part in the very
allreduce the others are in; the job keeps its size. At the end every
member that was there from the start replays the same steps serially, with
the samples each step really used, and checks the trained model against it;
every member checks that all models are identical.
"""

import argparse
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

import ringmend.torch as rmt
from ddp_model import GLOBAL_BATCH, batch, make_model, make_optimizer, replay, shard


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--kill-member", type=int, default=-1, help="member id that SIGKILLs itself (-1: none)")
    ap.add_argument("--kill-step", type=int, default=30)
    args = ap.parse_args()

    # Members and spares build the same model and optimizer; their state
    # (and the step counter) is what a spare receives when it is admitted.
    module = make_model()
    opt = make_optimizer(module, args.lr)
    step = torch.zeros(1, dtype=torch.int64)
    world = rmt.init_process_group(state=rmt.training_state(module, opt, step))
    me = world.member_id
    joined_at = int(step.item()) if world.joined else None
    if world.joined:
        print(f"member {me}: a spare, admitted at rank {world.rank} of {world.size} inside step {joined_at}",
              flush=True)
    changes = []
    rmt.on_membership_change(changes.append)
    model = rmt.DistributedDataParallel(module)
    if world.rank == 0 and not world.joined:
        print(f"torch_ddp: {world.size} ranks, torch {torch.__version__}, backend {dist.get_backend()}, "
              f"{args.steps} steps of {GLOBAL_BATCH} samples", flush=True)

    steps_used = []
    plain = []  # seconds of each step's backward and update without a membership change
    while step.item() < args.steps:
        s = int(step.item())
        members = world.member_ids  # who shares this step's batch, by rank
        parts, index = len(members), members.index(me)
        x, y = shard(s, index, parts)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        if me == args.kill_member and s == args.kill_step:
            print(f"member {me}: SIGKILLs itself in step {s}, before its gradients are sent", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        seen = len(changes)
        t0 = time.monotonic()
        loss.backward()  # the gradient allreduce runs in here; a failure is recovered in it
        opt.step()
        step += 1
        spent = time.monotonic() - t0
        alive = world.member_ids
        # The shares the step's gradients hold: the survivors', and a
        # joiner's (it computed the share of the member it replaced).
        joined = {j for c in changes[seen:] for j in c.joined}
        used = sorted({members.index(m) for m in members if m in alive} | {alive.index(j) for j in joined})
        steps_used.append((s, parts, used))
        if len(changes) == seen:
            plain.append(spent)
        elif world.rank == 0:
            c = changes[-1]
            usual = sorted(plain)[len(plain) // 2] * 1e3 if plain else float("nan")
            filled = f", member(s) {c.joined} joined in their place" if c.joined else ""
            print(f"step {s:3d}: membership change: lost member(s) {c.lost}{filled}; {c.old_size} -> "
                  f"{c.new_size} ranks, epoch {c.new_epoch}; rebuilt in {c.recovery_seconds * 1e3:.1f} ms; "
                  f"the step completed with {len(used)} shares of gradients in {spent * 1e3:.1f} ms (backward and "
                  f"update; {usual:.1f} ms in a step without failure, median)", flush=True)
        if world.rank == 0 and (s % 10 == 0 or s == args.steps - 1):
            print(f"step {s:3d}  loss {loss.item():.6f}  ranks {len(alive)}", flush=True)

    # Every member there from the start checks its model against the serial
    # replay (a joiner has not seen the earlier steps), and every member the
    # models against each other.
    diff = 0.0
    if joined_at is None:
        ref = replay(steps_used, args.lr)
        diff = max((p - q).abs().max().item() for p, q in zip(module.parameters(), ref.parameters()))
    x, y = batch(args.steps)
    final = torch.nn.functional.mse_loss(module(x), y).item()
    flat = torch.cat([p.detach().view(-1) for p in module.parameters()])
    low, high = flat.clone(), flat.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    same = torch.equal(low, high)
    ok = diff < 1e-9 and same
    # Said by the first rank that replayed (rank 0 may be a joiner).
    first = torch.tensor([world.rank if joined_at is None else world.size])
    dist.all_reduce(first, op=dist.ReduceOp.MIN)
    if world.rank == first.item():
        print(f"final loss {final:.6f} on {world.size} ranks (epoch {world.epoch}); "
              f"max |w - w_ref| = {diff:.2e}: {'MATCHES' if diff < 1e-9 else 'DIFFERS FROM'} the reference; "
              f"members' models {'identical' if same else 'DIFFER'}", flush=True)
    if joined_at is not None:
        print(f"member {me} (joined in step {joined_at}): model {'identical to' if same else 'DIFFERS from'} "
              f"the others'", flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
