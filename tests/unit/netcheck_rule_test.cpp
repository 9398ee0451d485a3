#include <gtest/gtest.h>

#include "slurm/netcheck.hpp"

using namespace ringmend::slurm;

namespace {
// K nodes, every link `bw` MB/s both ways, every node `local` GB/s.
NetcheckMeasurements uniform(std::size_t k, double bw, double local) {
  NetcheckMeasurements m;
  for (std::size_t i = 0; i < k; ++i) m.nodes.push_back("n" + std::to_string(i + 1));
  m.local_gbs.assign(k, local);
  m.bw_mbs.assign(k, std::vector<double>(k, bw));
  m.latency_us.assign(k, std::vector<double>(k, 50));
  return m;
}
// Node `slow` has links at `bw` to everyone.
void slow_links(NetcheckMeasurements& m, std::size_t slow, double bw) {
  for (std::size_t j = 0; j < m.nodes.size(); ++j) {
    m.bw_mbs[slow][j] = bw;
    m.bw_mbs[j][slow] = bw;
  }
}
}  // namespace

TEST(NetcheckRule, HealthyNodesAllPass) {
  for (std::size_t k : {1u, 2u, 3u, 8u}) {
    auto m = uniform(k, 1000, 10);
    const auto r = judge(m, {});
    EXPECT_TRUE(r.dropped().empty()) << k;
    EXPECT_TRUE(r.error.empty()) << r.error;
  }
}

TEST(NetcheckRule, ASlowLinkNodeAmongThreeOrMoreIsDropped) {
  for (std::size_t k : {3u, 4u, 7u}) {
    auto m = uniform(k, 1000, 10);
    slow_links(m, 1, 200);
    const auto r = judge(m, {});
    EXPECT_EQ(r.dropped(), std::vector<std::string>{"n2"}) << k;
    EXPECT_NE(r.nodes[1].reason.find("bandwidth to the other nodes 200 MB/s"), std::string::npos)
        << r.nodes[1].reason;
  }
}

TEST(NetcheckRule, OneDirectionIsEnoughToBeSlow) {
  auto m = uniform(4, 1000, 10);
  for (std::size_t j = 0; j < 4; ++j) m.bw_mbs[2][j] = 100;  // n3 sends slowly
  EXPECT_EQ(judge(m, {}).dropped(), std::vector<std::string>{"n3"});
}

TEST(NetcheckRule, NoisyButHealthyNodesStay) {
  auto m = uniform(4, 1000, 10);
  m.bw_mbs[0][1] = 600;  // within the ratio
  m.local_gbs[3] = 6;
  EXPECT_TRUE(judge(m, {}).dropped().empty());
}

TEST(NetcheckRule, TwoNodesTheLocalRateDecides) {
  auto m = uniform(2, 300, 10);
  m.local_gbs[1] = 1.2;  // n2 throttled: its links are slow too, but so are n1's
  const auto r = judge(m, {});
  EXPECT_EQ(r.dropped(), std::vector<std::string>{"n2"});
  EXPECT_NE(r.nodes[1].reason.find("memory copy rate 1.20 GB/s is below 0.5 x the other node (10.00 GB/s)"),
            std::string::npos)
      << r.nodes[1].reason;
  m.local_gbs[1] = 6;  // within the ratio: kept
  EXPECT_TRUE(judge(m, {}).dropped().empty());
}

TEST(NetcheckRule, RatioIsConfigurable) {
  auto m = uniform(2, 300, 10);
  m.local_gbs[1] = 6;
  NetcheckRule strict;
  strict.ratio = 0.8;
  EXPECT_EQ(judge(m, strict).dropped(), std::vector<std::string>{"n2"});
}

TEST(NetcheckRule, AbsoluteFloor) {
  NetcheckRule floor;
  floor.min_link_mbs = 500;
  auto m = uniform(4, 1000, 10);
  slow_links(m, 3, 450);  // within the ratio, below the floor
  EXPECT_EQ(judge(m, floor).dropped(), std::vector<std::string>{"n4"});
  // Two nodes below the floor, alike: no culprit; an error, not a guess.
  auto two = uniform(2, 100, 10);
  const auto r = judge(two, floor);
  EXPECT_TRUE(r.dropped().empty());
  EXPECT_NE(r.error.find("cannot tell which end"), std::string::npos) << r.error;
  // ... unless the local rate names one.
  two.local_gbs[0] = 1;
  const auto r2 = judge(two, floor);
  EXPECT_EQ(r2.dropped(), std::vector<std::string>{"n1"});
  EXPECT_TRUE(r2.error.empty());
  // Every node below the floor: nothing left.
  EXPECT_NE(judge(uniform(3, 100, 10), floor).error.find("every node"), std::string::npos);
}

TEST(NetcheckRule, MissingMeasurementsCountAsZero) {
  auto m = uniform(3, 1000, 10);
  slow_links(m, 0, 0);
  EXPECT_EQ(judge(m, {}).dropped(), std::vector<std::string>{"n1"});
}

TEST(NetcheckRule, ResultLinesRoundTrip) {
  auto m = uniform(2, 300, 10);
  m.local_gbs[1] = 1;
  const auto r = judge(m, {});
  NetcheckReport back;
  for (const auto& line : result_lines(r)) EXPECT_TRUE(parse_result_line(line + "\n", back));
  EXPECT_FALSE(parse_result_line("network check: 2 nodes", back));
  ASSERT_EQ(back.nodes.size(), 2u);
  EXPECT_EQ(back.dropped(), std::vector<std::string>{"n2"});
  EXPECT_EQ(back.nodes[1].reason, r.nodes[1].reason);
  const std::string table = format_report(m, r, {});
  EXPECT_NE(table.find("n1 - n2"), std::string::npos) << table;
  EXPECT_NE(table.find("DROP: memory copy rate"), std::string::npos) << table;
}
