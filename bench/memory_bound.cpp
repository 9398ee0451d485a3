#include "bench/memory_bound.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "coll/reduce_kernels.hpp"

namespace ringmend::bench {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<std::byte, FreeDeleter>;

Buffer page_aligned(std::size_t bytes) {
  constexpr std::size_t kPage = 4096;
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kPage - 1) / kPage * kPage;
  auto* p = static_cast<std::byte*>(std::aligned_alloc(kPage, rounded));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);  // first touch: pages are mapped before timing
  return Buffer(p);
}

// The stores must happen although nothing reads them: tell the compiler
// that memory may be read here.
inline void clobber(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

// One allreduce's least traffic, on this rank's own buffers, block by
// block as a pipelined allreduce streams its chunks: the n slices of a
// block of `in` (standing for the n ranks' inputs of one slice) reduced
// into the block's first slice of `out` (reduce-scatter), the rest of the
// block copied from `in` while it is still in cache (allgather).
void least_traffic(std::byte* out, const std::byte* in, std::size_t count, int ranks) {
  constexpr std::size_t kBlock = 64 * 1024 / sizeof(float);
  const std::size_t n = std::clamp<std::size_t>(static_cast<std::size_t>(ranks), 1, 64);
  const void* srcs[64];
  for (std::size_t at = 0; at < count; at += kBlock) {
    const std::size_t block = std::min(kBlock, count - at);
    const std::size_t slice = block / n;
    const std::byte* b = in + at * sizeof(float);
    std::byte* o = out + at * sizeof(float);
    for (std::size_t r = 0; r < n; ++r) srcs[r] = b + r * slice * sizeof(float);
    if (n > 1) coll::reduce_many(o, srcs, n, slice, DataType::Float32, ReduceOp::Sum);
    const std::size_t done = n > 1 ? slice : 0;
    std::memcpy(o + done * sizeof(float), b + done * sizeof(float), (block - done) * sizeof(float));
  }
  clobber(out);
}

double trial(std::byte* out, const std::byte* in, std::size_t count, int ranks, int repeats, MPI_Comm comm) {
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < repeats; ++i) least_traffic(out, in, count, ranks);
  double t = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
  return t;
}

}  // namespace

double least_traffic_bytes(std::size_t bytes, int ranks) {
  const double s = static_cast<double>(bytes), n = std::max(ranks, 1);
  return (2 * n - 1) / n * s + s;
}

std::vector<BoundResult> probe_memory_bound(MPI_Comm comm, std::span<const std::size_t> sizes,
                                            int ranks_per_node, const BoundOptions& options) {
  std::vector<BoundResult> results;
  results.reserve(sizes.size());
  const std::size_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  Buffer in = page_aligned(largest), out = page_aligned(largest);
  const int trials = std::max(options.trials, 1);
  std::vector<double> times(static_cast<std::size_t>(trials));
  for (std::size_t bytes : sizes) {
    BoundResult r;
    r.bytes = bytes;
    const std::size_t count = bytes / sizeof(float);
    if (count == 0) {
      results.push_back(r);
      continue;
    }
    const std::size_t per_trial = std::max<std::size_t>(options.min_bytes_per_trial, bytes);
    r.repeats_per_trial = static_cast<int>(std::min<std::size_t>((per_trial + bytes - 1) / bytes, 1u << 24));
    for (int w = 0; w < options.warmup_trials; ++w)
      trial(out.get(), in.get(), count, ranks_per_node, r.repeats_per_trial, comm);
    for (auto& t : times) t = trial(out.get(), in.get(), count, ranks_per_node, r.repeats_per_trial, comm);
    std::sort(times.begin(), times.end());
    const double t =
        options.statistic == BoundOptions::Statistic::Best ? times.front() : times[times.size() / 2];
    r.seconds = t / r.repeats_per_trial;
    r.traffic_per_second = r.seconds > 0 ? least_traffic_bytes(bytes, ranks_per_node) / r.seconds : 0;
    results.push_back(r);
  }
  return results;
}

}  // namespace ringmend::bench
