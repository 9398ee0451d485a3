// gpu/: GPU buffers for the runtime above (built with RINGMEND_HAVE_CUDA,
// cmake/RingmendCuda.cmake). What it offers:
//   * cuda_runtime.hpp: whether this process can use a GPU, which device a
//     pointer lives on, RAII for streams, events, pinned and device memory (Buffer),
//     CUDA errors as ringmend::Error;
//   * event_wait.hpp: waiting for GPU work while polling the runtime's
//     failure notification and deadline (never a blind synchronize);
//   * host_staging.hpp: a device buffer copied through pinned host memory
//     in pieces, in the order an algorithm reads it, and its result copied
//     back part by part as it becomes final (coll::Staging);
//   * nccl_library.hpp: NCCL, opened at run time;
//   * nccl_comm.hpp: one NCCL communicator (RAII), made, aborted and shrunk
//     without blocking, and the reduce-scatter / allgather the runtime runs
//     inside a node.
// It depends on core/, transport/ (WaitContext) and coll/ (Staging); the
// runtime decides when a call takes the GPU path (runtime/device_call.cpp).
#pragma once

#include "gpu/cuda_runtime.hpp"
#include "gpu/event_wait.hpp"
#include "gpu/host_staging.hpp"
#include "gpu/nccl_comm.hpp"
#include "gpu/nccl_library.hpp"
