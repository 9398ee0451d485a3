"""Fault-tolerant HSDP with a spare (ringmend.torch.hsdp), 4 members and 1
spare: FSDP2's fully_shard over "shard" of a (2, 2) mesh, SGD with momentum
(optimizer state that the spare must receive with the parameters).

    ft_hsdp_worker.py [--steps=N] [--kill-member=M --kill-step=S --kill-at=PHASE] [--pid-dir=DIR]

PHASE: forward (member M SIGKILLs itself before its forward, so before the
step's all-gather), backward (after the forward, before the backward's
reduce-scatter and all-reduce) or vote (after its backward, before the
step's vote). The step is voted down, the spare is admitted at the vote in
member M's rank, receives its parameter and optimizer shards from the other
replica, and the step runs again. At the end every rank checks the whole
model against a serial replay of the four ranks' samples, and that the job
kept 4 ranks; "TEST PASSED" per process that ends as it should.

With --pid-dir (a killer outside: tests/mpi/spare_kill_random.sh), each
process writes DIR/memberN.pid once started, and checks only its own
shards against the replay's (no collective after the last vote, which a
member killed in the shutdown would end).
"""

import os
import signal
import sys

import torch
import torch.distributed as dist

import ringmend.torch as rmt
from ringmend.torch import hsdp

opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
steps = int(opts.get("steps", "6"))
kill_member = int(opts.get("kill-member", "-1"))
kill_step = int(opts.get("kill-step", "2"))
kill_at = opts.get("kill-at", "backward")
pid_dir = opts.get("pid-dir", "")


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 4))


def batch(s, rank):
    return torch.randn(8, 16, generator=torch.Generator().manual_seed(1000 * s + rank))


def make_optimizer(params):
    return torch.optim.SGD(params, lr=0.05, momentum=0.9)


step = torch.zeros(1, dtype=torch.int64)
world = rmt.init_process_group(state=hsdp.spare_state(step), subgroup_recovery="step")
me = world.member_id
if pid_dir:
    with open(os.path.join(pid_dir, f"member{me}.pid"), "w") as f:
        f.write(f"{os.getpid()}\n")
if world.joined:
    print(f"member {me}: admitted as rank {world.rank} at step {int(step[0])}", flush=True)


def die_if(phase):
    if me == kill_member and int(step[0]) == kill_step and kill_at == phase:
        print(f"member {me}: killed in step {kill_step}, at {phase}", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


def compute(model):
    die_if("forward")
    loss = model(batch(int(step[0]), dist.get_rank())).pow(2).mean()
    die_if("backward")
    loss.backward()
    die_if("vote")


# Bad input is an error on every rank, before any collective.
try:
    hsdp.FaultTolerantHSDP(make_model, make_optimizer, (3, 2), step)
    sys.exit(f"member {me}: FAILED: a (3, 2) mesh on 4 ranks was accepted")
except ValueError as e:
    assert "needs 6 ranks" in str(e), e
ft = hsdp.FaultTolerantHSDP(make_model, make_optimizer, (2, 2), step)
while int(step[0]) < steps:
    if not ft.run_step(compute):
        print(f"member {me}: step {int(step[0])} voted down; the mesh is made again", flush=True)
# The same samples in one process: the gradient of the four ranks' mean loss.
ref = make_model()
ref_opt = make_optimizer(ref.parameters())
for s in range(steps):
    sum(ref(batch(s, q)).pow(2).mean() for q in range(4)).div(4).backward()
    ref_opt.step()
    ref_opt.zero_grad()
if pid_dir:
    # This member's shards: FSDP2 shards dimension 0 as torch.chunk does.
    shard = ft.mesh.get_local_rank(1)
    trained = [p.to_local() for p in ft.model.parameters()]
    wanted = [torch.chunk(w.detach(), 2, dim=0)[shard] for w in ref.parameters()]
else:
    trained, wanted = ft.full_parameters(), [w.detach() for w in ref.parameters()]
failures = []
for got, want in zip(trained, wanted):
    # Float sums in another order: a few ulps, not a sample's worth.
    if not torch.allclose(got, want, rtol=1e-5, atol=1e-6):
        failures.append(f"a parameter differs from the replay by {(got - want).abs().max().item():.3g}")
if world.size != 4 and not pid_dir:  # a kill from outside may come after the last vote
    failures.append(f"the job ended with {world.size} ranks, not 4")
if kill_member >= 0:
    if kill_member in world.member_ids:
        failures.append(f"member {kill_member} is still a member: the kill did not land")
    if ft.steps_repeated < 1 and not world.joined:
        failures.append("no step was voted down")
print(f"member {me}: rank {world.rank}, {steps} steps, {ft.steps_repeated} repeated", flush=True)
dist.destroy_process_group()
if failures:
    print(f"member {me}: FAILED: " + "; ".join(failures), flush=True)
    sys.exit(1)
print(f"TEST PASSED member {me}", flush=True)
