#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "topo/topo.hpp"

namespace ringmend::topo {

std::vector<int> ring_order(const std::vector<int>& node_of) {
  // Each node is placed where its first rank is; ranks keep their order
  // within a node (stable sort).
  std::unordered_map<int, int> first_rank_of_node;
  for (int r = static_cast<int>(node_of.size()) - 1; r >= 0; --r)
    first_rank_of_node[node_of[static_cast<std::size_t>(r)]] = r;
  std::vector<int> order(node_of.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return first_rank_of_node[node_of[static_cast<std::size_t>(a)]] <
           first_rank_of_node[node_of[static_cast<std::size_t>(b)]];
  });
  return order;
}

}  // namespace ringmend::topo
