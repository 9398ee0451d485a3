// Pairwise alltoall: every rank sends each other rank the block meant for
// it, straight to it, over the flat channel (shared memory inside a node,
// UCX across). In step s (1..n-1) rank p sends to p+s and receives from
// p-s, so that in every step each rank has one partner of each direction
// and no rank is the target of all at once; every step is posted up front
// and completes in order. Each pair first exchanges a header with the count
// the sender sends, which the receiver compares with what it expects from
// that sender: a disagreement is a Mismatch before any data moves, never a
// hang or data cut short. A rank moves exactly its own blocks, the least
// any alltoall can.
//
// Its peers are every rank. Across nodes that is a UCX connection per pair
// in every epoch (and every recovery), so it is used there only up to
// kMaxMeshRanks ranks; a larger alltoall across nodes is not built yet.
#pragma once

#include <cstddef>
#include <vector>

#include "coll/algorithm.hpp"

namespace ringmend::coll {

void pairwise_alltoall(transport::Channel& ch, const AlltoallArgs& args, transport::WaitContext& ctx);

class PairwiseAlltoall final : public Algorithm {
 public:
  static constexpr std::size_t kMaxMeshRanks = 16;
  AlgorithmId id() const override { return AlgorithmId::PairwiseAlltoall; }
  bool usable(const Layout& layout) const override {
    return !layout.multi_node() || layout.ring.size() <= kMaxMeshRanks;
  }
  bool applies(CollectiveKind kind, std::size_t, const Layout&, const Tuning&) const override {
    return kind == CollectiveKind::Alltoall;
  }
  std::vector<int> peers(const Layout& layout, int rank) const override;
  void run(const Call& call, const Channels& channels, const Layout& layout, const Tuning& tuning,
           transport::WaitContext& ctx) const override;
};

}  // namespace ringmend::coll
