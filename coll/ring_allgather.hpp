// Ring allgather: n-1 steps around the ring, each rank passing on to its
// right neighbour the block it received from its left one in the step
// before (its own first). Every rank sends and receives (n-1)/n of the
// output, the least any allgather can move; time ~ (n-1) * (block latency
// + block / bandwidth). It runs on the flat channel (shared memory between
// ranks of one node, the network at node boundaries), along the epoch's
// ring, which crosses each node boundary once in each direction. Blocks may
// differ in size (an uneven allgather, AllgatherArgs::counts): each still
// crosses each link once: every rank receives the output less its own block
// and sends it less its right neighbour's.
#pragma once

#include <cstddef>
#include <vector>

#include "coll/algorithm.hpp"

namespace ringmend::coll {

void ring_allgather(transport::Channel& ch, const std::vector<int>& ring, const AllgatherArgs& args,
                    transport::WaitContext& ctx);

class RingAllgather final : public Algorithm {
 public:
  AlgorithmId id() const override { return AlgorithmId::RingAllgather; }
  bool usable(const Layout&) const override { return true; }
  bool applies(CollectiveKind kind, std::size_t, const Layout&, const Tuning&) const override {
    return kind == CollectiveKind::Allgather || kind == CollectiveKind::AllgatherV;
  }
  std::vector<int> peers(const Layout& layout, int rank) const override;
  void run(const Call& call, const Channels& channels, const Layout& layout, const Tuning& tuning,
           transport::WaitContext& ctx) const override;
};

}  // namespace ringmend::coll
