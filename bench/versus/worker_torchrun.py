"""The torchrun (TorchElastic) worker, and the reference without fault
tolerance: torch's DistributedDataParallel over gloo.

Under `torchrun --max-restarts` a death stops every worker and the agent
starts them all again; as TorchElastic's documentation advises, the job
then resumes from its last checkpoint, written here after every step (rank
0, to local disk, atomically). `--no-checkpoint` is plain DDP, the cost of
no fault tolerance at all. worker_dlrover.py trains the same way with its
own checkpoint (train_with_torch_ddp)."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from step_log import StepLog, arguments

from ddp_model import make_model, make_optimizer, shard


class DiskCheckpoint:
    """After every step, by rank 0, to local disk; renamed into place."""

    def __init__(self):
        self.path = os.path.join(os.environ["VERSUS_LOG"], "checkpoint.pt")

    def load(self):
        return torch.load(self.path) if os.path.exists(self.path) else None

    def save(self, rank, step, state):
        if rank == 0:
            torch.save(state, self.path + ".tmp")
            os.replace(self.path + ".tmp", self.path)


def train_with_torch_ddp(system, args, make_checkpoint):
    """The training loop of the workers on torch's DDP: `make_checkpoint()`
    (after the process group exists) gives an object with load() -> state
    or None, and save(rank, step, state); or None for no checkpoint."""
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    module = make_model()
    opt = make_optimizer(module, args.lr)
    checkpoint = make_checkpoint()
    first = 0
    state = checkpoint.load() if checkpoint else None
    if state:
        module.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        first = state["step"]
    log = StepLog(system, rank)
    model = DistributedDataParallel(module)
    for s in range(first, args.steps):
        log.begin(s)
        x, y = shard(s, rank, size)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        if checkpoint:
            checkpoint.save(rank, s + 1, {"model": module.state_dict(), "optimizer": opt.state_dict(), "step": s + 1})
        log.step(s, size)
    if rank == 0:
        log.final(module, args.steps)
    dist.destroy_process_group()


def main():
    ap = arguments(__doc__)
    ap.add_argument("--no-checkpoint", action="store_true")
    ap.add_argument("--system", default="torchrun")
    args = ap.parse_args()
    train_with_torch_ddp(args.system, args, lambda: None if args.no_checkpoint else DiskCheckpoint())


if __name__ == "__main__":
    main()
