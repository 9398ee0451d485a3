"""Member 1 raises an exception nobody catches while member 0 is still
computing: its interpreter ends through the Runtime's shutdown, which waits
for member 0 until RINGMEND_FINALIZE_TIMEOUT and is then cut short. The
process must still end failed (status 1), and the launcher say so."""

import time

import ringmend

with_runtime = ringmend.Runtime()
world = with_runtime.world
world.barrier()
if world.member_id == 1:
    raise RuntimeError("member 1: an application error nobody catches")
time.sleep(6)  # longer than the shutdown's bound on member 1
world.barrier()
print(f"member {world.member_id}: finished with {world.size} member(s)", flush=True)
