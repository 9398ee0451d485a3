#include "topo/plan.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string_view>
#include <tuple>

namespace ringmend::topo {
namespace {

std::string join(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : " ") + std::to_string(r);
  return s;
}

// "  nic eth1" when every member of a rail names the same NIC, "  nics eth1
// eth2 (mixed)" when they differ: a rail whose members use different NICs
// sends through both, and its bandwidth is not one NIC's of its own.
std::string rail_nics(const std::vector<int>& rail, std::span<const Location> where) {
  std::vector<std::string> nics;
  for (int r : rail) {
    const auto i = static_cast<std::size_t>(r);
    if (i >= where.size()) return {};
    const std::string nic(nic_name(where[i]));
    if (nic.empty()) return {};
    if (std::find(nics.begin(), nics.end(), nic) == nics.end()) nics.push_back(nic);
  }
  if (nics.empty()) return {};
  if (nics.size() == 1) return "  nic " + nics.front();
  std::string s = "  nics";
  for (const std::string& nic : nics) s += " " + nic;
  return s + " (mixed)";
}

}  // namespace

Plan make_plan(std::span<const int> node_key, std::span<const Location> where, int me) {
  if (node_key.size() != where.size())
    throw std::invalid_argument("make_plan: " + std::to_string(node_key.size()) + " node keys for " +
                                std::to_string(where.size()) + " locations");
  const auto key = [&](int r) {
    const auto i = static_cast<std::size_t>(r);
    const Location& w = where[i];
    // The NIC before the cores: rail i is every node's i-th member, so
    // members that share a NIC must sit at the same positions on every node
    // (the launcher's local rank chose the NIC; the binding decides the
    // cores, and it need not follow local-rank order).
    return std::tuple(node_key[i], nic_name(w), w.package, w.numa, w.l3, w.core, r);
  };
  std::vector<int> order(node_key.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });

  Plan plan;
  plan.ring = order;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto r = static_cast<std::size_t>(order[i]);
    if (i == 0 || node_key[r] != node_key[static_cast<std::size_t>(order[i - 1])]) plan.nodes.emplace_back();
    plan.nodes.back().push_back(order[i]);
  }

  std::size_t rails = plan.nodes.empty() ? 0 : plan.nodes.front().size();
  for (const auto& n : plan.nodes) rails = std::min(rails, n.size());
  plan.rails.assign(rails, {});
  for (std::size_t i = 0; i < rails; ++i)
    for (const auto& n : plan.nodes) plan.rails[i].push_back(n[i]);

  for (std::size_t n = 0; n < plan.nodes.size(); ++n) {
    const auto& members = plan.nodes[n];
    const auto it = std::find(members.begin(), members.end(), me);
    if (it == members.end()) continue;
    plan.node = static_cast<int>(n);
    plan.local = static_cast<int>(it - members.begin());
    plan.rail = static_cast<std::size_t>(plan.local) < rails ? plan.local : -1;
  }
  return plan;
}

std::string describe(const Plan& plan, std::span<const Location> where, std::span<const int> world_ranks) {
  std::size_t ranks = 0;
  for (const auto& n : plan.nodes) ranks += n.size();
  std::string s = std::to_string(ranks) + " rank(s) on " + std::to_string(plan.nodes.size()) + " node(s), " +
                  std::to_string(plan.rails.size()) + " rail(s)\n";
  const auto rank_text = [&](int r) {
    const auto i = static_cast<std::size_t>(r);
    std::string t = "rank " + std::to_string(r);
    if (i < world_ranks.size()) t += " (world " + std::to_string(world_ranks[i]) + ")";
    return t;
  };
  for (std::size_t n = 0; n < plan.nodes.size(); ++n) {
    const auto& members = plan.nodes[n];
    s += "node " + std::to_string(n) + ": leader " + rank_text(members.front()) + ", " +
         std::to_string(members.size()) + " rank(s)\n";
    for (std::size_t l = 0; l < members.size(); ++l) {
      const int r = members[l];
      s += "  local " + std::to_string(l) + ": " + rank_text(r);
      if (static_cast<std::size_t>(r) < where.size())
        s += "  " + describe(where[static_cast<std::size_t>(r)]);
      if (l >= plan.rails.size()) s += "  (no rail)";
      if (static_cast<int>(n) == plan.node && static_cast<int>(l) == plan.local) s += "  <- this rank";
      s += "\n";
    }
  }
  for (std::size_t i = 0; i < plan.rails.size(); ++i)
    s += "rail " + std::to_string(i) + ": " + join(plan.rails[i]) + rail_nics(plan.rails[i], where) + "\n";
  s += "ring: " + join(plan.ring) + "\n";
  return s;
}

}  // namespace ringmend::topo
