// topo/ — where each rank sits, and the order of the rings built from it.
//
// What this folder offers the runtime:
// - ring_order(), which lists the ranks of a communicator so that ranks of
//   one node are neighbours in the ring (one inter-node hop per node
//   boundary instead of up to one per rank);
// - Location, locate_self() and locate() (location.hpp): the package, NUMA
//   node, L3, core, nearest GPU and NIC of a rank, from hwloc;
// - Plan and make_plan() (plan.hpp): from every rank's node and Location,
//   the nodes in local order (by package/NUMA/L3/core), their leaders, the
//   rails and the flat ring, computed alike on every rank;
// - the ringmend-topo tool (tool/), which prints this process's Location or
//   the Plan of ranks simulated on a synthetic or XML topology.
#pragma once

#include <vector>

#include "topo/location.hpp"
#include "topo/plan.hpp"

namespace ringmend::topo {

// `node_of[r]` is an identifier of rank r's node (equal for ranks sharing a
// node, e.g. the lowest rank on that node). Returns the ranks ordered by node
// (nodes in order of their first rank), then by rank.
std::vector<int> ring_order(const std::vector<int>& node_of);

}  // namespace ringmend::topo
