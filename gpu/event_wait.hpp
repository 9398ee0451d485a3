// Waiting for GPU work the way every ringmend wait does (transport/backoff
// .hpp): the event is polled, and between polls the runtime's check() sees a
// dead peer or a passed deadline. A blind cudaStreamSynchronize would hang
// forever on an NCCL kernel whose peer died (NCCL has no failure detector).
#pragma once

#include <functional>

#include "gpu/cuda_runtime.hpp"
#include "transport/progress.hpp"

namespace ringmend::gpu {

// Returns once `event` completed; throws what ctx.check() throws.
void wait_event(const Event& event, transport::WaitContext& ctx);
// The same for a condition that only a poll can tell (an NCCL communicator
// still being made): `ready` is called between checks until it is true.
void wait_until(const std::function<bool()>& ready, transport::WaitContext& ctx);

}  // namespace ringmend::gpu
