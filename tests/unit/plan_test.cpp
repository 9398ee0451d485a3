#include "topo/plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "topo/hwloc_handle.hpp"
#include "topo/topo.hpp"

using namespace ringmend::topo;

namespace {

using Ranks = std::vector<int>;
using Groups = std::vector<Ranks>;

// Ranks whose locations are unknown: local order is rank order.
std::vector<Location> unknown(std::size_t n) { return std::vector<Location>(n); }

// 16 ranks on "pack:2 numa:2 l3:2 core:4 pu:1" (32 cores: core c is in
// package c/16, NUMA node c/8, L3 c/4), bound to half the cores, in an order
// unrelated to their ranks.
const Ranks kCoreOfRank = {26, 5, 15, 0, 19, 8, 31, 2, 11, 23, 7, 16, 29, 14, 20, 25};
// The ranks sorted by core: 0 2 5 7 8 11 14 15 | 16 19 20 23 25 26 29 31.
const Ranks kLocalOrder = {3, 7, 1, 10, 5, 8, 13, 2, 11, 4, 14, 9, 15, 0, 12, 6};

std::vector<Location> scrambled_locations() {
  std::string error;
  const Topology topo = load_topology(TopologySource::Synthetic, "pack:2 numa:2 l3:2 core:4 pu:1",
                                      HWLOC_TYPE_FILTER_KEEP_ALL, error);
  EXPECT_TRUE(topo) << error;
  std::vector<Location> where;
  if (!topo) return where;
  for (int core : kCoreOfRank)
    where.push_back(locate(
        topo.get(), hwloc_get_obj_by_type(topo.get(), HWLOC_OBJ_CORE, static_cast<unsigned>(core))->cpuset));
  return where;
}

// How often consecutive ranks of `order` differ in `field`.
template <typename Field>
int changes(const Ranks& order, const std::vector<Location>& where, Field field) {
  int n = 0;
  for (std::size_t i = 1; i < order.size(); ++i)
    n += where[static_cast<std::size_t>(order[i - 1])].*field !=
         where[static_cast<std::size_t>(order[i])].*field;
  return n;
}

template <typename Field>
int distinct(const std::vector<Location>& where, Field field) {
  std::set<std::int32_t> values;
  for (const auto& w : where) values.insert(w.*field);
  return static_cast<int>(values.size());
}

}  // namespace

TEST(Plan, LocalOrderFollowsPackageNumaL3Core) {
  const auto where = scrambled_locations();
  ASSERT_EQ(where.size(), 16u);
  for (std::size_t r = 0; r < where.size(); ++r) {
    const int c = kCoreOfRank[r];
    EXPECT_EQ(where[r].package, c / 16);
    EXPECT_EQ(where[r].numa, c / 8);
    EXPECT_EQ(where[r].l3, c / 4);
    EXPECT_EQ(where[r].core, c);
  }
  const Ranks key(16, 0);
  const Plan plan = make_plan(key, where, 9);
  ASSERT_EQ(plan.nodes, (Groups{kLocalOrder}));
  EXPECT_EQ(plan.ring, kLocalOrder);
  EXPECT_EQ(plan.leader(0), 3);  // the rank on core 0
  EXPECT_EQ(where[static_cast<std::size_t>(plan.leader(0))].core, 0);
  // Ring neighbours share a package but at the one package boundary, and
  // every NUMA node and L3 is visited in one stretch.
  EXPECT_EQ(changes(plan.ring, where, &Location::package), 1);
  EXPECT_EQ(changes(plan.ring, where, &Location::numa), distinct(where, &Location::numa) - 1);
  EXPECT_EQ(changes(plan.ring, where, &Location::l3), distinct(where, &Location::l3) - 1);
  // Rank order would cross packages at almost every step.
  Ranks by_rank(16);
  std::iota(by_rank.begin(), by_rank.end(), 0);
  EXPECT_GT(changes(by_rank, where, &Location::package), 5);
  // One node: every rank is its own rail.
  ASSERT_EQ(plan.rails.size(), 16u);
  for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(plan.rails[i], (Ranks{kLocalOrder[i]}));
  EXPECT_EQ(plan.node, 0);
  EXPECT_EQ(plan.local, 11);  // rank 9 is on core 23
  EXPECT_EQ(plan.rail, 11);
}

TEST(Plan, TwoNodesOfTheSameMachine) {
  auto where = scrambled_locations();
  ASSERT_EQ(where.size(), 16u);
  where.insert(where.end(), where.begin(), where.end());  // ranks 16..31: the same cores on node 2
  Ranks key(32, 0);
  std::fill(key.begin() + 16, key.end(), 16);
  const Plan plan = make_plan(key, where, 16 + 3);
  ASSERT_EQ(plan.nodes.size(), 2u);
  EXPECT_EQ(plan.nodes[0], kLocalOrder);
  ASSERT_EQ(plan.rails.size(), 16u);
  for (std::size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(plan.nodes[1][i], kLocalOrder[i] + 16);
    EXPECT_EQ(plan.rails[i], (Ranks{kLocalOrder[i], kLocalOrder[i] + 16}));
  }
  EXPECT_EQ(plan.leader(1), 19);
  EXPECT_EQ(plan.node, 1);
  EXPECT_EQ(plan.local, 0);
  EXPECT_EQ(plan.rail, 0);
}

TEST(Plan, TwoPlusTwo) {
  const Plan plan = make_plan(Ranks{0, 0, 2, 2}, unknown(4), 3);
  EXPECT_EQ(plan.nodes, (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(plan.ring, (Ranks{0, 1, 2, 3}));
  EXPECT_EQ(plan.rails, (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(plan.leader(0), 0);
  EXPECT_EQ(plan.leader(1), 2);
  EXPECT_EQ(plan.node, 1);
  EXPECT_EQ(plan.local, 1);
  EXPECT_EQ(plan.rail, 1);
}

TEST(Plan, ThreePlusThreeRoundRobin) {
  // Ranks placed round-robin over two nodes (mpirun --map-by node).
  const Plan plan = make_plan(Ranks{0, 1, 0, 1, 0, 1}, unknown(6), 2);
  EXPECT_EQ(plan.nodes, (Groups{{0, 2, 4}, {1, 3, 5}}));
  EXPECT_EQ(plan.ring, (Ranks{0, 2, 4, 1, 3, 5}));
  EXPECT_EQ(plan.rails, (Groups{{0, 1}, {2, 3}, {4, 5}}));
  EXPECT_EQ(plan.node, 0);
  EXPECT_EQ(plan.local, 1);
  EXPECT_EQ(plan.rail, 1);
}

TEST(Plan, UnevenNodesLeaveTheExtraRanksWithoutRail) {
  const Ranks key{0, 0, 0, 3};
  EXPECT_EQ(make_plan(key, unknown(4), 0).rails, (Groups{{0, 3}}));
  const Ranks rail_of{0, -1, -1, 0};
  for (int me = 0; me < 4; ++me) {
    const Plan plan = make_plan(key, unknown(4), me);
    EXPECT_EQ(plan.nodes, (Groups{{0, 1, 2}, {3}}));
    EXPECT_EQ(plan.ring, (Ranks{0, 1, 2, 3}));
    EXPECT_EQ(plan.node, me == 3 ? 1 : 0);
    EXPECT_EQ(plan.local, me == 3 ? 0 : me);
    EXPECT_EQ(plan.rail, rail_of[static_cast<std::size_t>(me)]) << "rank " << me;
  }
}

TEST(Plan, OneRankPerNode) {
  const Plan plan = make_plan(Ranks{0, 1, 2, 3}, unknown(4), 2);
  EXPECT_EQ(plan.nodes, (Groups{{0}, {1}, {2}, {3}}));
  EXPECT_EQ(plan.ring, (Ranks{0, 1, 2, 3}));
  EXPECT_EQ(plan.rails, (Groups{{0, 1, 2, 3}}));
  for (int n = 0; n < 4; ++n) EXPECT_EQ(plan.leader(n), n);
  EXPECT_EQ(plan.node, 2);
  EXPECT_EQ(plan.local, 0);
  EXPECT_EQ(plan.rail, 0);
}

TEST(Plan, SingleNodeSingleRankAndEmpty) {
  Plan plan = make_plan(Ranks{0, 0, 0}, unknown(3), 1);
  EXPECT_EQ(plan.nodes, (Groups{{0, 1, 2}}));
  EXPECT_EQ(plan.rails, (Groups{{0}, {1}, {2}}));
  EXPECT_EQ(plan.rail, 1);
  plan = make_plan(Ranks{0}, unknown(1), 0);
  EXPECT_EQ(plan.nodes, (Groups{{0}}));
  EXPECT_EQ(plan.ring, (Ranks{0}));
  EXPECT_EQ(plan.rails, (Groups{{0}}));
  EXPECT_EQ(plan.rail, 0);
  plan = make_plan(Ranks{}, unknown(0), 0);
  EXPECT_TRUE(plan.nodes.empty() && plan.ring.empty() && plan.rails.empty());
  EXPECT_EQ(plan.node, -1);
  EXPECT_EQ(plan.local, -1);
  EXPECT_EQ(plan.rail, -1);
}

TEST(Plan, NodesOrderedByKeyAndRingIsTheirConcatenation) {
  const Ranks key{9, 3, 9, 3, 7};
  const Plan plan = make_plan(key, unknown(5), 4);
  EXPECT_EQ(plan.nodes, (Groups{{1, 3}, {4}, {0, 2}}));
  EXPECT_EQ(plan.ring, (Ranks{1, 3, 4, 0, 2}));
  EXPECT_EQ(plan.rails, (Groups{{1, 4, 0}}));
  EXPECT_EQ(plan.node, 1);
  // With node_key = first rank of the node, and no locations, the ring is
  // the one ring_order() gives.
  const Ranks first{0, 1, 0, 1, 4, 4, 1};
  EXPECT_EQ(make_plan(first, unknown(7), 0).ring, ring_order(first));
}

TEST(Plan, UnknownLocationsSortFirstInRankOrder) {
  std::vector<Location> where(4);
  where[0].package = 1;
  where[0].core = 9;
  where[1].package = 0;
  where[1].core = 2;
  // ranks 2 and 3 unbound
  const Plan plan = make_plan(Ranks{0, 0, 0, 0}, where, 0);
  EXPECT_EQ(plan.ring, (Ranks{2, 3, 1, 0}));
}

TEST(Plan, MeOutsideTheCommunicatorAndBadInput) {
  const Plan plan = make_plan(Ranks{0, 0}, unknown(2), -1);
  EXPECT_EQ(plan.node, -1);
  EXPECT_EQ(plan.local, -1);
  EXPECT_EQ(plan.rail, -1);
  EXPECT_EQ(make_plan(Ranks{0, 0}, unknown(2), 2).node, -1);
  EXPECT_THROW(make_plan(Ranks{0, 0}, unknown(3), 0), std::invalid_argument);
  EXPECT_THROW(plan.leader(1), std::out_of_range);
}

TEST(Plan, Describe) {
  std::vector<Location> where = unknown(3);
  where[2].package = 0;
  where[2].core = 4;
  std::strcpy(where[2].nic, "mlx5_0");
  const Plan plan = make_plan(Ranks{0, 0, 2}, where, 1);
  const std::string text = describe(plan, where, Ranks{10, 11, 12});
  EXPECT_EQ(text,
            "3 rank(s) on 2 node(s), 1 rail(s)\n"
            "node 0: leader rank 0 (world 10), 2 rank(s)\n"
            "  local 0: rank 0 (world 10)  pkg ? numa ? l3 ? core ?\n"
            "  local 1: rank 1 (world 11)  pkg ? numa ? l3 ? core ?  (no rail)  <- this rank\n"
            "node 1: leader rank 2 (world 12), 1 rank(s)\n"
            "  local 0: rank 2 (world 12)  pkg 0 numa ? l3 ? core 4 nic mlx5_0\n"
            "rail 0: 0 2\n"
            "ring: 0 1 2\n");
  // Missing world ranks or locations leave those fields out.
  EXPECT_NE(describe(plan, {}, {}).find("  local 1: rank 1  (no rail)"), std::string::npos);
}

TEST(Plan, DescribeNamesEachRailsNic) {
  // Two nodes of two ranks, each local rank on its own NIC (RINGMEND_RAIL_DEVICES).
  std::vector<Location> where = unknown(4);
  for (std::size_t r = 0; r < 4; ++r) set_nic(where[r], r % 2 == 0 ? "eth1" : "eth2");
  std::string text = describe(make_plan(Ranks{0, 0, 2, 2}, where, 0), where, {});
  EXPECT_NE(text.find("rail 0: 0 2  nic eth1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rail 1: 1 3  nic eth2\n"), std::string::npos) << text;
  // After node 0 lost its first rank, its rail crosses from one NIC to the other.
  std::vector<Location> after = {where[1], where[2], where[3]};
  text = describe(make_plan(Ranks{0, 1, 1}, after, 0), after, {});
  EXPECT_NE(text.find("rail 0: 0 1  nics eth2 eth1 (mixed)\n"), std::string::npos) << text;
}

TEST(Plan, RailsStayOnOneNicWhateverTheCoresSay) {
  // Local rank L chose NIC L mod 2, but the binder put node 1's second rank
  // (rank 3, eth2) on a lower core than its first (rank 2, eth1): ordered by
  // core alone, rail 0 would pair n0's eth1 with n1's eth2, and both rails
  // would cross NICs.
  std::vector<Location> where = unknown(4);
  const int core[] = {0, 1, 5, 4};
  for (std::size_t r = 0; r < 4; ++r) {
    where[r].core = core[r];
    set_nic(where[r], r % 2 == 0 ? "eth1" : "eth2");
  }
  const Plan plan = make_plan(Ranks{0, 0, 2, 2}, where, 3);
  EXPECT_EQ(plan.rails, (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(plan.rail, 1);
  const std::string text = describe(plan, where, {});
  EXPECT_EQ(text.find("mixed"), std::string::npos) << text;
  // Without NIC names the cores decide, as before.
  for (auto& w : where) set_nic(w, "");
  EXPECT_EQ(make_plan(Ranks{0, 0, 2, 2}, where, 3).rails, (Groups{{0, 3}, {1, 2}}));
}
