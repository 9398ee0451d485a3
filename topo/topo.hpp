// topo/ — where each rank sits, and the order of the rings built from it.
//
// What this folder offers the runtime: ring_order(), which lists the ranks of
// a communicator so that ranks of one node are neighbours in the ring (one
// inter-node hop per node boundary instead of up to one per rank).
// The hwloc-driven, hierarchical plan (local order by package/NUMA/L3,
// leaders, rails) extends this interface.
#pragma once

#include <vector>

namespace ringmend::topo {

// `node_of[r]` is an identifier of rank r's node (equal for ranks sharing a
// node, e.g. the lowest rank on that node). Returns the ranks ordered by node
// (nodes in order of their first rank), then by rank.
std::vector<int> ring_order(const std::vector<int>& node_of);

}  // namespace ringmend::topo
