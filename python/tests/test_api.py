"""The Python API on NumPy arrays, under a real MPI job of
several ranks (python/CMakeLists.txt registers it with CTest). Each rank's
input is a function of its member id, so every rank knows the exact result;
the 16-bit types get small integers, which they hold exactly."""

import numpy as np
import pytest

import ringmend

OPS = [ringmend.SUM, ringmend.PROD, ringmend.MIN, ringmend.MAX]
NUMPY_TYPES = ["float32", "float64", "int32", "int64", "float16"]


def inputs(member, n, op):
    """Small integers: sums, products (of -1, 1, 2) and extremes stay exact in every type."""
    k = np.arange(n, dtype=np.int64)
    if op == ringmend.SUM:
        return (member * 7 + k * 3) % 11 - 5
    if op == ringmend.PROD:
        v = (member + k) % 3
        return np.where(v == 0, 2, np.where(v == 1, -1, 1))
    return (member * 13 + k * 7) % 101 - 50


def expected(members, n, op):
    values = [inputs(m, n, op) for m in members]
    fold = {ringmend.SUM: np.add, ringmend.PROD: np.multiply, ringmend.MIN: np.minimum, ringmend.MAX: np.maximum}[op]
    out = values[0]
    for v in values[1:]:
        out = fold(out, v)
    return out


def test_options_are_checked_before_mpi_starts():
    with pytest.raises(ringmend.Error) as e:
        ringmend.Runtime(no_such_option=1)
    assert e.value.code == ringmend.Errc.INVALID_ARGUMENT
    assert "no_such_option" in str(e.value)
    with pytest.raises(ringmend.Error) as e:
        ringmend.Runtime(timeout="soon")
    assert e.value.code == ringmend.Errc.INVALID_ARGUMENT and "timeout" in str(e.value)
    # State given to the Runtime is checked before MPI starts too.
    with pytest.raises(ringmend.Error) as e:
        ringmend.Runtime(state={"model": [1.0, 2.0]})
    assert e.value.code == ringmend.Errc.INVALID_ARGUMENT and "state 'model'" in str(e.value)
    frozen = np.zeros(4)
    frozen.flags.writeable = False
    with pytest.raises(ringmend.Error) as e:
        ringmend.Runtime(state={"model": frozen})
    assert e.value.code == ringmend.Errc.INVALID_ARGUMENT and "state 'model'" in str(e.value)
    with pytest.raises(ringmend.Error) as e:
        ringmend.Runtime(state={1: np.zeros(4)})
    assert e.value.code == ringmend.Errc.INVALID_ARGUMENT and "names must be strings" in str(e.value)


def test_world(runtime, world):
    assert runtime.fault_tolerant, runtime.fault_tolerance_status
    assert world.size >= 2
    assert 0 <= world.rank < world.size
    assert world.member_ids[world.rank] == world.member_id
    assert ringmend.__version__ == ringmend.version()


@pytest.mark.parametrize("dtype", NUMPY_TYPES)
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
@pytest.mark.parametrize("n", [1, 1000, 70001])
def test_allreduce_numpy(world, dtype, op, n):
    want = expected(world.member_ids, n, op).astype(dtype)
    x = inputs(world.member_id, n, op).astype(dtype)
    out = np.empty_like(x)
    r = world.allreduce(x, out, op=op)
    assert r.contributors == world.size and not r.recovered
    np.testing.assert_array_equal(out, want)
    world.allreduce(x, op=op)  # in place
    np.testing.assert_array_equal(x, want)


def test_broadcast(world):
    root = world.size - 1
    a = np.arange(10007, dtype=np.float64) * (1 if world.rank == root else 0)
    r = world.broadcast(a, root=root)
    assert r.contributors == world.size
    np.testing.assert_array_equal(a, np.arange(10007, dtype=np.float64))
    with pytest.raises(ringmend.Error) as e:
        world.broadcast(a, root=world.size)
    assert e.value.code == ringmend.Errc.INVALID_ARGUMENT


@pytest.mark.parametrize("dtype", NUMPY_TYPES)
def test_allgather(world, dtype):
    members = world.member_ids
    n = 1003
    out = np.full(n * world.size, -1, dtype=dtype)
    r = world.allgather(inputs(world.member_id, n, ringmend.SUM).astype(dtype), out)
    assert r.contributors == world.size
    for rank, m in enumerate(members):
        np.testing.assert_array_equal(out[rank * n : (rank + 1) * n], inputs(m, n, ringmend.SUM).astype(dtype))


@pytest.mark.parametrize("op", OPS)
def test_reduce_scatter(world, op):
    n = 517
    members = world.member_ids
    mine = np.concatenate([inputs(world.member_id, n, op) + 0 * j for j in range(world.size)]).astype(np.int64)
    out = np.empty(n, dtype=np.int64)
    r = world.reduce_scatter(mine, out, op=op)
    assert r.contributors == world.size
    np.testing.assert_array_equal(out, expected(members, n, op).astype(np.int64))


def test_allgatherv(world):
    members = world.member_ids
    counts = [0 if r == 1 else 7 * r + 3 for r in range(world.size)]
    out = np.full(sum(counts), -1, dtype=np.int64)
    r = world.allgatherv(inputs(world.member_id, counts[world.rank], ringmend.SUM).astype(np.int64), counts, out)
    assert r.contributors == world.size
    at = 0
    for rank, m in enumerate(members):
        np.testing.assert_array_equal(out[at : at + counts[rank]], inputs(m, counts[rank], ringmend.SUM))
        at += counts[rank]


def test_alltoall(world):
    size, rank = world.size, world.rank
    n = lambda a, b: (a * 5 + b * 3) % 7  # noqa: E731  elements rank a sends rank b, some none
    send = [n(rank, s) for s in range(size)]
    recv = [n(s, rank) for s in range(size)]
    mine = np.concatenate([np.arange(send[s], dtype=np.float64) + 100 * rank + s / 8 for s in range(size)])
    out = np.full(sum(recv), -1.0)
    world.alltoall(mine, send, out, recv)
    want = np.concatenate([np.arange(recv[s], dtype=np.float64) + 100 * s + rank / 8 for s in range(size)])
    np.testing.assert_array_equal(out, want)


def test_allgatherv_and_alltoall_bad_input_fails_on_every_rank(world):
    """One rank's counts do not match its arrays: TypeError there, an Error elsewhere; the group goes on."""
    odd = world.rank == 0
    counts = [4] * world.size
    with pytest.raises((TypeError, ringmend.Error)):
        world.allgatherv(np.ones(5 if odd else 4), counts, np.empty(4 * world.size))
    with pytest.raises((TypeError, ringmend.Error)):
        world.alltoall(np.ones(4 * world.size), counts, np.empty(4 * world.size + (1 if odd else 0)), counts)
    x = np.ones(4, dtype=np.float32)
    world.allreduce(x)
    assert np.all(x == world.size)


def test_allgather_and_reduce_scatter_bad_input_fails_on_every_rank(world):
    # A too-small output on one rank: a TypeError there, an Error elsewhere; the group goes on.
    small = world.rank == 0
    out = np.empty(3 if small else 10 * world.size, dtype=np.float32)
    with pytest.raises((TypeError, ringmend.Error)):
        world.allgather(np.ones(10, dtype=np.float32), out)
    with pytest.raises((TypeError, ringmend.Error)):
        world.reduce_scatter(np.ones(world.size * 4 + (1 if small else 0), dtype=np.float32),
                             np.empty(4, dtype=np.float32))
    x = np.ones(4, dtype=np.float32)
    world.allreduce(x)
    assert np.all(x == world.size)


def test_barrier_and_result(world):
    r = world.barrier()
    assert r.contributors == world.size and r.epoch == world.epoch
    assert r.lost == [] and r.joined == [] and not r.left
    assert "contributors=" in repr(r)


def test_unusable_array_on_one_rank_fails_every_rank(world):
    """A rank whose array ringmend cannot use raises TypeError; the others
    get INVALID_ARGUMENT instead of waiting for it; the next call works."""
    odd = world.rank == 1
    x = np.ones(100, dtype=np.float32)
    bad = [1.0] * 100 if odd else x
    if odd:
        with pytest.raises(TypeError, match="list"):
            world.allreduce(bad)
    else:
        with pytest.raises(ringmend.Error) as e:
            world.allreduce(bad)
        assert e.value.code == ringmend.Errc.INVALID_ARGUMENT
    y = np.ones(100, dtype=np.float32)
    world.allreduce(y)
    np.testing.assert_array_equal(y, np.full(100, world.size, dtype=np.float32))


@pytest.mark.parametrize(
    "case",
    ["non_contiguous", "read_only", "unsupported_dtype"],
)
def test_more_unusable_arrays(world, case):
    odd = world.rank == world.size - 1
    good = np.zeros(64, dtype=np.float32)
    if case == "non_contiguous":
        bad = np.zeros(128, dtype=np.float32)[::2]
    elif case == "read_only":
        bad = np.zeros(64, dtype=np.float32)
        bad.flags.writeable = False
    else:
        bad = np.zeros(64, dtype=np.complex64)
    with pytest.raises(TypeError if odd else ringmend.Error):
        world.allreduce(bad if odd else good)


def test_shape_mismatch_is_a_mismatch_on_every_rank(world):
    n = 1000 + (1 if world.rank == 0 else 0)
    with pytest.raises(ringmend.Error) as e:
        world.allreduce(np.ones(n, dtype=np.float32))
    assert e.value.code == ringmend.Errc.MISMATCH
    assert "count" in str(e.value)


def test_dtype_mismatch(world):
    x = np.ones(10, dtype=np.float64 if world.rank == 0 else np.float32)
    with pytest.raises(ringmend.Error) as e:
        world.allreduce(x)
    assert e.value.code == ringmend.Errc.MISMATCH


def test_out_of_place_arrays_must_agree(world):
    with pytest.raises(TypeError, match="differ"):
        world.allreduce(np.ones(10, dtype=np.float32), np.ones(11, dtype=np.float32))


def test_membership_callback_registration(world):
    changes = []
    cid = world.on_membership_change(changes.append)
    world.barrier()
    world.remove_membership_callback(cid)
    assert changes == []


def test_register_state_needs_a_usable_array(world):
    with pytest.raises(ringmend.Error) as e:
        world.register_state("model", [1, 2, 3])
    assert e.value.code == ringmend.Errc.INVALID_ARGUMENT
    w = np.zeros(16)
    world.register_state("model", w)
    assert world.unregister_state("model")
    assert not world.unregister_state("model")


def test_the_gil_is_released_during_a_call(world):
    """A Python thread keeps running while the main thread waits in a collective."""
    import threading
    import time

    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    if world.rank == 0:
        time.sleep(0.3)  # the others wait in the barrier meanwhile
    before = len(ticks)
    world.barrier()
    after = len(ticks)
    stop.set()
    t.join()
    if world.rank != 0:
        assert after - before > 20, "the ticker thread stalled while this rank waited in the barrier"


def test_nonblocking_progresses_while_python_computes(world):
    """Requests complete while this thread does pure-Python work (which
    holds the GIL) and makes no blocking call: the call thread needs no GIL
    and no help. Request.test() only reads the state (it drives nothing).
    Usually done within milliseconds; the deadline is for a loaded machine,
    where the peer's call thread may wait long for a CPU."""
    import time

    n = 50001
    xs = [inputs(world.member_id, n, ringmend.SUM).astype(t) for t in ("float32", "int64", "float16")]
    reqs = [world.iallreduce(x) for x in xs]
    until = time.monotonic() + 60
    done = False
    while not done and time.monotonic() < until:
        stretch = time.monotonic() + 0.01
        while time.monotonic() < stretch:
            pass
        done = all(r.test() for r in reqs)
    assert done, "requests did not complete in 60 s while this thread computed"
    for x, r in zip(xs, reqs):
        res = r.wait()
        assert res.contributors == world.size
        np.testing.assert_array_equal(x, expected(world.member_ids, n, ringmend.SUM).astype(x.dtype))


def test_nonblocking_in_order_with_blocking_calls(world):
    a = np.full(1000, world.rank + 1, dtype=np.int64)
    b = np.full(10, world.rank + 1, dtype=np.int64)
    out = np.empty_like(a)
    ra = world.iallreduce(a, out, op=ringmend.MAX)
    world.allreduce(b, op=ringmend.MIN)  # blocking, behind the request
    c = np.zeros(7, dtype=np.float64) + (3.5 if world.rank == 0 else 0)
    rc = world.ibroadcast(c, root=0)
    rb = world.ibarrier()
    ra.wait(), rc.wait(), rb.wait()
    assert np.all(out == world.size) and np.all(b == 1) and np.all(c == 3.5)


def test_nonblocking_unusable_array_and_mismatch(world):
    odd = world.rank == 1
    req = world.iallreduce([1.0] if odd else np.ones(4, dtype=np.float32))
    with pytest.raises(TypeError if odd else ringmend.Error):
        req.wait()
    req = world.iallreduce(np.ones(5 if world.rank == 0 else 6, dtype=np.float32))
    with pytest.raises(ringmend.Error) as e:
        req.wait()
    assert e.value.code == ringmend.Errc.MISMATCH


def test_dropped_request_keeps_its_array(world):
    """A request dropped unwaited keeps its array alive until the call ends."""
    import gc

    def start():
        x = np.ones(200003, dtype=np.float64)
        world.iallreduce(x)  # x is referenced only by the request

    start()
    gc.collect()
    world.barrier()  # behind the dropped call: it has completed
