// Hierarchical allreduce: shared memory inside a node, UCX between nodes.
//
// Two algorithms (the selector picks by size). Every call starts with each
// local rank posting a descriptor of its call in shared memory and checking
// its node peers' (the shared-memory twin of the ring's wire header, naming
// the algorithm). Then:
//
//  * ShmOneShot, small messages (<= small_bytes): one-shot. The data travels inline with the
//    descriptor; every local rank reduces all node contributions itself;
//    with several nodes the node leaders combine their node sums by
//    recursive doubling over UCX and hand the result back through shared
//    memory.
//  * ShmPipelined, larger ones: pipelined over chunks. Each rank copies a chunk of its input
//    into its chunk buffer, except the slice it reduces itself; the rank
//    owning slice i of the chunk reduces it from its own input and every
//    peer's buffer in one pass (reduce-scatter fused into the read); with
//    several nodes, slice i is all-reduced across nodes on rail i (local
//    rank i of every node) by the pipelined UCX ring; then every rank copies
//    the other slices out (allgather). On one node the owner reduces
//    straight into its output. Chunks flow through `depth` buffers, so a
//    rank copies chunk c+1 in while peers still reduce chunk c. Chunk size
//    and depth are chosen per call by local rank 0 (pipeline_tuner.hpp) and
//    posted in its descriptor.
//
// One node: shared memory only. When every node holds a single rank the
// epoch has no node segments and the flat algorithms run instead.
//
// Failures: every wait polls the node peers' pidfds and the runtime's
// WaitContext. A failure noticed while waiting ends the call only when
// nothing can progress any more (a peer may exit once it has done its
// part). On one node a pipelined call can finish together: each rank,
// once done, waits until every local rank is done, and gives up only when a
// peer never will be (see finish_together in the source), so that no rank
// returns from a call that another survivor is still in (a handshake, where
// the runtime would otherwise copy a large result aside for a catch-up).
#pragma once

#include <cstddef>
#include <vector>

#include "coll/algorithm.hpp"
#include "coll/pipeline_tuner.hpp"

namespace ringmend::coll {

// Runs the shared-memory allreduce `path` (ShmOneShot or ShmPipelined) on
// this node's segment; `inter` carries the inter-node traffic and may be
// null on one node. The pipeline's shape comes from tuning.pipeline (local
// rank 0's; it must be set there).
void shm_allreduce(AlgorithmId path, transport::ShmNode& node, transport::Channel* inter,
                   const Layout& layout, const AllreduceArgs& args, const Tuning& tuning,
                   transport::WaitContext& ctx);

class ShmOneShotAllreduce final : public Algorithm {
 public:
  AlgorithmId id() const override { return AlgorithmId::ShmOneShot; }
  bool usable(const Layout& layout) const override { return layout.node_shm; }
  bool applies(CollectiveKind kind, std::size_t bytes, const Layout&, const Tuning& tuning) const override {
    return kind == CollectiveKind::Allreduce && bytes <= tuning.small_bytes;
  }
  // Node leaders combine their node's sums by recursive doubling.
  std::vector<int> peers(const Layout& layout, int rank) const override;
  void run(const Call& call, const Channels& channels, const Layout& layout, const Tuning& tuning,
           transport::WaitContext& ctx) const override;
};

class ShmPipelinedAllreduce final : public Algorithm {
 public:
  AlgorithmId id() const override { return AlgorithmId::ShmPipelined; }
  bool usable(const Layout& layout) const override { return layout.node_shm; }
  bool applies(CollectiveKind kind, std::size_t, const Layout&, const Tuning&) const override {
    return kind == CollectiveKind::Allreduce;
  }
  // The ring neighbours on this rank's rail.
  std::vector<int> peers(const Layout& layout, int rank) const override;
  // On one node, where every local process is watched (the final wait
  // tells a dead peer from a slow one without MPI).
  bool finishes_together(const Layout& layout, const Channels& channels) const override;
  bool reads_staged_input() const override { return true; }
  void run(const Call& call, const Channels& channels, const Layout& layout, const Tuning& tuning,
           transport::WaitContext& ctx) const override;
};

}  // namespace ringmend::coll
