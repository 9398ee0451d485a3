// Recursive-doubling allreduce over a group of channel ranks: log2(n)
// exchanges of the whole (small) buffer, the latency-optimal schedule for
// messages too small for a ring to pay off. Non-power-of-two groups fold the
// extra ranks into a partner first and hand them the result at the end.
//
// Every rank combines lower-group-first, so all ranks get bit-identical
// results even for floating point.
#pragma once

#include <cstddef>
#include <vector>

#include "coll/algorithm.hpp"

namespace ringmend::coll {

// `group` lists the channel ranks taking part (this rank among them);
// args.output receives the result (args.input may equal args.output).
// `as` is the algorithm its headers name (the one-shot shared-memory path
// runs it between node leaders).
void recursive_doubling_allreduce(transport::Channel& ch, const std::vector<int>& group,
                                  const AllreduceArgs& args, transport::WaitContext& ctx,
                                  AlgorithmId as = AlgorithmId::RecursiveDoubling);

// The channel ranks `me` exchanges with in a recursive doubling over
// `group` (to create endpoints to exactly those).
std::vector<int> recursive_doubling_peers(const std::vector<int>& group, int me);

// The latency algorithm of the flat path (no shared memory inside nodes):
// up to small_bytes; and with two ranks up to one pipeline chunk, where a
// ring is two exchanges of S/2 against one of S here (the same bytes each
// way, one latency more) and has no second chunk to overlap with the first.
class RecursiveDoublingAllreduce final : public Algorithm {
 public:
  AlgorithmId id() const override { return AlgorithmId::RecursiveDoubling; }
  bool usable(const Layout& layout) const override { return !layout.node_shm; }
  bool applies(CollectiveKind kind, std::size_t bytes, const Layout& layout,
               const Tuning& tuning) const override {
    return kind == CollectiveKind::Allreduce &&
           (bytes <= tuning.small_bytes || (layout.ring.size() == 2 && bytes <= tuning.chunk_bytes));
  }
  std::vector<int> peers(const Layout& layout, int rank) const override {
    return recursive_doubling_peers(layout.ring, rank);
  }
  void run(const Call& call, const Channels& channels, const Layout& layout, const Tuning& tuning,
           transport::WaitContext& ctx) const override;
};

}  // namespace ringmend::coll
