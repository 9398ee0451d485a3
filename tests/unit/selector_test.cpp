// Which algorithm coll::select picks for a call, by layout and size.
#include "coll/selector.hpp"

#include <gtest/gtest.h>

namespace ringmend::coll {
namespace {

constexpr std::size_t KiB = 1024;

Tuning tuning() {
  Tuning t;
  t.small_bytes = 16 * KiB;
  t.chunk_bytes = 256 * KiB;
  return t;
}

Layout flat(int ranks) {
  Layout l;
  for (int r = 0; r < ranks; ++r) {
    l.ring.push_back(r);
    l.leaders.push_back(r);
  }
  return l;
}

AlgorithmId allreduce_on(const Layout& l, std::size_t bytes) {
  return select(CollectiveKind::Allreduce, bytes, l, tuning()).id();
}

TEST(Selector, FlatPathUsesRecursiveDoublingForSmallMessages) {
  for (int n : {2, 3, 4, 8}) {
    EXPECT_EQ(allreduce_on(flat(n), 4), AlgorithmId::RecursiveDoubling) << n;
    EXPECT_EQ(allreduce_on(flat(n), 16 * KiB), AlgorithmId::RecursiveDoubling) << n;
  }
}

// Two ranks: a ring is two exchanges of S/2 against one of S, so recursive
// doubling is kept up to one pipeline chunk (nothing for a ring to overlap).
TEST(Selector, TwoRanksUseRecursiveDoublingUpToOneChunk) {
  EXPECT_EQ(allreduce_on(flat(2), 64 * KiB), AlgorithmId::RecursiveDoubling);
  EXPECT_EQ(allreduce_on(flat(2), 256 * KiB), AlgorithmId::RecursiveDoubling);
  EXPECT_EQ(allreduce_on(flat(2), 256 * KiB + 4), AlgorithmId::RingAllreduce);
  EXPECT_EQ(allreduce_on(flat(2), 64 * 1024 * KiB), AlgorithmId::RingAllreduce);
}

// More ranks: recursive doubling sends log2(n)*S per rank, a ring 2(n-1)/n*S.
TEST(Selector, MoreRanksUseTheRingAboveSmallMessages) {
  for (int n : {3, 4, 8}) {
    EXPECT_EQ(allreduce_on(flat(n), 16 * KiB + 4), AlgorithmId::RingAllreduce) << n;
    EXPECT_EQ(allreduce_on(flat(n), 256 * KiB), AlgorithmId::RingAllreduce) << n;
  }
}

TEST(Selector, SharedMemoryNodesUseTheNodePaths) {
  Layout l = flat(2);
  l.node_shm = true;
  l.local_ranks = {0, 1};
  l.leaders = {0};
  EXPECT_EQ(allreduce_on(l, 16 * KiB), AlgorithmId::ShmOneShot);
  EXPECT_EQ(allreduce_on(l, 64 * KiB), AlgorithmId::ShmPipelined);
}

TEST(Selector, BroadcastUsesTheChain) {
  EXPECT_EQ(select(CollectiveKind::Broadcast, 64 * KiB, flat(4), tuning()).id(), AlgorithmId::ChainBroadcast);
}

}  // namespace
}  // namespace ringmend::coll
