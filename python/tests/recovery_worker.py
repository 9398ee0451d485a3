"""A training-like loop in Python that loses ranks and goes on: the Python
side of tests/mpi/fault_allreduce.cpp, with the same options, so that
tests/mpi/kill_random.sh can SIGKILL its ranks from outside.

    recovery_worker.py --iters=N [--count=C] [--sleep-ms=M] [--pid-dir=D]
                       [--expect-size=S] [--allow-root-lost=yes] [--tensors=torch]

Each call's result is checked exactly against the members that contributed
(the members after the call, plus those it reports lost when the result
still holds their inputs); at the end the survivors compare a digest of all
their results. Prints "TEST PASSED world rank R" per member that finished.
"""

import hashlib
import os
import sys
import time

import numpy as np

import ringmend

opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
# Every flag known (a misspelled one would silently drop a check). --mode
# and --allow-size-changed are fault_allreduce's, which kill_random.sh
# passes to either program: this loop has allreduces and broadcasts only
# (fault_allreduce's mixed mode), where no call is laid out for a size.
KNOWN = {"iters", "count", "sleep-ms", "expect-size", "allow-root-lost", "tensors", "pid-dir", "mode",
         "allow-size-changed"}
unknown = [a for a in sys.argv[1:] if not a.startswith("--") or "=" not in a or a[2:].split("=", 1)[0] not in KNOWN]
if unknown or opts.get("mode", "mixed") != "mixed":
    sys.exit(f"recovery_worker: unknown option(s) {unknown or [opts['mode']]} (known: --"
             + ", --".join(sorted(KNOWN)) + "; --mode=mixed only)")
me = int(os.environ.get("OMPI_COMM_WORLD_RANK", "-1"))

iters = int(opts.get("iters", "50"))
count = int(opts.get("count", "10007"))
sleep_s = int(opts.get("sleep-ms", "0")) / 1000
expect_size = int(opts.get("expect-size", "-1"))
allow_root_lost = opts.get("allow-root-lost") == "yes"
use_torch = opts.get("tensors") == "torch"
if use_torch:
    import torch


def value(member, step, n):
    k = np.arange(n, dtype=np.int64)
    return ((member * 7 + k * 3 + step) % 11 - 5).astype(np.float64)


def array(a):
    return torch.from_numpy(a) if use_torch else a


def contributors(world, r):
    s = set(world.member_ids)
    if r.contributors == world.size + len(r.lost):
        s.update(r.lost)
    elif r.contributors != world.size:
        raise AssertionError(f"contributors={r.contributors} matches neither {world.size} members nor members+lost")
    return sorted(s)


def main():
    rt = ringmend.Runtime()
    world = rt.world
    # After the start, as tests/mpi/fault_allreduce.cpp: a death while MPI
    # itself starts is the start-up soak's subject (scripts/soak.sh).
    if "pid-dir" in opts:
        with open(os.path.join(opts["pid-dir"], f"rank{me}.pid"), "w") as f:
            f.write(f"{os.getpid()}\n")
    changes = []
    world.on_membership_change(changes.append)
    digest = hashlib.sha256()
    wrong = 0
    for step in range(iters):
        if sleep_s:
            time.sleep(sleep_s)
        if step % 5 == 4:
            # A broadcast from rank 0 (whose member may die: RootLost then).
            buf = np.full(count, float(step) if world.rank == 0 else -1.0)
            try:
                world.broadcast(array(buf), root=0)
            except ringmend.Error as e:
                if e.code == ringmend.Errc.ROOT_LOST and allow_root_lost:
                    print(f"world rank {me}: step {step}: root lost ({e})", flush=True)
                    continue
                raise
            if not np.all(buf == float(step)):
                wrong += 1
                print(f"world rank {me}: step {step}: broadcast result wrong", flush=True)
            digest.update(buf.tobytes())
            continue
        x = value(world.member_id, step, count)
        out = np.empty_like(x)
        r = world.allreduce(array(x), array(out))
        want = sum(value(m, step, count) for m in contributors(world, r))
        if not np.array_equal(out, want):
            wrong += 1
            print(f"world rank {me}: step {step}: {int(np.sum(out != want))} elements wrong", flush=True)
        digest.update(out.tobytes())
        if r.recovered:
            print(f"world rank {me}: step {step}: recovered, lost {r.lost}, now {world.size} ranks", flush=True)
    for c in changes:
        print(
            f"world rank {me}: membership change: lost {c.lost}, {c.old_size} -> {c.new_size} ranks, "
            f"epoch {c.new_epoch}, recovered in {c.recovery_seconds * 1e3:.1f} ms",
            flush=True,
        )
    # The survivors hold the same results: the digests' words agree.
    words = np.frombuffer(digest.digest(), dtype=np.int64).copy()
    low, high = words.copy(), words.copy()
    world.allreduce(low, op=ringmend.MIN)
    world.allreduce(high, op=ringmend.MAX)
    same = np.array_equal(low, high)
    size_ok = expect_size < 0 or world.size == expect_size
    ok = wrong == 0 and same and size_ok
    print(
        f"TEST {'PASSED' if ok else 'FAILED'} world rank {me}: {iters} steps, {wrong} wrong, "
        f"results {'agree' if same else 'DIFFER'} across the {world.size} survivors"
        + ("" if size_ok else f", expected {expect_size} ranks"),
        flush=True,
    )
    rt.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
