// Ring reduce-scatter: the block of the rank at ring position q starts at
// position q + 1 and travels n - 1 hops along the ring, each rank adding its
// own contribution before passing it on, and ends reduced at q. Every rank
// sends and receives (n-1)/n of its input, the least any reduce-scatter can
// move, and each block is reduced once, in ring order. It runs on the flat
// channel along the epoch's ring, like ring_allgather.hpp.
#pragma once

#include <cstddef>
#include <vector>

#include "coll/algorithm.hpp"

namespace ringmend::coll {

void ring_reduce_scatter(transport::Channel& ch, const std::vector<int>& ring, const ReduceScatterArgs& args,
                         transport::WaitContext& ctx);

class RingReduceScatter final : public Algorithm {
 public:
  AlgorithmId id() const override { return AlgorithmId::RingReduceScatter; }
  bool usable(const Layout&) const override { return true; }
  bool applies(CollectiveKind kind, std::size_t, const Layout&, const Tuning&) const override {
    return kind == CollectiveKind::ReduceScatter;
  }
  std::vector<int> peers(const Layout& layout, int rank) const override;
  void run(const Call& call, const Channels& channels, const Layout& layout, const Tuning& tuning,
           transport::WaitContext& ctx) const override;
};

}  // namespace ringmend::coll
