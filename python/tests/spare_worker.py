"""A Python training loop with a spare: its model and step counter are
registered as state when the Runtime starts (ringmend.Runtime(state=...)),
so that a spare admitted in a lost member's place receives them in place
before its Runtime returns and resumes at the members' step.

    spare_worker.py --iters=N [--count=C] [--expect-size=S] [--wrong-state-on=W]

Every step adds (step + 1) to every element of the model: the allreduce of
each member's (step + 1), divided by the number of members that contributed
(the last element counts them). So at the end every member, joiner or not,
holds iters * (iters + 1) / 2 everywhere, which a joiner can only have if
its state arrived. With --wrong-state-on=W, world rank W registers a model
of another size: once admitted it must get a ringmend.Error, and the
members go on without it. Prints "TEST PASSED world rank R" per process
that ends as it should.
"""

import os
import sys

import numpy as np

import ringmend

opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
world_rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "-1"))
iters = int(opts.get("iters", "30"))
count = int(opts.get("count", "10007"))
expect_size = int(opts.get("expect-size", "-1"))
wrong_on = int(opts.get("wrong-state-on", "-1"))

model = np.zeros(count + (1 if world_rank == wrong_on else 0), dtype=np.float64)
step = np.zeros(1, dtype=np.int64)
try:
    rt = ringmend.Runtime(state={"model": model, "step": step})
except ringmend.Error as e:
    if world_rank == wrong_on and e.code == ringmend.Errc.INVALID_ARGUMENT and "model" in str(e):
        print(f"TEST PASSED world rank {world_rank}: a joiner with a model of another size is told: {e}",
              flush=True)
        sys.exit(0)
    raise
world = rt.world
joined = world.joined
if joined:
    print(f"member {world.member_id} joined at rank {world.rank} of {world.size}, step {int(step[0])}",
          flush=True)

contribution = np.zeros(count + 1, dtype=np.float64)
result = np.zeros(count + 1, dtype=np.float64)
while step[0] < iters:
    contribution[:count] = float(step[0] + 1)
    contribution[count] = 1.0
    r = world.allreduce(contribution, result)
    model += result[:count] / result[count]
    step[0] += 1
    if r.recovered and world.rank == 0:
        print(f"step {int(step[0])}: recovered (lost {list(r.lost)}, joined {list(r.joined)}), "
              f"{int(result[count])} contributed, {world.size} ranks", flush=True)

failures = []
expected = iters * (iters + 1) / 2
if not np.all(model == expected):
    failures.append(f"model holds {model.min()}..{model.max()}, expected {expected}")
if expect_size >= 0 and world.size != expect_size:
    failures.append(f"ended with {world.size} ranks, expected {expect_size}")
joiners = np.array([1.0 if joined else 0.0])
world.allreduce(joiners, joiners)
if wrong_on < 0 and joiners[0] != 1:
    failures.append(f"{int(joiners[0])} joiner(s) at the end, expected 1")
rt.close()
for f in failures:
    print(f"TEST FAILED world rank {world_rank}: {f}", flush=True)
if not failures:
    print(f"TEST PASSED world rank {world_rank}: model = {expected} after {iters} steps"
          f"{' (joined)' if joined else ''}", flush=True)
sys.exit(1 if failures else 0)
