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
an error that names them.

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
import sys

import torch
import torch.distributed as dist

import ringmend
from ringmend.torch._backend import RingmendBackend

_runtime = None

# Which of ringmend.torch's own start-up calls the members are in: 0 none,
# 1 the broadcast of the TCPStore's address and 3 the barrier after it
# (init_process_group), 2 the broadcast of the parameters
# (DistributedDataParallel). Part of the state
# a spare receives (training_state): admitted inside one of them, it takes
# part in it as the members do, instead of in a call of its own that no
# member makes.
_start = torch.zeros(1, dtype=torch.int64)
_IN_STORE_ADDRESS, _IN_PARAMETERS, _IN_STORE_CHECK = 1, 2, 3
_STORE_CONNECT_SECONDS = 30
_ROOT_RETRIES = 3  # rank 0 lost in a start-up broadcast, then its successor too, ...
# A spare admitted inside one of them is in step with the members from
# there on: it makes the start-up calls that follow, as they do.
_starts_with_members = False


def runtime(**options):
    """The process's ringmend Runtime, started on first use (options as for
    ringmend.Runtime)."""
    global _runtime
    if _runtime is None or _runtime.closed:
        _runtime = ringmend.Runtime(**options)
    elif options:
        raise ValueError("ringmend.torch.runtime(): the Runtime has started already; its options are set")
    return _runtime


def _create(store, rank, world_size, timeout):
    world = runtime().world
    if rank != world.rank or world_size != world.size:
        raise ValueError(
            f"the ringmend backend takes torch's rank and size from ringmend's world "
            f"(rank {world.rank} of {world.size}), but torch passed rank {rank} of {world_size}: "
            f"use ringmend.torch.init_process_group(), or pass rank and world_size from it"
        )
    return RingmendBackend(world._capsule(), world, rank, world_size)


# One backend object serves both devices; CUDA tensors are refused with an
# error that says so (the backend reduces CPU tensors).
dist.Backend.register_backend("ringmend", _create, devices=["cpu", "cuda"])


def _interface_of(address):
    """The name of this host's interface with IPv4 `address`, or None."""
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                raw = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
            except OSError:
                continue
            if socket.inet_ntoa(raw[20:24]) == address:
                return name
    return None


def _broadcast_from_rank_0(world, data, phase):
    """One of the start-up broadcasts, from rank 0 (by rank: a spare that
    took rank 0's place sends). False when rank 0 died before anyone had
    the data: every rank hears so (ROOT_LOST), and all try again from the
    new rank 0."""
    _start[0] = phase
    try:
        world.broadcast(data, root=0)
        return True
    except ringmend.Error as e:
        if e.code != ringmend.Errc.ROOT_LOST:
            raise
        return False
    finally:
        _start[0] = 0


def _members_store(rt, world, timeout):
    """Rank 0's TCPStore, served by rank 0 and reached by the others at the
    address it broadcasts; None when rank 0 could not be reached (it died
    after it sent the address): the process then starts from a store of its
    own, and only ringmend groups serve it."""
    import numpy as np

    address = np.zeros(256, dtype=np.int32)
    store = None
    for attempt in range(_ROOT_RETRIES):
        if world.rank == 0 and store is None:
            host = rt.control_address
            store = dist.TCPStore(host, 0, world.size, True, timeout, wait_for_workers=False)
            text = f"{host}:{store.port}".encode()
            address[: len(text)] = list(text)
        if _broadcast_from_rank_0(world, address, _IN_STORE_ADDRESS):
            break
    if store is not None:
        return store
    host, port = bytes(address[address > 0].astype(np.uint8)).decode().rsplit(":", 1)
    # The connection's wait is bounded apart from the store's: torch retries
    # a refused connection for the whole timeout (30 minutes by default).
    connect = min(timeout, _datetime.timedelta(seconds=_STORE_CONNECT_SECONDS))
    try:
        store = dist.TCPStore(host, int(port), world.size, False, connect)
    except (RuntimeError, dist.DistError) as e:
        print(f"ringmend.torch: rank 0's TCPStore at {host}:{port} cannot be reached ({e}); this rank's torch "
              f"group starts from a store of its own: only ringmend groups serve it", file=sys.stderr, flush=True)
        return None
    store.set_timeout(timeout)
    return store


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
    import numpy as np

    if state is not None:
        runtime_options["state"] = state
    global _starts_with_members
    rt = runtime(**runtime_options)
    world = rt.world
    admitted_in = int(_start[0])  # a spare's: where the members were
    _starts_with_members = world.joined and admitted_in != 0
    # gloo groups beside this one (dist.new_group(backend="gloo")) find
    # their address from the host name, which Debian resolves to 127.0.1.1:
    # unless told otherwise, they use ringmend's control interface.
    if "GLOO_SOCKET_IFNAME" not in os.environ:
        interface = _interface_of(rt.control_address)
        if interface:
            os.environ["GLOO_SOCKET_IFNAME"] = interface
    store = None
    if not world.joined or admitted_in == _IN_STORE_ADDRESS:
        store = _members_store(rt, world, timeout)
    if store is None:
        store = dist.HashStore()
    if not world.joined or admitted_in in (_IN_STORE_ADDRESS, _IN_STORE_CHECK):
        # Nobody goes on while another still connects to rank 0's store:
        # after this call, rank 0's death cannot leave a rank retrying to
        # reach it.
        _start[0] = _IN_STORE_CHECK
        world.barrier()
        _start[0] = 0
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


def _materialize_optimizer_state(optimizer):
    """Creates the optimizer's per-parameter state now, as its first step
    would, so that members and spares register the same tensors before any
    step: one step with zero gradients and a learning rate of 0 (params do
    not move), then every state tensor set to 0 (weight decay made moments
    of the parameters; step counters went to 1). Zero is what Adam, AdamW,
    RMSprop and SGD make lazily (SGD's momentum is its first gradient, which
    a zero buffer gives too when dampening is 0): training goes on exactly
    as without it."""
    if optimizer.state:
        return
    for group in optimizer.param_groups:
        if group.get("dampening", 0):
            raise ValueError(
                "training_state(): SGD with dampening makes its momentum from the first gradient; "
                "a spare could not receive it before the first step: use dampening=0"
            )
        if group.get("initial_accumulator_value", 0):
            raise ValueError(
                "training_state(): an initial_accumulator_value other than 0 is not a state of zeros"
            )
    grads = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            grads.append(p.grad)
            p.grad = torch.zeros_like(p)
    lrs = [group["lr"] for group in optimizer.param_groups]
    for group in optimizer.param_groups:
        group["lr"] = 0.0
    optimizer.step()
    for group, lr in zip(optimizer.param_groups, lrs):
        group["lr"] = lr
    params = [p for group in optimizer.param_groups for p in group["params"]]
    for p, g in zip(params, grads):
        p.grad = g
    for per_param in optimizer.state.values():
        for key, value in per_param.items():
            if torch.is_tensor(value):
                value.zero_()
            elif key == "step":
                per_param[key] = 0


def training_state(model, optimizer=None, step=None):
    """The tensors a spare needs to take a lost member's place in training,
    by name, for init_process_group(state=...): the model's parameters and
    buffers, the optimizer's per-parameter state (made now: see
    _materialize_optimizer_state), and `step`, a one-element int64 tensor
    the training loop counts in. Members and spares build the same model and
    optimizer and call this before init_process_group; an admitted spare
    finds them as the members had them in the step it joins."""
    module = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
    state = {}
    for name, tensor in module.state_dict(keep_vars=True).items():
        state["model." + name] = tensor.detach()  # the same memory
    if optimizer is not None:
        _materialize_optimizer_state(optimizer)
        index = {id(p): i for i, p in enumerate(module.parameters())}
        for p, per_param in optimizer.state.items():
            for key, value in sorted(per_param.items()):
                if torch.is_tensor(value):
                    state[f"optimizer.{index.get(id(p), 'x')}.{key}"] = value.view(-1) if value.dim() == 0 else value
    state["ringmend.torch.start"] = _start
    if step is not None:
        if not (torch.is_tensor(step) and step.numel() == 1):
            raise TypeError("training_state(): step must be a one-element tensor (the loop's counter)")
        state["step"] = step
    return dict(sorted(state.items()))


class _WholeStep:
    """whole_step_mean_hook's state: the step's buckets until the last."""

    def __init__(self, group, module):
        self.group = group
        self.position = {p.data_ptr(): i for i, p in enumerate(module.parameters())}
        self.pending = []  # (position, gradient view) of the step's buckets so far
        self.pending_buckets = []  # (buffer, future) of each


def whole_step_mean_hook(state, bucket):
    """A DDP communication hook that reduces the whole step's gradients in
    one call, when the last bucket is ready: their mean over the members
    whose gradients the sum holds (as elastic_mean_hook). One call per step
    is what lets a spare join inside it: a spare admitted in a lost member's
    place computes that step's gradients and takes part in that very call,
    which a step of several calls, half done, would not allow. The
    gradients go in the model's parameter order, so that every process
    agrees however its DDP bucketed them (a spare's first step is DDP's
    first, before its buckets are rebuilt)."""
    future = torch.futures.Future()
    for p, g in zip(bucket.parameters(), bucket.gradients()):
        state.pending.append((state.position[p.data_ptr()], g))
    state.pending_buckets.append((bucket.buffer(), future))
    if not bucket.is_last():
        return future
    grads = [g for _, g in sorted(state.pending, key=lambda e: e[0])]
    buckets = state.pending_buckets
    state.pending, state.pending_buckets = [], []
    flat = torch.cat([g.reshape(-1) for g in grads])
    work = dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=state.group, async_op=True)

    def finish(done):
        try:
            done.value()
            offset = 0
            for g in grads:
                g.copy_(flat[offset : offset + g.numel()].view_as(g))
                offset += g.numel()
        except Exception as e:  # every bucket's future carries the error
            for _, f in buckets:
                f.set_exception(e)
            return
        for buffer, f in buckets:
            f.set_result(buffer)

    work.get_future().then(finish)
    return future


def _local_group():
    """A process group of this process alone (gloo, an in-memory store):
    DDP's own collectives (the start's parameter check and broadcast, the
    bucket rebuild after the first step) then stay local, where a spare that
    joins in the middle of training could not match the members' calls."""
    store = dist.HashStore()
    group = dist.ProcessGroup(store, 0, 1)
    gloo = dist.ProcessGroupGloo(store, 0, 1)
    group._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
    group._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, gloo)
    return group


def DistributedDataParallel(module, group=None, **ddp_options):
    """torch's DistributedDataParallel made to take spares: DDP bucketing
    over a group of this process alone, its gradients reduced over `group`
    (None: the default group) by whole_step_mean_hook, one call per step.
    The members start from rank 0's parameters and buffers (one broadcast,
    as DDP's own start); a spare admitted later has them from its state
    already and makes no call here. Buffers are not synchronised at each
    forward (DDP's broadcast_buffers): a model with running statistics
    (BatchNorm) keeps each rank's own. A spare admitted inside that
    broadcast (a member died in it) takes part in it."""
    world = runtime().world
    ddp = torch.nn.parallel.DistributedDataParallel(
        module, process_group=_local_group(), init_sync=False, **ddp_options
    )
    tensors = [t.detach() for t in module.state_dict(keep_vars=True).values() if t.is_floating_point()]
    if tensors and (not world.joined or _starts_with_members):
        flat = torch.cat([t.reshape(-1).double() for t in tensors])
        if group is None:
            # By rank: a spare that replaced rank 0 sends (from its state).
            for attempt in range(_ROOT_RETRIES):
                if _broadcast_from_rank_0(world, flat, _IN_PARAMETERS):
                    break
        else:
            dist.broadcast(flat, src=0, group=group)
        offset = 0
        for t in tensors:
            t.copy_(flat[offset : offset + t.numel()].view_as(t))
            offset += t.numel()
    ddp.register_comm_hook(_WholeStep(group, module), whole_step_mean_hook)
    return ddp


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
