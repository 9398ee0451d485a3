#include "gpu/cuda_runtime.hpp"

#include <mutex>
#include <string>

#include "ringmend/core/error.hpp"

namespace ringmend::gpu {

void check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  throw Error(Errc::Internal, std::string("CUDA: ") + what + ": " + cudaGetErrorName(rc) + " (" +
                                  cudaGetErrorString(rc) + ")");
}

bool cuda_usable() {
  static const bool usable = [] {
    int n = 0;
    const cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: clear it for later calls
      return false;
    }
    return n > 0;
  }();
  return usable;
}

int device_of(const void* p) {
  if (p == nullptr || !cuda_usable()) return -1;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return a.type == cudaMemoryTypeDevice ? a.device : -1;
}

DeviceGuard::DeviceGuard(int device) {
  check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice");
}

DeviceGuard::~DeviceGuard() {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) (void)cudaSetDevice(previous_);
}

Stream::Stream() { check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreate"); }
Stream::~Stream() {
  if (s_) (void)cudaStreamDestroy(s_);
}

Event::Event() { check(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming), "cudaEventCreate"); }
Event::~Event() {
  if (e_) (void)cudaEventDestroy(e_);
}
void Event::record(cudaStream_t s) { check(cudaEventRecord(e_, s), "cudaEventRecord"); }
bool Event::done() const {
  const cudaError_t rc = cudaEventQuery(e_);
  if (rc == cudaErrorNotReady) return false;
  check(rc, "cudaEventQuery");
  return true;
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
  if (p_) (void)(kind_ == Kind::Pinned ? cudaFreeHost(p_) : cudaFree(p_));
  p_ = nullptr, size_ = 0;
}

void Buffer::reserve(std::size_t bytes) {
  if (bytes <= size_) return;
  release();
  void* p = nullptr;
  if (kind_ == Kind::Pinned)
    check(cudaHostAlloc(&p, bytes, cudaHostAllocPortable), "cudaHostAlloc (pinned staging buffer)");
  else
    check(cudaMalloc(&p, bytes), "cudaMalloc (device work buffer)");
  p_ = static_cast<std::byte*>(p), size_ = bytes;
}

}  // namespace ringmend::gpu
