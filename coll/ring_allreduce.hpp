// Ring allreduce: reduce-scatter then allgather around a ring, each step cut
// into chunks that are pipelined (a chunk is forwarded as soon as it is
// reduced, while the next chunks are still arriving).
//
// With n ranks every rank sends and receives 2(n-1)/n of the buffer: the
// bandwidth-optimal schedule, and the one the busbw figures are defined by.
// Used when the ranks of a node do not share memory (every node holds one
// rank, or RINGMEND_SHM=0), above the latency algorithm's size.
#pragma once

#include <cstddef>
#include <vector>

#include "coll/algorithm.hpp"

namespace ringmend::coll {

// `ring` lists channel ranks in ring order (topo decides it).
void ring_allreduce(transport::Channel& ch, const std::vector<int>& ring, const AllreduceArgs& args,
                    transport::WaitContext& ctx, std::size_t chunk_bytes);

class RingAllreduce final : public Algorithm {
 public:
  AlgorithmId id() const override { return AlgorithmId::RingAllreduce; }
  bool usable(const Layout& layout) const override { return !layout.node_shm; }
  bool applies(CollectiveKind kind, std::size_t, const Layout&, const Tuning&) const override {
    return kind == CollectiveKind::Allreduce;
  }
  std::vector<int> peers(const Layout& layout, int rank) const override;
  bool reads_staged_input() const override { return true; }
  void run(const Call& call, const Channels& channels, const Layout& layout, const Tuning& tuning,
           transport::WaitContext& ctx) const override;
};

}  // namespace ringmend::coll
