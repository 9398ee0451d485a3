"""DLRover's worker, under `dlrover-run --standalone` (its local master):
torch's DistributedDataParallel over gloo (worker_torchrun.py's loop) with
DLRover's flash checkpoint, as its documentation advises: the state saved
to shared memory after every step (the agent keeps it across a restart of
the workers), so that a restarted job resumes from the last step instead
of a disk checkpoint."""

import os

from dlrover.trainer.torch.flash_checkpoint.ddp import DdpCheckpointer, StorageType

from step_log import arguments
from worker_torchrun import train_with_torch_ddp


class FlashCheckpoint:
    def __init__(self):
        self.dir = os.path.join(os.environ["VERSUS_LOG"], "flash")
        self.checkpointer = DdpCheckpointer(self.dir)

    def load(self):
        return self.checkpointer.load_checkpoint() or None

    def save(self, rank, step, state):
        self.checkpointer.save_checkpoint(step, state, os.path.join(self.dir, f"step-{step}.pt"),
                                          storage_type=StorageType.MEMORY)


def main():
    args = arguments(__doc__).parse_args()
    train_with_torch_ddp("dlrover", args, FlashCheckpoint)


if __name__ == "__main__":
    main()
