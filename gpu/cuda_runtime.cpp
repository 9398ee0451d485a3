#include "gpu/cuda_runtime.hpp"

#include <dlfcn.h>
#include <link.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

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

namespace {

// A "not yet" answer kept for the rest of the current tick of
// CLOCK_MONOTONIC_COARSE (a read of the kernel's last tick: a few ns, no
// system call). Nothing is kept where ticks are longer than 4 ms or the
// clock cannot be read.
class KeptForATick {
 public:
  // The current tick, or -1 when no answer can be kept.
  static std::int64_t now() {
    static const bool short_ticks = [] {
      timespec res{};
      return clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_sec == 0 && res.tv_nsec <= 4'000'000;
    }();
    timespec ts{};
    if (!short_ticks || clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0) return -1;
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  }
  bool holds(std::int64_t tick) const { return tick >= 0 && tick == tick_.load(std::memory_order_relaxed); }
  void keep(std::int64_t tick) {
    if (tick >= 0) tick_.store(tick, std::memory_order_relaxed);
  }

 private:
  std::atomic<std::int64_t> tick_{-1};
};

}  // namespace

bool driver_loaded() {
  static std::atomic<bool> loaded{false};
  static std::atomic<unsigned long long> libraries_seen{~0ull};
  // "Absent" stands for the rest of the coarse clock's tick (4 ms at most)
  // without asking the loader again, which takes its lock: a GPU pointer
  // needs the driver loaded *and* initialised, a context made and memory
  // allocated, which takes far longer than that (cuInit alone, tens of
  // milliseconds and more), so no GPU pointer can exist yet.
  static KeptForATick absent;
  if (loaded.load(std::memory_order_relaxed)) return true;
  const std::int64_t tick = KeptForATick::now();
  if (absent.holds(tick)) return false;
  // The loader counts the libraries it has loaded: read it (the first
  // entry of the list is enough), and look for libcuda only when it moved.
  unsigned long long adds = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        *static_cast<unsigned long long*>(out) = info->dlpi_adds;
        return 1;
      },
      &adds);
  bool found = false;
  if (adds != libraries_seen.exchange(adds, std::memory_order_relaxed)) {
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* out) {
          const char* slash = info->dlpi_name ? std::strrchr(info->dlpi_name, '/') : nullptr;
          const char* name = slash ? slash + 1 : info->dlpi_name;
          if (name && std::strncmp(name, "libcuda.so", 10) == 0) *static_cast<bool*>(out) = true;
          return *static_cast<bool*>(out) ? 1 : 0;
        },
        &found);
  }
  if (found)
    loaded.store(true, std::memory_order_relaxed);
  else
    absent.keep(tick);
  return found;
}

namespace {

// The driver API's entry points that the checks below use, looked up in the
// libcuda the program has loaded (RTLD_NOLOAD; the reference is kept: the
// driver stays loaded anyway). int-returning C functions, CUresult 0 is
// success; a CUdevice is an int.
struct DriverApi {
  int (*ctx_get_current)(void**) = nullptr;
  int (*ctx_get_device)(int*) = nullptr;
  int (*device_get_count)(int*) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*primary_ctx_get_state)(int, unsigned*, int*) = nullptr;
  int (*device_get_pci_bus_id)(char*, int, int) = nullptr;

  static const DriverApi& get() {
    static const DriverApi api = [] {
      DriverApi a;
      void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
      if (!driver) return a;
      const auto entry = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(driver, name));
      };
      entry(a.ctx_get_current, "cuCtxGetCurrent");
      entry(a.ctx_get_device, "cuCtxGetDevice");
      entry(a.device_get_count, "cuDeviceGetCount");
      entry(a.device_get, "cuDeviceGet");
      entry(a.primary_ctx_get_state, "cuDevicePrimaryCtxGetState");
      entry(a.device_get_pci_bus_id, "cuDeviceGetPCIBusId");
      return a;
    }();
    return api;
  }
};

constexpr int kCudaErrorNotInitialized = 3;  // CUDA_ERROR_NOT_INITIALIZED

enum class ContextState { Found, None, DriverUninitialised };

// Whether a CUDA context exists that the program's GPU memory can be in:
// one current on this thread, or a device's primary context (the one the
// runtime API, and so PyTorch and most programs, allocate in). When unsure,
// Found.
ContextState driver_context_state() {
  const DriverApi& api = DriverApi::get();
  if (!api.ctx_get_current || !api.device_get_count || !api.device_get || !api.primary_ctx_get_state)
    return ContextState::Found;
  void* current = nullptr;
  if (api.ctx_get_current(&current) == 0 && current) return ContextState::Found;
  int n = 0;
  const int rc = api.device_get_count(&n);
  if (rc == kCudaErrorNotInitialized) return ContextState::DriverUninitialised;  // nobody called cuInit
  if (rc != 0) return ContextState::Found;
  for (int i = 0; i < n; ++i) {
    int device = 0, active = 0;
    unsigned flags = 0;
    if (api.device_get(&device, i) != 0 || api.primary_ctx_get_state(device, &flags, &active) != 0 || active)
      return ContextState::Found;
  }
  return ContextState::None;
}

}  // namespace

bool context_made() {
  static std::atomic<bool> made{false};
  static KeptForATick uninitialised;
  if (made.load(std::memory_order_relaxed)) return true;
  if (!driver_loaded()) return false;
  // A driver nobody has initialised has no context, and initialising it
  // and making one takes far longer than a tick: that answer stands for the
  // rest of the tick. "Initialised, no context yet" is asked again every
  // call: another thread may be just about to finish making one.
  const std::int64_t tick = KeptForATick::now();
  if (uninitialised.holds(tick)) return false;
  switch (driver_context_state()) {
    case ContextState::Found:
      made.store(true, std::memory_order_relaxed);
      return true;
    case ContextState::DriverUninitialised:
      uninitialised.keep(tick);
      return false;
    case ContextState::None:
      return false;
  }
  return true;
}

int device_of(const void* p, Recognise how) {
  const bool may_be_gpu_memory = how == Recognise::InAnyContext ? driver_loaded() : context_made();
  if (p == nullptr || !may_be_gpu_memory || !cuda_usable()) return -1;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return a.type == cudaMemoryTypeDevice ? a.device : -1;
}

std::string gpu_in_use_pci_bus_id() {
  if (!driver_loaded()) return {};
  const DriverApi& api = DriverApi::get();
  void* context = nullptr;
  int device = -1;
  char bus[32] = {};
  if (api.ctx_get_current && api.ctx_get_device && api.device_get_pci_bus_id &&
      api.ctx_get_current(&context) == 0 && context && api.ctx_get_device(&device) == 0 &&
      api.device_get_pci_bus_id(bus, sizeof bus, device) == 0)
    return bus;
  return {};
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
