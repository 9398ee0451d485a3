"""Fault-tolerant HSDP (docs/torch.md, "Fault-tolerant HSDP"): FSDP2's
fully_shard over the "shard" dimension of a (replica, shard) DeviceMesh,
gradients averaged over "replica", that keeps training in place when a
member dies, a spare taking its place and its shards.

    step = torch.zeros(1, dtype=torch.int64)
    ringmend.torch.init_process_group(state=hsdp.spare_state(step), subgroup_recovery="step")
    ft = hsdp.FaultTolerantHSDP(make_model, lambda ps: torch.optim.AdamW(ps), (2, 2), step)
    while step[0] < steps:
        ft.run_step(lambda model: loss_of(model, batch(step)).backward())

Recovery by the step (docs/subgroups.md): each step's collectives run on
the mesh's subgroups, then one small world call, the vote, says whether
every member's step succeeded. Vote 0: the optimizer steps and the counter
moves on. Else nothing is committed: the mesh and the sharded model are
made again (a spare, admitted at the vote in the lost member's rank, in
them), a member that was not there before receives its parameter and
optimizer shards from a replica of the same shard, and the step runs
again. torchft repeats a replica group's step too, with a lighthouse
service and a restarted group; here the processes and the mesh's other
members stay where they are.
"""

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor

from ringmend.torch import _startup
from ringmend.torch.spares import _materialize_optimizer_state

# How the backend words a subgroup's MemberLost (as_torch_error in
# python/src/torch_backend.cpp: "ringmend <what the code means>: ...").
_MEMBER_LOST = "ringmend a member of the subgroup was lost"


def spare_state(step):
    """The state a spare receives, for init_process_group(state=...): the
    step counter (a one-element int64 tensor the loop counts in) and
    ringmend.torch's start-up phase. The model's shards come from a replica
    once the spare is in the mesh (FaultTolerantHSDP), not from the state
    source, which may hold another shard."""
    if not (torch.is_tensor(step) and step.numel() == 1 and step.dtype == torch.int64):
        raise TypeError("spare_state(): step must be a one-element int64 tensor (the loop's counter)")
    return {"ringmend.torch.start": _startup.start, "step": step}


def _local(t):
    return t.to_local() if isinstance(t, DTensor) else t


def _state_tensors(model, optimizer):
    """This member's part of the training state, in one order on every
    member: its parameter shards, then each parameter's optimizer state."""
    params = list(model.parameters())
    out = [_local(p).detach() for p in params]
    for p in params:
        for _, value in sorted(optimizer.state[p].items()):
            if torch.is_tensor(value):
                out.append(_local(value))
    return out


class FaultTolerantHSDP:
    """HSDP over a (replicas, shards) mesh of the world that survives the
    loss of members while a replica of each shard is left.

    make_model(): the model, the same on every member (seed it: FSDP2 does
    not synchronise the first parameters); sharded here with fully_shard.
    make_optimizer(params): its optimizer (no collectives in its step).
    step: the loop's counter, registered with spare_state().
    """

    def __init__(self, make_model, make_optimizer, mesh_shape, step):
        rt = _startup.runtime()
        world = rt.world
        if rt.subgroup_recovery != "step":
            raise ValueError(
                "FaultTolerantHSDP needs recovery by the step: init_process_group(subgroup_recovery=\"step\") "
                "or RINGMEND_SUBGROUP_RECOVERY=step, the same on every rank"
            )
        replicas, shards = mesh_shape
        if replicas * shards != world.size:
            raise ValueError(f"a ({replicas}, {shards}) mesh needs {replicas * shards} ranks; the world has {world.size}")
        self._make_model, self._make_optimizer = make_model, make_optimizer
        self._shape = (replicas, shards)
        self.step = step
        self.model = self.optimizer = self.mesh = None
        self._shards = None  # this member's shards and optimizer state (_state_tensors)
        self.steps_repeated = 0
        # Meshes made so far; the current one's dimensions are named
        # "replica" and "shard" the first time, "replica_N" and "shard_N"
        # the N-th (mesh.mesh_dim_names).
        self.generation = 0
        # A spare admitted during training: its first call is the vote the
        # members are in. Admitted inside ringmend.torch's start-up, it is
        # in step with the members and starts as they do.
        self._spare_first_vote = world.joined and not _startup.starts_with_members
        self._fresh = self._spare_first_vote  # holds no shard of its own yet
        self._remake = True

    def _make(self):
        """The mesh and the sharded model, made again after a loss: the old
        shards carried over on the members that have them, received from a
        replica on one that does not."""
        # Named anew each time: torch takes meshes of one shape and names for
        # the same mesh (DeviceMesh.__eq__ compares neither groups nor their
        # members), and its caches (DTensor's sharding propagation) would
        # hand the new model's collectives the old mesh's ended groups.
        self.generation += 1
        suffix = "" if self.generation == 1 else f"_{self.generation}"
        mesh = init_device_mesh("cpu", self._shape, mesh_dim_names=("replica" + suffix, "shard" + suffix))
        model = self._make_model()
        fully_shard(model, mesh=mesh)
        optimizer = self._make_optimizer(model.parameters())
        _materialize_optimizer_state(optimizer)
        # Taken now, while the parameters are sharded: a step cut short may
        # leave FSDP2's module holding its unsharded parameters.
        mine = _state_tensors(model, optimizer)
        if self._shards is not None and not self._fresh:
            with torch.no_grad():
                for new, old in zip(mine, self._shards):
                    new.copy_(old)
        replica = mesh.get_group(0)
        fresh = torch.tensor([1 if self._fresh else 0], dtype=torch.int32)
        flags = torch.empty(self._shape[0], dtype=torch.int32)
        dist.all_gather_into_tensor(flags, fresh, group=replica)
        if int(flags.sum()) > 0:
            have = [i for i, f in enumerate(flags.tolist()) if f == 0]
            if not have:
                raise RuntimeError(
                    f"FaultTolerantHSDP: every replica of shard {mesh.get_local_rank(1)} was lost; "
                    f"its parameters are gone"
                )
            # One broadcast per dtype, from the first replica that was there.
            by_dtype = {}
            for t in mine:
                by_dtype.setdefault(t.dtype, []).append(t)
            for tensors in by_dtype.values():
                flat = torch.cat([t.reshape(-1) for t in tensors])
                dist.broadcast(flat, group=replica, group_src=have[0])
                offset = 0
                with torch.no_grad():
                    for t in tensors:
                        t.copy_(flat[offset : offset + t.numel()].view_as(t))
                        offset += t.numel()
        self.mesh, self.model, self.optimizer, self._shards = mesh, model, optimizer, mine
        self._fresh = False

    def run_step(self, compute):
        """One step: compute(model) runs the forward and backward passes
        (FSDP2's collectives, on the mesh); then the vote. Returns True when
        the step was committed (the optimizer stepped, the counter moved),
        False when it must run again (a member was lost: the mesh is made
        again at the next call)."""
        failed = 0
        if self._spare_first_vote:
            failed, self._spare_first_vote = 1, False
        else:
            try:
                if self._remake:
                    self._make()
                    self._remake = False
                compute(self.model)
            except RuntimeError as e:
                if _MEMBER_LOST not in str(e):
                    raise
                failed = 1
        vote = torch.tensor([failed], dtype=torch.int32)
        dist.all_reduce(vote, op=dist.ReduceOp.MAX)
        if int(vote[0]) == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()
            self.step += 1
            return True
        if self.optimizer is not None:
            self.optimizer.zero_grad()
        self.steps_repeated += 1
        self._remake = True
        return False

    def full_parameters(self):
        """Every parameter whole (an all-gather over "shard"), for checks."""
        return [p.full_tensor() for p in self.model.parameters()]
