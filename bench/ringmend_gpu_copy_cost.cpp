// What a copy between the GPU and pinned host memory costs on this machine:
// the floor under every staged GPU allreduce (a copy in, a copy out) and
// under MPI's host-staged one. One process, no MPI.
//
//   ringmend_gpu_copy_cost [-m MIN:MAX] [--step-factor F] [-i N]
//
// How it measures: kMethod below (the end of --help).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_cli.hpp"

namespace {

void cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) {
    std::fprintf(stderr, "ringmend_gpu_copy_cost: CUDA %s: %s\n", what, cudaGetErrorString(rc));
    std::exit(3);
  }
}

constexpr const char* kMethod = R"(For each size: device -> host, host -> device, and both one after the
other on one stream (what a staged call does at least), each timed from
the cudaMemcpyAsync to the end of a wait for the stream (polling an event,
as ringmend waits); median of --iterations copies, with the fastest and
slowest. The sizes run up, then down again: a cost that depends on the
order (a GPU that clocks down while idle) shows as two different rows.)";

struct Options {
  std::size_t min_bytes = 8, max_bytes = 64u << 20, factor = 4;
  int iters = 100;
};

Options parse(int argc, char** argv) {
  Options o;
  ringmend::bench::Cli cli("ringmend_gpu_copy_cost",
                           "What a copy between the GPU and pinned host memory costs on this machine: the "
                           "floor under every staged GPU allreduce. One process, no MPI.",
                           kMethod);
  cli.add_message_sizes(o.min_bytes, o.max_bytes, 1);
  cli.add_step_factor(o.factor);
  cli.add_iterations(o.iters, "copies per size and direction")->capture_default_str();
  cli.parse(argc, argv);
  return o;
}

struct Times {
  double median = 0, min = 0, max = 0;
};

template <typename F>
Times time_us(int iters, F&& once) {
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    once();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.front(), us.back()};
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::size_t max_bytes = o.max_bytes;
  const int iters = o.iters;
  cudaDeviceProp prop{};
  cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  void *dev = nullptr, *host = nullptr;
  cuda(cudaMalloc(&dev, max_bytes), "cudaMalloc");
  cuda(cudaMallocHost(&host, max_bytes), "cudaMallocHost");
  cudaStream_t stream = nullptr;
  cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t done = nullptr;
  cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
  const auto wait = [&] {
    cuda(cudaEventRecord(done, stream), "cudaEventRecord");
    while (cudaEventQuery(done) == cudaErrorNotReady) {
    }
  };

  std::printf(
      "# ringmend_gpu_copy_cost: %s, pinned host memory, one stream; us per copy: median [min, max] of %d\n",
      prop.name, iters);
  std::printf("%12s %6s %26s %26s %26s\n", "size", "order", "device->host", "host->device", "both");
  std::vector<std::size_t> sizes;
  for (std::size_t b = o.min_bytes; b <= max_bytes; b *= o.factor) sizes.push_back(b);
  for (const char* order : {"up", "down"}) {
    for (const std::size_t b : sizes) {
      const auto d2h = time_us(iters, [&] {
        cuda(cudaMemcpyAsync(host, dev, b, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
        wait();
      });
      const auto h2d = time_us(iters, [&] {
        cuda(cudaMemcpyAsync(dev, host, b, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
        wait();
      });
      const auto both = time_us(iters, [&] {
        cuda(cudaMemcpyAsync(host, dev, b, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
        cuda(cudaMemcpyAsync(dev, host, b, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
        wait();
      });
      std::printf("%12zu %6s %9.1f [%6.1f, %7.1f] %9.1f [%6.1f, %7.1f] %9.1f [%6.1f, %7.1f]\n", b, order,
                  d2h.median, d2h.min, d2h.max, h2d.median, h2d.min, h2d.max, both.median, both.min,
                  both.max);
    }
    std::reverse(sizes.begin(), sizes.end());
  }
  cudaEventDestroy(done);
  cudaStreamDestroy(stream);
  cudaFreeHost(host);
  cudaFree(dev);
  return 0;
}
