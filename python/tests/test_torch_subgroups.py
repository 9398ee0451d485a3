"""torch's subgroups over the ringmend backend, 4 ranks: a 2-D DeviceMesh
(replica x shard), each dimension's groups ringmend subgroups
(docs/subgroups.md), and FSDP2's HSDP over that mesh (fully_shard: the
parameters sharded over "shard", the gradients averaged over "replica")
against a serial replay of the same samples."""

import pytest
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import ringmend.torch as rmt


@pytest.fixture(scope="module")
def mesh():
    world = rmt.init_process_group()
    assert world.size == 4, "run with 4 ranks"
    yield init_device_mesh("cpu", (2, 2), mesh_dim_names=("replica", "shard"))
    dist.destroy_process_group()


def test_mesh_dimensions_are_ringmend_subgroups(mesh):
    r = dist.get_rank()
    for name, ranks in (("shard", [r // 2 * 2, r // 2 * 2 + 1]), ("replica", [r % 2, r % 2 + 2])):
        group = mesh.get_group(name)
        assert isinstance(rmt._group(group), rmt.RingmendBackend)
        assert dist.get_process_group_ranks(group) == ranks
        for n in (3, 4099, 262144):
            x = torch.full((n,), float(r + 1))
            dist.all_reduce(x, group=group)
            assert torch.all(x == sum(q + 1 for q in ranks)), (name, n)
            out = torch.empty(2 * n)
            dist.all_gather_into_tensor(out, torch.full((n,), float(r)), group=group)
            assert torch.equal(out, torch.cat([torch.full((n,), float(q)) for q in ranks])), (name, n)


def model_and_batches(steps):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 4))
    batches = [[torch.randn(8, 16, generator=torch.Generator().manual_seed(1000 * s + q)) for q in range(4)]
               for s in range(steps)]
    return model, batches


def test_hsdp_matches_a_serial_replay(mesh):
    r, steps = dist.get_rank(), 5
    model, batches = model_and_batches(steps)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for s in range(steps):
        model(batches[s][r]).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    trained = [p.full_tensor() for p in model.parameters()]

    # The same samples in one process: the gradient of the four ranks' mean loss.
    ref, batches = model_and_batches(steps)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    for s in range(steps):
        sum(ref(b).pow(2).mean() for b in batches[s]).div(4).backward()
        ref_opt.step()
        ref_opt.zero_grad()
    for got, want in zip(trained, ref.parameters()):
        # Float sums in another order: a few ulps, not a sample's worth.
        torch.testing.assert_close(got, want.detach(), rtol=1e-5, atol=1e-6)
    moved = max((a - b).abs().max().item() for a, b in zip(trained, model_and_batches(0)[0].parameters()))
    assert moved > 1e-3, "training changed the model"
