// The least memory traffic of an allreduce inside one node, and the time
// this machine needs for it: a bound that no shared-memory allreduce can
// beat, measured inside the job (bench/README.md, "The memory bound").
//
// Reduce-scatter plus allgather on n ranks, S bytes, at the least per rank
// (summed over the ranks, shared evenly): read the n inputs of the slice it
// reduces (S) and write that slice (S/n); read the other n-1 slices of the
// result and write them (n-1)/n * S:
//
//     reads = (2n-1)/n * S        writes = S        per rank
//
// The probe makes exactly that traffic on each rank's own buffers, every
// rank of the node at once, with the runtime's reduction kernel, block by
// block (64 KiB) as a pipelined allreduce streams its chunks: so only S
// comes from memory and the slices read a second time come from cache, as
// the peers' data does in a pipelined allreduce. No transfer between cores,
// no synchronisation: a real allreduce only adds to it. (An earlier model,
// two memcpys of S from memory, was beaten by up to 60 % at large sizes: the
// second copy stays in cache.) A trial repeats the pattern until 16 MiB of
// output are written; its time is that of the slowest rank; the result is
// the best (or median) trial.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <span>
#include <vector>

namespace ringmend::bench {

struct BoundOptions {
  enum class Statistic { Best, Median };
  Statistic statistic = Statistic::Best;
  int trials = 10;                             // timed trials per size
  int warmup_trials = 2;                       // untimed trials first
  std::size_t min_bytes_per_trial = 16 << 20;  // smaller sizes are repeated up to this
};

struct BoundResult {
  std::size_t bytes = 0;          // S
  double seconds = 0;             // least time of one allreduce of S bytes
  double traffic_per_second = 0;  // least bytes read + written per second per rank
  int repeats_per_trial = 1;
};

// Bytes read and written per rank by an allreduce of `bytes` on `ranks`
// ranks of one node, at the least.
double least_traffic_bytes(std::size_t bytes, int ranks);

// Collective over `comm` (same sizes everywhere): a barrier over `comm`
// starts each trial, so every rank of a node works at once. `ranks_per_node`
// is n in the model (the largest node's). Float sums, as the benchmark's.
// Sizes of 0 give 0.
std::vector<BoundResult> probe_memory_bound(MPI_Comm comm, std::span<const std::size_t> sizes,
                                            int ranks_per_node, const BoundOptions& options = {});

}  // namespace ringmend::bench
