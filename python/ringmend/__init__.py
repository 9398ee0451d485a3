"""ringmend: an elastic, fault-tolerant allreduce for MPI jobs, from Python.

    import numpy as np, ringmend
    with ringmend.Runtime() as rt:           # MPI + ULFM + transports
        world = rt.world
        grad = np.ones(1 << 20, dtype=np.float32)
        r = world.allreduce(grad)            # in place; allreduce(x, out) out of place
        if r.recovered:                      # a rank died; the call still completed
            print("lost members", r.lost, "now", world.size, "ranks")
        req = world.iallreduce(grad)         # non-blocking: runs while this thread computes
        r = req.wait()
        rows = world.split(world.rank // 2)  # a subgroup (docs/subgroups.md)

Launch with ringmend-run (or mpirun with ringmend's fault-tolerance
arguments). Arrays are NumPy arrays or torch tensors on the CPU; a call
releases the GIL while it runs. Every failure is a ringmend.Error whose
`code` is a ringmend.Errc; an array ringmend cannot use raises TypeError on
its rank and ringmend.Error(INVALID_ARGUMENT) on the others, so that no rank
waits for it. `import ringmend.torch` registers the torch.distributed
backend "ringmend".
"""

import atexit as _atexit
import sys as _sys
import weakref as _weakref

from ringmend._core import (  # noqa: F401  (the public API)
    CollectiveResult,
    Communicator,
    DataType,
    Errc,
    Error,
    LogLevel,
    MembershipChange,
    ReduceOp,
    Request,
    ft_mpirun_args,
    set_log_sink,
    version,
)
from ringmend import _core

SUM, PROD, MIN, MAX = ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MIN, ReduceOp.MAX

__version__ = version()

_open_runtimes = _weakref.WeakSet()


class Runtime(_core.Runtime):
    """MPI, ULFM and ringmend's transports for this process.

    Keyword options set any setting in code (names as in core/options.hpp,
    e.g. timeout=60, spares=1, log_level="debug"); what they leave unset
    comes from the RINGMEND_* variables. One Runtime per process: MPI cannot
    start twice. close() (or the end of a `with` block, or the interpreter's
    exit) shuts it down, bounded in time even after failures.

    state={"model": array, ...} registers writable arrays (numpy, or any
    object with a writable buffer) on the world before a spare starts to
    wait: a spare admitted in a lost member's place receives them in place
    before its Runtime returns (the C++ StateBuffer). Every process passes
    the same names and sizes; a spare whose array has another size gets a
    ringmend.Error (INVALID_ARGUMENT) once admitted.
    """

    def __init__(self, state=None, **options):
        super().__init__(options, state if state is not None else {})
        self._world = None
        _open_runtimes.add(self)

    @property
    def world(self):
        """The communicator of every member of the job (the same object each time)."""
        if self._world is None:
            self._world = self._make_world()
        return self._world

    def close(self):
        self._world = None
        super().close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _failing_excepthook(kind, value, traceback, _previous=_sys.excepthook):
    # An uncaught exception ends the interpreter through the Runtime's
    # shutdown: if that must be cut short, the process still ends failed.
    for rt in list(_open_runtimes):
        if not rt.closed:
            rt._application_failed()
    _previous(kind, value, traceback)


_sys.excepthook = _failing_excepthook


@_atexit.register
def _close_open_runtimes():
    for rt in list(_open_runtimes):
        rt.close()
