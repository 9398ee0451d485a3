"""ringmend.torch's start-up: the process's Runtime, rank 0's TCPStore, and
which of ringmend.torch's own start-up calls the members are in, so that a
spare admitted inside one takes part in it (docs/torch.md, "Spares inside
DDP": a death during start-up)."""

import contextlib
import datetime as _datetime
import sys

import torch
import torch.distributed as dist

import ringmend

_runtime = None

# Which of ringmend.torch's own start-up calls the members are in: 0 none,
# 1 the broadcast of the TCPStore's address and 3 the barrier after it
# (init_process_group), 2 the broadcast of the parameters
# (DistributedDataParallel). Part of the state a spare receives
# (training_state): admitted inside one of them, it takes part in it as the
# members do, instead of in a call of its own that no member makes.
start = torch.zeros(1, dtype=torch.int64)
IN_STORE_ADDRESS, IN_PARAMETERS, IN_STORE_CHECK = 1, 2, 3
# A spare admitted inside one of them is in step with the members from
# there on: it makes the start-up calls that follow, as they do.
starts_with_members = False
_STORE_CONNECT_SECONDS = 30
ROOT_RETRIES = 3  # rank 0 lost in a start-up broadcast, then its successor too, ...


def runtime(**options):
    """The process's ringmend Runtime, started on first use (options as for
    ringmend.Runtime)."""
    global _runtime
    if _runtime is None or _runtime.closed:
        _runtime = ringmend.Runtime(**options)
    elif options:
        raise ValueError("ringmend.torch.runtime(): the Runtime has started already; its options are set")
    return _runtime


def interface_of(address):
    """The name of this host's interface with IPv4 `address`, or None."""
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                raw = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
            except OSError:
                continue
            if socket.inet_ntoa(raw[20:24]) == address:
                return name
    return None


@contextlib.contextmanager
def in_phase(phase):
    """Marks the start-up call made inside as `phase` in the state."""
    start[0] = phase
    try:
        yield
    finally:
        start[0] = 0


def broadcast_from_rank_0(world, data, phase):
    """One of the start-up broadcasts, from rank 0 (by rank: a spare that
    took rank 0's place sends). False when rank 0 died before anyone had
    the data: every rank hears so (ROOT_LOST), and all try again from the
    new rank 0."""
    try:
        with in_phase(phase):
            world.broadcast(data, root=0)
        return True
    except ringmend.Error as e:
        if e.code != ringmend.Errc.ROOT_LOST:
            raise
        return False


def members_store(rt, world, timeout):
    """Rank 0's TCPStore, served by rank 0 and reached by the others at the
    address it broadcasts; None when rank 0 could not be reached (it died
    after it sent the address): the process then starts from a store of its
    own, and only ringmend groups serve it."""
    import numpy as np

    address = np.zeros(256, dtype=np.int32)
    store = None
    for _ in range(ROOT_RETRIES):
        if world.rank == 0 and store is None:
            host = rt.control_address
            store = dist.TCPStore(host, 0, world.size, True, timeout, wait_for_workers=False)
            text = f"{host}:{store.port}".encode()
            address[: len(text)] = list(text)
        if broadcast_from_rank_0(world, address, IN_STORE_ADDRESS):
            break
    if store is not None:
        return store
    host, port = bytes(address[address > 0].astype(np.uint8)).decode().rsplit(":", 1)
    # The connection's wait is bounded apart from the store's: torch retries
    # a refused connection for the whole timeout (30 minutes by default).
    connect = min(timeout, _datetime.timedelta(seconds=_STORE_CONNECT_SECONDS))
    try:
        store = dist.TCPStore(host, int(port), world.size, False, connect)
    except (RuntimeError, dist.DistError) as e:
        print(f"ringmend.torch: rank 0's TCPStore at {host}:{port} cannot be reached ({e}); this rank's torch "
              f"group starts from a store of its own: only ringmend groups serve it", file=sys.stderr, flush=True)
        return None
    store.set_timeout(timeout)
    return store
