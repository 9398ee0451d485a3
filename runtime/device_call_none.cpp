// GPU buffers in a build without CUDA (RINGMEND_CUDA=OFF, or no toolkit
// found): every pointer is host memory, and a call that asks for GPU
// memory is an error on every rank.
#include "runtime/communicator_impl.hpp"

namespace ringmend {

struct DeviceContext {};
void DeviceContextDeleter::operator()(DeviceContext* p) const { delete p; }

bool is_gpu_pointer(const void*) { return false; }
std::string gpu_in_use() { return {}; }
bool Communicator::cuda_built() { return false; }
bool Communicator::cuda_usable() { return false; }

std::optional<CollectiveResult> Communicator::Impl::run_on_device(const CollectiveCall& call) {
  if (call.memory != MemoryKind::Cuda || call.count == 0) return std::nullopt;
  CollectiveCall c = call;
  c.placement_error =
      "GPU memory asked for (MemoryKind::Cuda), but ringmend was built without CUDA (RINGMEND_CUDA)";
  return run(c);
}

void Communicator::Impl::execute_device(const CollectiveCall&, std::uint64_t) {}
bool Communicator::Impl::decide_nccl() { return false; }
void Communicator::Impl::execute_nccl(const CollectiveCall&, std::uint64_t) {}
void Communicator::Impl::wait_nccl(const gpu::Event&) {}
bool Communicator::Impl::shrink_mode() const { return false; }
void Communicator::Impl::device_result_from(const CollectiveCall&, const void*) {}
void Communicator::Impl::stop_device_collectives() {}
void Communicator::Impl::device_retained_to_host(std::uint64_t, void*, std::size_t) {}

}  // namespace ringmend
