"""Every rank of an MPI job runs the same pytest session; the tests call
collectives, so they run in the same order on every rank. One Runtime for
the session (MPI starts once per process)."""

import pytest

import ringmend


@pytest.fixture(scope="session")
def runtime():
    rt = ringmend.Runtime(timeout=60)
    yield rt
    rt.close()


@pytest.fixture(scope="session")
def world(runtime):
    return runtime.world


def pytest_sessionfinish(session, exitstatus):
    """One line per rank that the job's checker counts (tests/mpi/expect_passed.sh)."""
    import os

    rank = os.environ.get("OMPI_COMM_WORLD_RANK", "?")
    verdict = "PASSED" if exitstatus == 0 else "FAILED"
    print(f"\nTEST {verdict} world rank {rank}: pytest exit status {int(exitstatus)}", flush=True)
