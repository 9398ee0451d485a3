// The communication plan of one communicator epoch: which ranks share a node,
// their order inside the node, the node leaders, the rails and the flat ring.
// Every rank computes it from the same gathered data, so all agree on it
// without further messages.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "topo/location.hpp"

namespace ringmend::topo {

struct Plan {
  // Per node, its member ranks in local order; nodes by node_key ascending.
  std::vector<std::vector<int>> nodes;
  // The flat ring: the nodes concatenated, each in local order, so that a
  // node boundary costs one inter-node hop and ring neighbours inside a node
  // share a package, NUMA node or L3 wherever the placement allows.
  std::vector<int> ring;
  // Rail i: local rank i of every node, nodes in order. There are as many
  // rails as ranks on the smallest node; on uneven nodes the extra ranks
  // carry no rail (their data goes through a rank of their node that does).
  std::vector<std::vector<int>> rails;
  int node = -1;   // index into nodes of `me`
  int local = -1;  // position of `me` in nodes[node]
  int rail = -1;   // rail of `me`, -1 when it carries none

  int leader(int node_index) const { return nodes.at(static_cast<std::size_t>(node_index)).front(); }
};

// node_key[r] is equal for ranks sharing a node (the communicator rank of the
// node's first rank); where[r] is rank r's Location. Local order is by
// (nic, package, numa, l3, core, rank): members on the same NIC take the
// same positions on every node, so a rail stays on one NIC; unknown (-1)
// fields and unnamed NICs sort first and leave ranks in rank order. `me` outside [0, size) leaves
// node/local/rail at -1. Throws std::invalid_argument when node_key and where differ in size.
Plan make_plan(std::span<const int> node_key, std::span<const Location> where, int me);

// Multi-line dump for logs and ringmend-topo: every node with its leader and
// local order (each rank with its world rank and location), the rails and
// the ring. world_ranks[r] is rank r's world rank; ranks that `where` or
// `world_ranks` does not cover are printed without that field.
std::string describe(const Plan& plan, std::span<const Location> where, std::span<const int> world_ranks);

}  // namespace ringmend::topo
