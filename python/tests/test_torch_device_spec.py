"""torch 2.x's backend per device: "cpu:gloo,cuda:ringmend" puts gloo on
CPU tensors and ringmend on CUDA ones (the routing is checked here, on a
machine without a GPU; the CUDA collectives themselves need one)."""

import torch
import torch.distributed as dist

import ringmend.torch as rmt


def test_cpu_gloo_cuda_ringmend():
    world = rmt.init_process_group(backend="cpu:gloo,cuda:ringmend")
    pg = dist.distributed_c10d._get_default_group()
    assert type(pg._get_backend(torch.device("cpu"))).__name__ == "ProcessGroupGloo"
    assert isinstance(pg._get_backend(torch.device("cuda")), rmt.RingmendBackend)
    assert rmt.live_size() == world.size
    x = torch.ones(8)
    dist.all_reduce(x)  # through gloo
    assert torch.equal(x, torch.full((8,), float(world.size)))
    dist.destroy_process_group()
