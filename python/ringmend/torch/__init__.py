"""The torch.distributed backend "ringmend": DDP that keeps training in place
when ranks die.

    import torch.distributed as dist
    import ringmend.torch                                    # registers the backend
    world = ringmend.torch.init_process_group()              # dist over ringmend's world
    model = torch.nn.parallel.DistributedDataParallel(model)
    model.register_comm_hook(None, ringmend.torch.elastic_mean_hook)

Launch with ringmend-run. CPU tensors of float32, float64, int32, int64,
float16 and bfloat16; allreduce (SUM, AVG, PRODUCT, MIN, MAX), broadcast,
barrier, allgather, reduce_scatter, all non-blocking (async_op=True gives a
Work with wait(), is_completed() and get_future()). Other operations raise
an error that names them. dist.new_group (and a DeviceMesh's dimensions)
makes ringmend subgroups (docs/subgroups.md); ringmend.torch.hsdp trains
HSDP over them through failures, spares taking the lost members' places.

After a failure the group keeps working, in place: torch fixes a group's
rank and size when it is made, so the group keeps its numbering and size
(with spares the size is real again once they have joined), and the lost
ranks simply no longer contribute. `live_size()` is the number of members
alive; AVG and `elastic_mean_hook` divide by the number of members whose
inputs the result holds, so a model trained through a failure matches a
serial replay of the same samples. The application hears of a change
through `on_membership_change`, not an exception (docs/torch.md).

With spares (ringmend-run --spares), a spare takes a dead member's place
inside the step:

    step = torch.zeros(1, dtype=torch.int64)
    world = ringmend.torch.init_process_group(state=ringmend.torch.training_state(model, opt, step))
    model = ringmend.torch.DistributedDataParallel(model)   # one gradient call per step

(docs/torch.md, "Spares inside DDP").
"""

import datetime as _datetime
import os

import torch
import torch.distributed as dist

from ringmend.torch import _startup
from ringmend.torch._backend import RingmendBackend
from ringmend.torch._startup import runtime
from ringmend.torch.spares import DistributedDataParallel, training_state, whole_step_mean_hook


# The member id of each torch rank of the default group, as it was made
# (torch keeps a group's ranks for good; ringmend's renumber after a loss),
# except that a spare takes the torch rank of the member it replaced.
_torch_rank_members = None
_members_seen = None  # ringmend's ranks' members before the latest change


def _follow_replacements(change):
    """A spare admitted in a lost member's place takes its ringmend rank;
    it takes its torch rank too, so that dist.new_group (a DeviceMesh made
    again after the loss) finds it where the lost member was."""
    global _members_seen
    current = list(runtime().world.member_ids)
    for rank, member in enumerate(current):
        if member in change.joined and rank < len(_members_seen) and _members_seen[rank] in change.lost:
            lost = _members_seen[rank]
            if lost in _torch_rank_members:
                _torch_rank_members[_torch_rank_members.index(lost)] = member
    _members_seen = current


def _create(opts, _backend_options=None):
    """torch's creator of a process group's backend (the extended API, which
    names the group's global ranks). The first is the default group: the
    world. Every later one (dist.new_group, a DeviceMesh dimension) is a
    ringmend subgroup of the world's members at those ranks, made by them
    only, as torch calls this on the group's members only."""
    global _torch_rank_members
    world = runtime().world
    rank, size = opts.group_rank, opts.group_size
    if not dist.is_initialized():
        if rank != world.rank or size != world.size:
            raise ValueError(
                f"the ringmend backend takes torch's rank and size from ringmend's world "
                f"(rank {world.rank} of {world.size}), but torch passed rank {rank} of {size}: "
                f"use ringmend.torch.init_process_group(), or pass rank and world_size from it"
            )
        global _members_seen
        _torch_rank_members = list(world.member_ids)
        if _members_seen is None:
            world.on_membership_change(_follow_replacements)
        _members_seen = list(world.member_ids)
        return RingmendBackend(world._capsule(), world, rank, size)
    global_ranks = list(opts.global_ranks_in_group) or list(range(len(_torch_rank_members)))
    current = list(world.member_ids)
    ranks = []
    for r in global_ranks:
        member = _torch_rank_members[r]
        if member not in current:
            raise RuntimeError(
                f"new_group: torch rank {r} (ringmend member {member}) is gone; a group can only be "
                f"made of live members"
            )
        ranks.append(current.index(member))
    sub = world.group(ranks)
    if sub.rank != rank or sub.size != size:
        raise RuntimeError(f"new_group: ringmend made rank {sub.rank} of {sub.size}, torch expected {rank} of {size}")
    return RingmendBackend(sub._capsule(), sub, rank, size, list(sub.member_ids))


# One backend object serves both devices; CUDA tensors are refused with an
# error that says so (the backend reduces CPU tensors).
dist.Backend.register_backend("ringmend", _create, extended_api=True, devices=["cpu", "cuda"])


def init_process_group(timeout=_datetime.timedelta(minutes=30), backend="ringmend", state=None, **runtime_options):
    """torch.distributed's default group over ringmend's world; returns the
    ringmend Communicator. torch still wants a key-value store for its own
    start-up barrier: rank 0 serves a TCPStore whose address reaches the
    others through a ringmend broadcast (no MASTER_ADDR/MASTER_PORT needed).
    The address is rank 0's on ringmend's control network (a host name
    need not resolve to an address the other nodes can reach).
    `backend`: "ringmend", or a spec per device such as
    "cpu:gloo,cuda:ringmend".
    `state`: tensors a spare receives when it takes a lost member's place
    (training_state() makes them for a model and its optimizer); a spare
    waits here until it is admitted, and returns with them filled in. A
    spare admitted inside the broadcast of the store's address takes part in
    it and uses the members' store; one admitted later cannot count on that
    store (rank 0 may be the member it replaces): its torch group starts
    from a store of its own, so only ringmend groups serve it."""
    if state is not None:
        runtime_options["state"] = state
    rt = runtime(**runtime_options)
    world = rt.world
    admitted_in = int(_startup.start[0])  # a spare's: where the members were
    _startup.starts_with_members = world.joined and admitted_in != 0
    # gloo groups beside this one (dist.new_group(backend="gloo")) find
    # their address from the host name, which Debian resolves to 127.0.1.1:
    # unless told otherwise, they use ringmend's control interface.
    if "GLOO_SOCKET_IFNAME" not in os.environ:
        interface = _startup.interface_of(rt.control_address)
        if interface:
            os.environ["GLOO_SOCKET_IFNAME"] = interface
    store = None
    if not world.joined or admitted_in == _startup.IN_STORE_ADDRESS:
        store = _startup.members_store(rt, world, timeout)
    if store is None:
        store = dist.HashStore()
    if not world.joined or admitted_in in (_startup.IN_STORE_ADDRESS, _startup.IN_STORE_CHECK):
        # Nobody goes on while another still connects to rank 0's store:
        # after this call, rank 0's death cannot leave a rank retrying to
        # reach it.
        with _startup.in_phase(_startup.IN_STORE_CHECK):
            world.barrier()
    dist.init_process_group(backend, store=store, rank=world.rank, world_size=world.size, timeout=timeout)
    return world


def _group(group):
    """The ringmend backend of a process group (None: the default group)."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    found = []
    for device in ("cpu", "cuda"):
        try:
            backend = pg._get_backend(torch.device(device))
        except RuntimeError:
            continue
        if isinstance(backend, RingmendBackend):
            return backend
        found.append(type(backend).__name__)
    raise TypeError(f"not a ringmend process group: its backends are {', '.join(found) or 'none'}")


def live_size(group=None):
    """The members alive now (torch's get_world_size() stays the size at creation)."""
    return _group(group).live_size


def live_rank(group=None):
    """This process's rank among the members alive now."""
    return _group(group).live_rank


def on_membership_change(callback):
    """Calls callback(change) after each membership change, on every member
    (a ringmend.MembershipChange: lost, joined, sizes, recovery times).
    Returns an id for ringmend's remove_membership_callback."""
    return runtime().world.on_membership_change(callback)


def elastic_mean_hook(state, bucket):
    """A DDP communication hook: the gradient bucket's mean over the members
    whose gradients the sum holds (torch's default hook divides by the
    group's size, which a lost rank makes wrong)."""
    # DDP passes the process group it was given as the state (None: the default group).
    work = dist.all_reduce(bucket.buffer(), op=dist.ReduceOp.AVG, group=state, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


__all__ = [
    "DistributedDataParallel",
    "RingmendBackend",
    "elastic_mean_hook",
    "init_process_group",
    "live_rank",
    "live_size",
    "on_membership_change",
    "runtime",
    "training_state",
    "whole_step_mean_hook",
]
