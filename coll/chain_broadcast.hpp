// Pipelined chain broadcast along the ring: the root sends chunks to its
// right neighbour, every other rank forwards each chunk as soon as it has
// arrived. Time ~ bytes/bandwidth + (n-1) * chunk latency. It runs on the
// flat channel: shared memory between ranks of one node, the network only
// at node boundaries. The runtime's catch-up (handing a finished result to
// survivors that missed it) is this broadcast too.
#pragma once

#include <cstddef>
#include <vector>

#include "coll/algorithm.hpp"

namespace ringmend::coll {

void chain_broadcast(transport::Channel& ch, const std::vector<int>& ring, const BroadcastArgs& args,
                     transport::WaitContext& ctx, std::size_t chunk_bytes);

class ChainBroadcast final : public Algorithm {
 public:
  AlgorithmId id() const override { return AlgorithmId::ChainBroadcast; }
  bool usable(const Layout&) const override { return true; }
  bool applies(CollectiveKind kind, std::size_t, const Layout&, const Tuning&) const override {
    return kind == CollectiveKind::Broadcast;
  }
  std::vector<int> peers(const Layout& layout, int rank) const override;
  void run(const Call& call, const Channels& channels, const Layout& layout, const Tuning& tuning,
           transport::WaitContext& ctx) const override;
};

}  // namespace ringmend::coll
