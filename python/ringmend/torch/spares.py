"""Spares inside DDP (docs/torch.md, "Spares inside DDP"): the state a
spare receives (training_state), DDP whose step is one gradient call that a
spare admitted inside it can take part in (DistributedDataParallel,
whole_step_mean_hook)."""

import torch
import torch.distributed as dist

from ringmend.torch import _startup


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
    params = [p for group in optimizer.param_groups for p in group["params"]]
    grads = [p.grad for p in params]
    lrs = [group["lr"] for group in optimizer.param_groups]
    for p in params:
        p.grad = torch.zeros_like(p)
    for group in optimizer.param_groups:
        group["lr"] = 0.0
    optimizer.step()
    for group, lr in zip(optimizer.param_groups, lrs):
        group["lr"] = lr
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
    state["ringmend.torch.start"] = _startup.start
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
            _copy_back(flat, grads)
        except Exception as e:  # every bucket's future carries the error
            for _, f in buckets:
                f.set_exception(e)
            return
        for buffer, f in buckets:
            f.set_result(buffer)

    work.get_future().then(finish)
    return future


def _copy_back(flat, tensors):
    """The tensors laid end to end in `flat`, copied back into each."""
    offset = 0
    for t in tensors:
        t.copy_(flat[offset : offset + t.numel()].view_as(t))
        offset += t.numel()


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
    world = _startup.runtime().world
    ddp = torch.nn.parallel.DistributedDataParallel(
        module, process_group=_local_group(), init_sync=False, **ddp_options
    )
    tensors = [t.detach() for t in module.state_dict(keep_vars=True).values() if t.is_floating_point()]
    if tensors and (not world.joined or _startup.starts_with_members):
        flat = torch.cat([t.reshape(-1).double() for t in tensors])
        if group is None:
            # By rank: a spare that replaced rank 0 sends (from its state).
            for _ in range(_startup.ROOT_RETRIES):
                if _startup.broadcast_from_rank_0(world, flat, _startup.IN_PARAMETERS):
                    break
        else:
            dist.broadcast(flat, src=0, group=group)
        _copy_back(flat, tensors)
    ddp.register_comm_hook(_WholeStep(group, module), whole_step_mean_hook)
    return ddp
