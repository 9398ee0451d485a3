"""The torch.distributed backend "ringmend" against torch's own gloo backend,
on the same data, in a real MPI job of several ranks. Run on its own (it
starts its own Runtime through ringmend.torch)."""

import pytest

# The set-up installs torch (scripts/bootstrap.sh --with-python): without it
# this test fails rather than passing with nothing run.
import torch
import torch.distributed as dist

import ringmend  # noqa: E402
import ringmend.torch as rmt  # noqa: E402

OPS = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
TYPES = [torch.float32, torch.float64, torch.int32, torch.int64, torch.float16, torch.bfloat16]
# bfloat16 is checked against a reduction computed here (gloo had no
# bfloat16 reductions when this test was written).
GLOO_TYPES = [torch.float32, torch.float64, torch.int32, torch.int64, torch.float16]


@pytest.fixture(scope="module")
def groups():
    world = rmt.init_process_group()
    gloo = dist.new_group(backend="gloo")
    yield world, gloo
    dist.destroy_process_group()


def data(rank, n, op, dtype, salt=0):
    """Small integers: exact in every type, for every op and rank count here."""
    k = torch.arange(n, dtype=torch.int64) + salt
    if op == dist.ReduceOp.PRODUCT:
        v = (rank + k) % 3
        x = torch.where(v == 0, 2, torch.where(v == 1, -1, 1))
    elif op == dist.ReduceOp.SUM:
        x = (rank * 7 + k * 3) % 11 - 5
    else:
        x = (rank * 13 + k * 7) % 101 - 50
    return x.to(dtype)


def reference(size, n, op, dtype, salt=0):
    xs = [data(r, n, op, torch.int64, salt) for r in range(size)]
    out = xs[0]
    for x in xs[1:]:
        out = {
            dist.ReduceOp.SUM: torch.add,
            dist.ReduceOp.PRODUCT: torch.mul,
            dist.ReduceOp.MIN: torch.minimum,
            dist.ReduceOp.MAX: torch.maximum,
        }[op](out, x)
    return out.to(dtype)


def test_group(groups):
    world, _ = groups
    assert dist.get_backend() == "ringmend"
    assert dist.get_rank() == world.rank and dist.get_world_size() == world.size
    assert rmt.live_size() == world.size and rmt.live_rank() == world.rank
    assert torch.__version__ >= "2"


def test_one_backend_serves_cpu_and_cuda(groups):
    """Registered the torch 2.x way for both devices: a CUDA tensor reaches
    the backend (which refuses it by name) rather than finding no backend."""
    pg = dist.distributed_c10d._get_default_group()
    cpu = pg._get_backend(torch.device("cpu"))
    assert isinstance(cpu, rmt.RingmendBackend)
    assert pg._get_backend(torch.device("cuda")) is cpu
    if torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="cuda"):
            dist.all_reduce(torch.ones(4, device="cuda"))


@pytest.mark.parametrize("dtype", TYPES, ids=str)
@pytest.mark.parametrize("op", OPS, ids=str)
def test_allreduce_against_gloo(groups, dtype, op):
    _, gloo = groups
    n = 20011
    mine = data(dist.get_rank(), n, op, dtype)
    ours = mine.clone()
    dist.all_reduce(ours, op=op)
    if dtype in GLOO_TYPES:
        theirs = mine.clone()
        dist.all_reduce(theirs, op=op, group=gloo)
        assert torch.equal(ours, theirs)
    assert torch.equal(ours, reference(dist.get_world_size(), n, op, dtype))


def test_average(groups):
    x = torch.full((1000,), float(dist.get_rank()), dtype=torch.float64)
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    size = dist.get_world_size()
    assert torch.equal(x, torch.full((1000,), (size - 1) / 2, dtype=torch.float64))


def test_async_work(groups):
    xs = [data(dist.get_rank(), 5003 + i, dist.ReduceOp.SUM, torch.float32) for i in range(4)]
    works = [dist.all_reduce(x, async_op=True) for x in xs]
    fut = works[-1].get_future()
    for w in works:
        assert w.wait()
        assert w.is_completed()
    assert torch.equal(fut.wait()[0], xs[-1])
    for i, x in enumerate(xs):
        assert torch.equal(x, reference(dist.get_world_size(), 5003 + i, dist.ReduceOp.SUM, torch.float32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
def test_broadcast_against_gloo(groups, dtype):
    _, gloo = groups
    root = dist.get_world_size() - 1
    x = data(dist.get_rank(), 7777, dist.ReduceOp.MAX, dtype)
    y = x.clone()
    dist.broadcast(x, src=root)
    if dtype in GLOO_TYPES:
        dist.broadcast(y, src=root, group=gloo)
        assert torch.equal(x, y)
    assert torch.equal(x, data(root, 7777, dist.ReduceOp.MAX, dtype))


def test_barrier(groups):
    dist.barrier()
    dist.barrier(async_op=True).wait()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.float64], ids=str)
@pytest.mark.parametrize("n", [1, 3, 1001])
def test_allgather_against_gloo(groups, dtype, n):
    _, gloo = groups
    size = dist.get_world_size()
    # NaN, -0.0 and infinities arrive bit for bit as well.
    mine = torch.arange(n, dtype=torch.float64).mul(dist.get_rank() + 1).to(dtype)
    if dtype.is_floating_point and n > 2:
        mine[0], mine[1], mine[2] = float("nan"), -0.0, float("inf")
    ours = [torch.empty_like(mine) for _ in range(size)]
    theirs = [torch.empty_like(mine) for _ in range(size)]
    dist.all_gather(ours, mine)
    dist.all_gather(theirs, mine, group=gloo)
    for r, (a, b) in enumerate(zip(ours, theirs)):
        assert a.numpy().tobytes() == b.numpy().tobytes(), f"slot {r} differs from gloo's"


@pytest.mark.parametrize("in_place", [False, True], ids=["out_of_place", "in_place"])
def test_all_gather_into_tensor(groups, in_place):
    """FSDP's call: one output tensor, the input often a view of this rank's slot."""
    _, gloo = groups
    size, rank = dist.get_world_size(), dist.get_rank()
    n = 4099
    out = torch.full((size * n,), -1.0, dtype=torch.bfloat16)
    mine = torch.arange(n, dtype=torch.float32).add(rank * 0.5).to(torch.bfloat16)
    if in_place:
        out[rank * n : (rank + 1) * n] = mine
        mine = out[rank * n : (rank + 1) * n]
    dist.all_gather_into_tensor(out, mine)
    theirs = torch.empty(size * n, dtype=torch.float32)
    dist.all_gather_into_tensor(theirs, torch.arange(n, dtype=torch.float32).add(rank * 0.5), group=gloo)
    assert torch.equal(out, theirs.to(torch.bfloat16))


def test_reduce_scatter(groups):
    size, rank = dist.get_world_size(), dist.get_rank()
    n = 1001
    inputs = [data(rank, n, dist.ReduceOp.SUM, torch.float32, salt=s * n) for s in range(size)]
    out = torch.empty(n)
    dist.reduce_scatter(out, inputs)
    assert torch.equal(out, reference(size, n, dist.ReduceOp.SUM, torch.float32, salt=rank * n))


@pytest.mark.parametrize("dtype", TYPES, ids=str)
@pytest.mark.parametrize("op", OPS + [dist.ReduceOp.AVG], ids=str)
def test_reduce_scatter_tensor(groups, dtype, op):
    """FSDP's call: one input of size x the output, every op and type."""
    size, rank = dist.get_world_size(), dist.get_rank()
    if op == dist.ReduceOp.AVG and not dtype.is_floating_point:
        pytest.skip("AVG needs a floating-point tensor")
    n = 2053
    base = dist.ReduceOp.SUM if op == dist.ReduceOp.AVG else op
    flat = data(rank, size * n, base, dtype)
    out = torch.empty(n, dtype=dtype)
    dist.reduce_scatter_tensor(out, flat, op=op)
    want = reference(size, size * n, base, torch.float64)[rank * n : (rank + 1) * n]
    if op == dist.ReduceOp.AVG:
        want = want / size
    assert torch.equal(out, want.to(dtype)), f"{dtype} {op}"


def test_reduce_scatter_refuses_an_output_inside_the_input(groups):
    size, rank = dist.get_world_size(), dist.get_rank()
    flat = torch.ones(size * 8)
    with pytest.raises(RuntimeError, match="overlaps"):
        dist.reduce_scatter_tensor(flat[rank * 8 : (rank + 1) * 8], flat)


def uneven(rank, n):
    """Rank `rank`'s block of an uneven call: `n` values that name it."""
    return torch.arange(n, dtype=torch.float64).add(rank * 1000.0)


def test_all_gather_uneven_sizes(groups):
    """Output tensors of different sizes: ringmend's allgatherv (gloo refuses them)."""
    size, rank = dist.get_world_size(), dist.get_rank()
    sizes = [0 if r == 1 else 3 * r + 5 for r in range(size)]
    outs = [torch.full((n,), -1.0, dtype=torch.float64) for n in sizes]
    dist.all_gather(outs, uneven(rank, sizes[rank]))
    for r, o in enumerate(outs):
        assert torch.equal(o, uneven(r, sizes[r])), f"slot {r}"


@pytest.mark.parametrize("dtype", GLOO_TYPES, ids=str)
@pytest.mark.parametrize("splits", [False, True], ids=["even", "splits"])
def test_all_to_all_single_against_gloo(groups, dtype, splits):
    _, gloo = groups
    size, rank = dist.get_world_size(), dist.get_rank()
    cols = 3
    # Rows rank r sends to rank s: some none.
    rows = lambda r, s: (r + 2 * s) % 4 if splits else 2  # noqa: E731
    send = [rows(rank, s) for s in range(size)]
    recv = [rows(s, rank) for s in range(size)]
    mine = torch.arange(sum(send) * cols, dtype=torch.float64).add(rank * 100).reshape(-1, cols).to(dtype)
    ours = torch.full((sum(recv), cols), -1, dtype=dtype)
    theirs = torch.full((sum(recv), cols), -1, dtype=dtype)
    kwargs = {"output_split_sizes": recv, "input_split_sizes": send} if splits else {}
    dist.all_to_all_single(ours, mine, **kwargs)
    dist.all_to_all_single(theirs, mine, group=gloo, **kwargs)
    assert ours.numpy().tobytes() == theirs.numpy().tobytes()


def test_all_to_all_lists(groups):
    size, rank = dist.get_world_size(), dist.get_rank()
    n = lambda r, s: 0 if (r + s) % 3 == 2 else 10 * r + s + 1  # noqa: E731
    inputs = [uneven(rank, n(rank, s)).add(s * 0.5) for s in range(size)]
    outputs = [torch.full((n(s, rank),), -1.0, dtype=torch.float64) for s in range(size)]
    dist.all_to_all(outputs, inputs)
    for s, o in enumerate(outputs):
        assert torch.equal(o, uneven(s, n(s, rank)).add(rank * 0.5)), f"from rank {s}"


def test_all_to_all_bad_splits_fail_on_every_rank(groups):
    """One rank's splits do not add up: a RuntimeError there and on every other rank, no hang."""
    size, rank = dist.get_world_size(), dist.get_rank()
    x = torch.ones(2 * size)
    out = torch.empty(2 * size)
    splits = [2] * size
    if rank == 0:
        splits[0] = 3
    with pytest.raises(RuntimeError, match="split sizes|counts"):
        dist.all_to_all_single(out, x, output_split_sizes=splits, input_split_sizes=[2] * size)
    y = torch.ones(4)
    dist.all_reduce(y)
    assert torch.equal(y, torch.full((4,), float(size)))


def test_unsupported_operation_names_itself(groups):
    with pytest.raises(RuntimeError, match="scatter"):
        dist.scatter(torch.zeros(1), [torch.zeros(1)] * dist.get_world_size() if dist.get_rank() == 0 else None,
                     src=0)
    with pytest.raises(RuntimeError, match="Byte|not supported"):
        dist.all_reduce(torch.zeros(4, dtype=torch.uint8))


def test_shape_mismatch_is_a_clear_error_on_every_rank(groups):
    n = 100 + (1 if dist.get_rank() == 0 else 0)
    with pytest.raises(RuntimeError, match="Mismatch|count"):
        dist.all_reduce(torch.ones(n))
    # and the group goes on
    x = torch.ones(10)
    dist.all_reduce(x)
    assert torch.equal(x, torch.full((10,), float(dist.get_world_size())))


def test_elastic_mean_hook_matches_ddp_mean(groups):
    """Without failures, DDP with the hook gives the same gradients as DDP's own mean."""
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    a = torch.nn.parallel.DistributedDataParallel(_copy(base))
    b = torch.nn.parallel.DistributedDataParallel(_copy(base))
    b.register_comm_hook(None, rmt.elastic_mean_hook)
    torch.manual_seed(1 + dist.get_rank())
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    for m in (a, b):
        torch.nn.functional.mse_loss(m(x), y).backward()
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-6, atol=1e-7)


def _copy(module):
    import copy

    return copy.deepcopy(module)


def test_whole_step_ddp_matches_ddp_mean(groups):
    """ringmend.torch.DistributedDataParallel (one call per step, over
    buckets made small so that there are several) gives torch DDP's mean."""
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.Tanh(), torch.nn.Linear(1024, 640))
    a = torch.nn.parallel.DistributedDataParallel(_copy(base))
    b = rmt.DistributedDataParallel(_copy(base), bucket_cap_mb=1)
    buckets = []
    torch.manual_seed(1 + dist.get_rank())
    for _ in range(3):  # the buckets are rebuilt after the first step
        x, y = torch.randn(32, 64), torch.randn(32, 640)
        for m in (a, b):
            m.zero_grad()
            torch.nn.functional.mse_loss(m(x), y).backward()
        for p, q in zip(a.parameters(), b.parameters()):
            assert torch.allclose(p.grad, q.grad, rtol=1e-6, atol=1e-7)
        buckets.append(len(b.reducer._get_zeros_like_grad_buckets()))
    assert max(buckets) > 1, "the test meant several buckets"


@pytest.mark.parametrize("make", [
    lambda ps: torch.optim.Adam(ps, lr=0.01),
    lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
    lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01),
    lambda ps: torch.optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True, weight_decay=0.01),
    lambda ps: torch.optim.Adam(ps, lr=0.01, weight_decay=0.1, amsgrad=True),
])
def test_training_state_leaves_training_unchanged(make):
    """The optimizer state training_state() makes before the first step is
    the state that step would have made: the same steps give the same
    parameters, bit for bit, as without it."""
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    models = [_copy(base), _copy(base)]
    opts = [make(m.parameters()) for m in models]
    step = torch.zeros(1, dtype=torch.int64)
    state = rmt.training_state(models[1], opts[1], step)
    assert "step" in state and any(k.startswith("optimizer.") for k in state)
    assert all(not torch.is_tensor(v) or v.is_contiguous() for v in state.values())
    for k in range(4):
        g = torch.Generator().manual_seed(k)
        x, y = torch.randn(16, 8, generator=g), torch.randn(16, 1, generator=g)
        for m, o in zip(models, opts):
            o.zero_grad()
            torch.nn.functional.mse_loss(m(x), y).backward()
            o.step()
    for p, q in zip(*(m.parameters() for m in models)):
        assert torch.equal(p, q)


def test_training_state_refuses_sgd_with_dampening():
    model = torch.nn.Linear(4, 1)
    with pytest.raises(ValueError, match="dampening"):
        rmt.training_state(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, dampening=0.5))


def test_new_group_makes_ringmend_subgroups(groups):
    """dist.new_group over the ringmend backend: each group a ringmend
    subgroup of its ranks (docs/subgroups.md), its calls exact, groups
    that overlap used in turn, and a group of every rank beside the world."""
    world, _ = groups
    r = dist.get_rank()
    first, last, everyone = dist.new_group([0, 1]), dist.new_group([1, 2]), dist.new_group()
    assert isinstance(rmt._group(everyone), rmt.RingmendBackend)
    for n in (5, 5000, 300000):
        if r in (0, 1):
            x = torch.full((n,), float(r + 1))
            dist.all_reduce(x, group=first)
            assert torch.all(x == 3), n
            assert dist.get_rank(first) == r and dist.get_world_size(first) == 2
        if r in (1, 2):
            x = torch.full((n,), float(r + 1))
            work = dist.all_reduce(x, group=last, async_op=True)
            work.wait()
            assert torch.all(x == 5), n
            out = torch.empty(2 * n)
            dist.all_gather_into_tensor(out, torch.full((n,), float(r)), group=last)
            assert torch.equal(out, torch.cat([torch.full((n,), 1.0), torch.full((n,), 2.0)]))
            part = torch.empty(n)
            dist.reduce_scatter_tensor(part, torch.arange(2 * n, dtype=torch.float32), group=last)
            assert torch.equal(part, 2 * torch.arange(2 * n, dtype=torch.float32)[(r - 1) * n : r * n])
            b = torch.full((n,), float(r))
            dist.broadcast(b, src=2, group=last)  # src: a global rank
            assert torch.all(b == 2)
        x = torch.ones(n)
        dist.all_reduce(x, group=everyone)
        assert torch.all(x == world.size)
    if r in (0, 1):
        dist.barrier(group=first)
    dist.destroy_process_group(first) if r in (0, 1) else None
    dist.destroy_process_group(last) if r in (1, 2) else None
    dist.destroy_process_group(everyone)


def test_subgroup_of_a_communicator(groups):
    """ringmend's own Communicator.split/group in Python."""
    world, _ = groups
    import numpy as np

    rows = world.split(world.rank % 2, world.rank)
    assert rows.is_subgroup and not world.is_subgroup
    x = np.full(1000, world.rank + 1, dtype=np.float32)
    rows.allreduce(x)
    want = sum(m + 1 for m in range(world.size) if m % 2 == world.rank % 2)
    assert np.all(x == want)
    assert world.split(-1) is None
    with pytest.raises(ringmend.Error):
        rows.split(0)
