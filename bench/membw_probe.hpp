// Node-concurrent memory-copy bandwidth, measured inside the MPI job.
//
// Every rank of a node copies S bytes with memcpy at the same time (a
// barrier starts each trial), so the figure is what one rank gets while all
// its node's ranks compete for caches and memory, as they do in a
// shared-memory collective. A trial repeats the copy often enough to last a
// measurable time; its duration is that of the slowest rank. The result per
// size is the best (or the median) trial, as bytes copied per second per rank.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <span>
#include <vector>

namespace ringmend::bench {

struct MembwOptions {
  enum class Statistic { Best, Median };
  Statistic statistic = Statistic::Best;
  int trials = 10;                            // timed trials per size
  int warmup_trials = 2;                      // untimed trials first
  std::size_t min_bytes_per_trial = 1 << 20;  // small copies are repeated up to this
};

struct MembwResult {
  std::size_t bytes = 0;        // S, the size of one copy
  double bytes_per_second = 0;  // per rank, all ranks of the node copying
  double seconds_per_copy = 0;  // time of one copy of S bytes
  int repeats_per_trial = 1;    // copies of S bytes per timed trial
};

// Collective over `comm` (all ranks call it with the same sizes): a barrier
// over `comm` starts each trial, so all ranks of a node copy at once (and
// the nodes at the same time). A trial's time is that of the slowest rank of
// `comm`, so on several nodes the slowest node bounds the result. Sizes of
// 0 give 0.
std::vector<MembwResult> probe_copy_bandwidth(MPI_Comm comm, std::span<const std::size_t> sizes,
                                              const MembwOptions& options = {});

}  // namespace ringmend::bench
