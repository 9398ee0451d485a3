// Ranks placed on simulated machines, for ringmend-topo and its tests: every
// node is a copy of one topology, ranks fill the nodes in blocks (as mpirun's
// default by-slot mapping does) and each rank is bound to one core.
#pragma once

#include <hwloc.h>

#include <span>
#include <vector>

#include "topo/location.hpp"

namespace ringmend::topo {

struct Simulation {
  std::vector<int> node_key;    // per rank: the first rank of its node
  std::vector<int> core;        // per rank: logical index of its core on its node
  std::vector<Location> where;  // per rank: locate() of that core
};

// `ranks` ranks on `nodes` nodes; the first ranks % nodes nodes get one rank
// more. With an empty `bind`, local rank i of a node is bound to core
// i mod (cores per node); otherwise rank r is bound to core bind[r], and
// bind must have one entry per rank. Machines without cores in their
// topology are bound by PU. Throws std::invalid_argument (with a message fit
// for the user) on ranks <= 0, nodes outside [1, ranks], a bind list of the
// wrong length or a core the topology does not have.
Simulation simulate(hwloc_topology_t topo, int ranks, int nodes, std::span<const int> bind);

}  // namespace ringmend::topo
