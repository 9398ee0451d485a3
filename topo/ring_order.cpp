#include <algorithm>
#include <numeric>

#include "topo/topo.hpp"

namespace ringmend::topo {

std::vector<int> ring_order(const std::vector<int>& node_of) {
  const int n = static_cast<int>(node_of.size());
  // Position of each node = the first rank that lives on it.
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  auto first_of = [&](int r) {
    int first = r;
    for (int q = 0; q < r; ++q)
      if (node_of[static_cast<std::size_t>(q)] == node_of[static_cast<std::size_t>(r)]) {
        first = q;
        break;
      }
    return first;
  };
  std::vector<int> key(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) key[static_cast<std::size_t>(r)] = first_of(r);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return key[static_cast<std::size_t>(a)] < key[static_cast<std::size_t>(b)]; });
  return order;
}

}  // namespace ringmend::topo
