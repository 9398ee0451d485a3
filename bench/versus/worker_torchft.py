"""torchft's worker: one replica group of one process, as in torchft's
train_ddp.py (its recommended DDP loop): a Manager that meets the
Lighthouse for a quorum every step, torchft's DistributedDataParallel and
Optimizer wrapper over its reconfigurable ProcessGroupGloo, and live
recovery of a restarted group from a healthy one (PGTransport).

Each group trains on its share of the global batch (REPLICA_GROUP_ID of
NUM_REPLICA_GROUPS); a step whose allreduce failed is not committed (the
optimizer does not step) and is tried again with the quorum that is left.
Only committed steps are logged."""

import os
from datetime import timedelta

import torch
from torchft import DistributedDataParallel, Manager, Optimizer, ProcessGroupGloo
from torchft.checkpointing.pg_transport import PGTransport

from step_log import StepLog, arguments

from ddp_model import make_model, make_optimizer, shard


def main():
    args = arguments(__doc__).parse_args()
    group = int(os.environ["REPLICA_GROUP_ID"])
    groups = int(os.environ["NUM_REPLICA_GROUPS"])
    module = make_model()
    inner = make_optimizer(module, args.lr)

    def state_dict():
        return {"model": module.state_dict(), "optimizer": inner.state_dict()}

    def load_state_dict(state):
        module.load_state_dict(state["model"])
        inner.load_state_dict(state["optimizer"])

    # The timeouts of torchft's own train_ddp.py. init_sync=False, as its
    # docs advise when every group builds the model from the same seed (with
    # it, the other groups heal from a primary in step 0 and only the
    # primary's gradients count: a different model than DDP's).
    pg = ProcessGroupGloo(timeout=timedelta(seconds=5))
    manager = Manager(pg=pg, min_replica_size=1, init_sync=False, load_state_dict=load_state_dict,
                      state_dict=state_dict,
                      replica_id=f"versus_{group}", timeout=timedelta(seconds=30),
                      hostname=os.environ.get("VERSUS_HOST", "localhost"),
                      checkpoint_transport=PGTransport(pg, timeout=timedelta(seconds=10), device="cpu"))
    model = DistributedDataParallel(manager, module)
    opt = Optimizer(manager, inner)
    log = StepLog("torchft", group)
    log.wait_for_peers(groups)
    while manager.current_step() < args.steps:
        s = manager.current_step()
        log.begin(s)
        opt.zero_grad()  # starts the step's quorum
        x, y = shard(s, group, groups)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()  # steps only when every participant's allreduce succeeded
        if manager.current_step() > s:  # committed (a group that healed in it jumps to the others' step)
            log.step(manager.current_step() - 1, manager.num_participants())
    if group == 0:
        log.final(module, args.steps)
    manager.shutdown()


if __name__ == "__main__":
    main()
