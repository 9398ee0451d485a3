#!/usr/bin/env bash
# Test setting for machines with one GPU: each rank tells NCCL it is a host
# of its own (NCCL_HOSTID), so that NCCL accepts several ranks on one GPU
# (over its network transport) and ringmend runs its NCCL path inside the
# node with them (docs/gpu.md, "Testing on one GPU").
export NCCL_HOSTID="ringmend-test-host-${OMPI_COMM_WORLD_RANK:-0}"
exec "$@"
