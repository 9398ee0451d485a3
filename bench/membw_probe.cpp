#include "bench/membw_probe.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

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
  std::memset(p, 0x5a, rounded);  // first touch: pages are mapped before timing
  return Buffer(p);
}

// The copies must happen although nothing reads the destination: tell the
// compiler that memory may be read here.
inline void clobber(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

double trial(std::byte* dst, const std::byte* src, std::size_t bytes, int repeats, MPI_Comm comm) {
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < repeats; ++i) {
    std::memcpy(dst, src, bytes);
    clobber(dst);
  }
  double t = MPI_Wtime() - t0;
  // A trial lasts until the slowest rank has finished its copies.
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
  return t;
}

}  // namespace

std::vector<MembwResult> probe_copy_bandwidth(MPI_Comm comm, std::span<const std::size_t> sizes,
                                              const MembwOptions& options) {
  std::vector<MembwResult> results;
  results.reserve(sizes.size());
  const std::size_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  Buffer src = page_aligned(largest), dst = page_aligned(largest);
  const int trials = std::max(options.trials, 1);
  std::vector<double> times(static_cast<std::size_t>(trials));
  for (std::size_t bytes : sizes) {
    MembwResult r;
    r.bytes = bytes;
    if (bytes == 0) {
      results.push_back(r);
      continue;
    }
    const std::size_t per_trial = std::max<std::size_t>(options.min_bytes_per_trial, bytes);
    r.repeats_per_trial = static_cast<int>(std::min<std::size_t>((per_trial + bytes - 1) / bytes, 1u << 24));
    for (int w = 0; w < options.warmup_trials; ++w)
      trial(dst.get(), src.get(), bytes, r.repeats_per_trial, comm);
    for (auto& t : times) t = trial(dst.get(), src.get(), bytes, r.repeats_per_trial, comm);
    std::sort(times.begin(), times.end());
    const double t =
        options.statistic == MembwOptions::Statistic::Best ? times.front() : times[times.size() / 2];
    r.seconds_per_copy = t / r.repeats_per_trial;
    r.bytes_per_second = r.seconds_per_copy > 0 ? static_cast<double>(bytes) / r.seconds_per_copy : 0;
    results.push_back(r);
  }
  return results;
}

}  // namespace ringmend::bench
