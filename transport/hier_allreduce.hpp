// Hierarchical allreduce: shared memory inside a node, UCX between nodes.
//
// Every call starts with each local rank posting a descriptor of its call in
// shared memory and checking its node peers' (the shared-memory twin of the
// ring's wire header). Then, by message size:
//
//  * small (<= small_bytes): one-shot. The data travels inline with the
//    descriptor; every local rank reduces all node contributions itself;
//    with several nodes the node leaders combine their node sums by
//    recursive doubling over UCX and hand the result back through shared
//    memory.
//  * large: pipelined over chunks. Each rank copies a chunk of its input
//    into its chunk buffer, except the slice it reduces itself; the rank
//    owning slice i of the chunk reduces it from its own input and every
//    peer's buffer in one pass (reduce-scatter fused into the read); with
//    several nodes, slice i is all-reduced across nodes on rail i (local
//    rank i of every node) by the pipelined UCX ring; then every rank copies
//    the other slices out (allgather). On one node the owner reduces
//    straight into its output. Chunks flow through `depth` buffers, so a
//    rank copies chunk c+1 in while peers still reduce chunk c.
//
// One node: shared memory only. The runtime uses the flat UCX ring instead
// when every node holds a single rank.
//
// Failures: every wait polls the node peers' pidfds and the runtime's
// WaitContext. A failure noticed while waiting ends the call only when
// nothing can progress any more, so on one node the call completes
// everywhere or nowhere: once any rank has finished, every slice is
// reduced and every other live rank can finish too.
#pragma once

#include <cstddef>
#include <vector>

#include "transport/channel.hpp"
#include "transport/progress.hpp"
#include "transport/ring_allreduce.hpp"
#include "transport/shm_node.hpp"

namespace ringmend::transport {

// The part of topo's plan the hierarchical algorithms use.
struct Hierarchy {
  std::vector<int> local_ranks;  // channel ranks of this node, in local order (index = shm slot)
  std::vector<int> leaders;      // channel ranks of every node's leader (local rank 0), in node order
  std::vector<int> rail_ring;    // channel ranks on this rank's rail, in node order; empty if none
  int rails = 1;                 // slices per chunk: ranks carrying a rail on every node
  bool multi_node() const { return leaders.size() > 1; }
};

struct HierTuning {
  std::size_t small_bytes = 0;  // one-shot path up to this size (capped by the slot size)
};

// `inter` carries the inter-node traffic; it may be null on one node.
void hierarchical_allreduce(ShmNode& node, Channel* inter, const Hierarchy& h, const AllreduceArgs& args,
                            WaitContext& ctx, const HierTuning& tuning);

}  // namespace ringmend::transport
