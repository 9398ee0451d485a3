#include <gtest/gtest.h>

#include "topo/topo.hpp"

using ringmend::topo::ring_order;

TEST(RingOrder, KeepsRanksOfOneNodeTogether) {
  // Ranks placed round-robin over two nodes (0,2,4 on node 0; 1,3,5 on node 1).
  EXPECT_EQ(ring_order({0, 1, 0, 1, 0, 1}), (std::vector<int>{0, 2, 4, 1, 3, 5}));
}

TEST(RingOrder, BlockPlacementIsUnchanged) {
  EXPECT_EQ(ring_order({0, 0, 2, 2}), (std::vector<int>{0, 1, 2, 3}));
}

TEST(RingOrder, NodesOrderedByTheirFirstRankWhateverTheirKeys) {
  EXPECT_EQ(ring_order({9, 3, 9, 3, 7}), (std::vector<int>{0, 2, 1, 3, 4}));
}

TEST(RingOrder, SingleRankAndEmpty) {
  EXPECT_EQ(ring_order({5}), (std::vector<int>{0}));
  EXPECT_TRUE(ring_order({}).empty());
}
