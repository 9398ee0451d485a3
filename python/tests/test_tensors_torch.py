"""The Python API on torch tensors (CPU), under a real MPI job of several
ranks: every type, the 16-bit ones included, and the tensors ringmend
cannot use."""

import pytest

import ringmend
from test_api import OPS, expected, inputs

# The set-up installs torch (scripts/bootstrap.sh --with-python): without it
# this test fails rather than passing with nothing run.
import torch  # noqa: E402
TORCH_TYPES = [torch.float32, torch.float64, torch.int32, torch.int64, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", TORCH_TYPES, ids=str)
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_allreduce_torch(world, dtype, op):
    n = 4099
    want = torch.from_numpy(expected(world.member_ids, n, op)).to(dtype)
    x = torch.from_numpy(inputs(world.member_id, n, op)).to(dtype)
    out = torch.empty_like(x)
    world.allreduce(x, out, op=op)
    assert torch.equal(out, want)
    world.allreduce(x, op=op)
    assert torch.equal(x, want)


def test_broadcast(world):
    root = world.size - 1
    t = torch.full((3, 5), float(world.rank), dtype=torch.bfloat16)
    world.broadcast(t, root=root)
    assert torch.equal(t, torch.full((3, 5), float(root), dtype=torch.bfloat16))


def test_unusable_tensor_on_one_rank(world):
    odd = world.rank == world.size - 1
    bad = torch.zeros(8, 16).t() if odd else torch.zeros(16, 8)
    with pytest.raises(TypeError if odd else ringmend.Error, match="contiguous" if odd else "null buffer"):
        world.allreduce(bad)
    unsupported = torch.zeros(4, dtype=torch.complex64 if odd else torch.float32)
    with pytest.raises(TypeError if odd else ringmend.Error):
        world.allreduce(unsupported)


def test_shape_mismatch_is_a_mismatch_on_every_rank(world):
    n = 1000 + (1 if world.rank == 0 else 0)
    with pytest.raises(ringmend.Error) as e:
        world.allreduce(torch.ones(n))
    assert e.value.code == ringmend.Errc.MISMATCH
