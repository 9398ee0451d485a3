// The CUDA runtime, as the rest of ringmend uses it: one check that turns a
// CUDA error into a ringmend::Error, and an owner for every handle.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>

namespace ringmend::gpu {

// Throws Error(Internal) naming `what` and CUDA's message unless rc is success.
void check(cudaError_t rc, const char* what);

// Whether this process can use a GPU: a driver and at least one device.
// Asked of CUDA once; false on machines without either.
bool cuda_usable();

// Whether the program has loaded the CUDA driver (libcuda). Memory on a GPU
// exists only then, so until it has, no pointer is asked of CUDA: a program
// that never touches a GPU never pays CUDA's initialisation or a context on
// a GPU, and per call a read of the coarse clock (the loader's list is
// looked at again once a tick, to see whether a library was loaded since).
bool driver_loaded();

// Whether the program has a CUDA context its GPU memory can be in: one
// current on the calling thread, or a device's primary context (the runtime
// API's, so cudaMalloc's and PyTorch's). Until it has, no pointer is GPU
// memory, whoever loaded the driver (a library such as UCX may load it into
// a host-only program): per call a read of the coarse clock while nobody
// has initialised the driver, a few driver calls once someone has; true
// from the first context on.
bool context_made();

// The device that holds `p`: its ordinal for device memory, -1 for host
// memory (pageable, pinned or managed: the CPU can read all three), and
// whenever the driver is not loaded or no GPU is usable. Recognise::
// IfContextMade (MemoryKind::Auto) also answers -1 while context_made() is
// false, so memory of a context that is neither primary nor current on the
// calling thread is not recognised; InAnyContext (MemoryKind::Cuda) asks
// CUDA whatever the contexts.
enum class Recognise { IfContextMade, InAnyContext };
int device_of(const void* p, Recognise how = Recognise::IfContextMade);

// The PCI bus id ("0000:65:00.0") of the GPU whose CUDA context is current
// on this thread, when the program has made one before; empty otherwise.
// Asks the driver only if the program has loaded it: a program that has not
// touched a GPU does not pay for CUDA's initialisation here.
std::string gpu_in_use_pci_bus_id();

// Makes `device` current for this thread, and the previous one again at the
// end of the scope.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// Owners of one handle each; movable, not copyable.
class Stream {
 public:
  Stream();  // non-blocking: it does not wait for the legacy default stream
  ~Stream();
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event();  // without timing: cheaper to record and query
  ~Event();
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    std::swap(e_, o.e_);
    return *this;
  }
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s);
  bool done() const;  // cudaEventQuery; throws on an error of the work it follows

 private:
  cudaEvent_t e_ = nullptr;
};

// Memory that GPU copies go to and from, grown on demand, never shrunk:
// page-locked host memory (cudaHostAlloc) or device memory of the current
// device (cudaMalloc).
class Buffer {
 public:
  enum class Kind { Pinned, Device };
  explicit Buffer(Kind kind) : kind_(kind) {}
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void reserve(std::size_t bytes);  // contents are lost when it grows
  std::byte* data() const { return p_; }
  std::size_t size() const { return size_; }

 private:
  void release();
  Kind kind_;
  std::byte* p_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ringmend::gpu
