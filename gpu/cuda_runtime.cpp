#include "gpu/cuda_runtime.hpp"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstring>
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

bool driver_loaded() {
  static std::atomic<bool> loaded{false};
  static std::atomic<unsigned long long> libraries_seen{~0ull};
  if (loaded.load(std::memory_order_relaxed)) return true;
  // The loader counts the libraries it has loaded: read it (the first
  // entry of the list is enough), and look for libcuda only when it moved.
  unsigned long long adds = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        *static_cast<unsigned long long*>(out) = info->dlpi_adds;
        return 1;
      },
      &adds);
  if (adds == libraries_seen.exchange(adds, std::memory_order_relaxed)) return false;
  bool found = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const char* slash = info->dlpi_name ? std::strrchr(info->dlpi_name, '/') : nullptr;
        const char* name = slash ? slash + 1 : info->dlpi_name;
        if (name && std::strncmp(name, "libcuda.so", 10) == 0) *static_cast<bool*>(out) = true;
        return *static_cast<bool*>(out) ? 1 : 0;
      },
      &found);
  if (found) loaded.store(true, std::memory_order_relaxed);
  return found;
}

int device_of(const void* p) {
  if (p == nullptr || !driver_loaded() || !cuda_usable()) return -1;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return a.type == cudaMemoryTypeDevice ? a.device : -1;
}

std::string gpu_in_use_pci_bus_id() {
  // The driver API's entry points, looked up in the libcuda the program has
  // loaded (RTLD_NOLOAD): int-returning C functions (CUresult 0 is success).
  if (!driver_loaded()) return {};
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!driver) return {};
  using GetCurrent = int (*)(void**);
  using GetDevice = int (*)(int*);
  using GetBusId = int (*)(char*, int, int);
  const auto get_current = reinterpret_cast<GetCurrent>(dlsym(driver, "cuCtxGetCurrent"));
  const auto get_device = reinterpret_cast<GetDevice>(dlsym(driver, "cuCtxGetDevice"));
  const auto get_bus_id = reinterpret_cast<GetBusId>(dlsym(driver, "cuDeviceGetPCIBusId"));
  std::string out;
  void* context = nullptr;
  int device = -1;
  char bus[32] = {};
  if (get_current && get_device && get_bus_id && get_current(&context) == 0 && context &&
      get_device(&device) == 0 && get_bus_id(bus, sizeof bus, device) == 0)
    out = bus;
  dlclose(driver);  // drops the reference taken above; the program's stays
  return out;
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
