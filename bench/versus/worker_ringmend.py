"""ringmend's worker: examples/torch_ddp.py's training loop under
ringmend-run (ringmend.torch's DistributedDataParallel, spares admitted in
the step in which a member dies), timed by step_log."""

import torch
import torch.distributed as dist

import ringmend.torch as rmt
from step_log import StepLog, arguments

from ddp_model import make_model, make_optimizer, shard


def main():
    args = arguments(__doc__).parse_args()
    module = make_model()
    opt = make_optimizer(module, args.lr)
    step = torch.zeros(1, dtype=torch.int64)
    # A spare waits in here; admitted, it holds the members' model,
    # optimizer state and step counter.
    world = rmt.init_process_group(state=rmt.training_state(module, opt, step))
    log = StepLog("ringmend", world.rank)
    model = rmt.DistributedDataParallel(module)
    while step.item() < args.steps:
        s = int(step.item())
        log.begin(s)
        members = world.member_ids
        x, y = shard(s, members.index(world.member_id), len(members))
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()  # recovers inside when a member dies
        opt.step()
        step += 1
        log.step(s, world.size)
    if world.rank == 0:
        log.final(module, args.steps)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
