// The straggler rule (runtime/straggler_watch.hpp): lateness against the
// median member, a minority at most, two comparisons in a row, and a
// window that is not comparable when the membership changed in it.
#include "runtime/straggler_watch.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace ringmend {
namespace {

TEST(StragglerRule, TheMemberTheOthersWaitForIsLate) {
  // Rank 2 arrives late: it waits 0.1 s of a 10 s window, the others ~6 s.
  const std::vector<double> waits{6.0, 6.2, 0.1, 5.9}, elapsed{10, 10, 10, 10};
  const auto late = late_members(waits, elapsed, 0.25);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].rank, 2);
  EXPECT_NEAR(late[0].late_share, (6.0 + 5.9) / 2 / 10 - 0.01, 1e-9);
  // The same waits under a fraction above its lateness: nobody.
  EXPECT_TRUE(late_members(waits, elapsed, 0.7).empty());
}

TEST(StragglerRule, EvenWaitsAndSmallJobsFindNobody) {
  EXPECT_TRUE(
      late_members(std::vector<double>{3, 3.1, 2.9, 3}, std::vector<double>{10, 10, 10, 10}, 0.05).empty());
  // Two members: "the others" is one member, nothing to compare with.
  EXPECT_TRUE(late_members(std::vector<double>{9, 0}, std::vector<double>{10, 10}, 0.25).empty());
}

TEST(StragglerRule, AtMostAMinorityTheLatestFirst) {
  // Four ranks, two of them late against the median (the mean of the
  // middle two): only one, a strict minority, is named, the latest.
  const auto late = late_members(std::vector<double>{8, 8, 1, 2}, std::vector<double>(4, 10.0), 0.01);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].rank, 2);
  // Seven ranks, three late: all three, the latest first.
  const auto three =
      late_members(std::vector<double>{8, 8, 8, 8, 1, 2, 0.5}, std::vector<double>(7, 10.0), 0.01);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three[0].rank, 6);
  EXPECT_EQ(three[1].rank, 4);
  EXPECT_EQ(three[2].rank, 5);
}

TEST(StragglerRule, RanksAbsentFromTheComparisonAreLeftOut) {
  // Rank 1 died during the comparison: its slots stayed 0. It is not late,
  // and the median is that of the three that took part.
  const std::vector<double> waits{6, 0, 6, 0.2}, elapsed{10, 0, 10, 10};
  const auto late = late_members(waits, elapsed, 0.25);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].rank, 3);
}

// What the members' summed contributions look like for `waits`.
std::vector<double> summed(std::vector<StragglerWatch>& watches, const std::vector<double>& waits,
                           std::uint64_t epoch) {
  const int n = static_cast<int>(watches.size());
  std::vector<double> sum(1 + 2 * waits.size(), 0.0);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < 10; ++c)
      watches[static_cast<std::size_t>(r)].count(waits[static_cast<std::size_t>(r)] / 10);
    const auto v = watches[static_cast<std::size_t>(r)].contribution(r, n, epoch);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += v[i];
  }
  return sum;
}

TEST(StragglerWatch, TwoComparisonsInARowAndTheSameFindingOnEveryMember) {
  std::vector<StragglerWatch> watches(4, StragglerWatch(StragglerPolicy::Report, 10, 0.25));
  const std::vector<int> members{0, 1, 7, 3};
  // The first window of a process starts with the wire-up: not compared.
  auto sum = summed(watches, {0, 0, 0, 0}, 0);
  EXPECT_NE(sum[0], 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  sum = summed(watches, {0.03, 0.03, 0.0, 0.03}, 0);
  EXPECT_EQ(sum[0], 0);
  for (auto& w : watches) EXPECT_TRUE(w.judge(sum, members).empty());  // once is not enough
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  sum = summed(watches, {0.03, 0.03, 0.0, 0.03}, 0);
  for (auto& w : watches) {
    const auto found = w.judge(sum, members);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].member, 7);
    EXPECT_EQ(found[0].rank, 2);
    EXPECT_FALSE(found[0].again);
  }
  // Still late in the next: found again, and it says so (logged once).
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  sum = summed(watches, {0.03, 0.03, 0.0, 0.03}, 0);
  for (auto& w : watches) {
    const auto found = w.judge(sum, members);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_TRUE(found[0].again);
  }
}

TEST(StragglerWatch, AChangeOfMembershipStartsAgain) {
  std::vector<StragglerWatch> watches(3, StragglerWatch(StragglerPolicy::Release, 10, 0.25));
  const std::vector<int> members{0, 1, 2};
  summed(watches, {0, 0, 0}, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  auto sum = summed(watches, {0.03, 0.0, 0.03}, 0);
  for (auto& w : watches) EXPECT_TRUE(w.judge(sum, members).empty());
  // One member's window saw another epoch (a recovery in it): the sum says
  // "not comparable" on every member, and the count starts again.
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  sum = summed(watches, {0.03, 0.0, 0.03}, 1);
  EXPECT_NE(sum[0], 0);
  for (auto& w : watches) EXPECT_TRUE(w.judge(sum, members).empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  sum = summed(watches, {0.03, 0.0, 0.03}, 1);
  for (auto& w : watches) EXPECT_TRUE(w.judge(sum, members).empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  sum = summed(watches, {0.03, 0.0, 0.03}, 1);
  for (auto& w : watches) EXPECT_EQ(w.judge(sum, members).size(), 1u);
}

// A comparison's summed vector, as the allreduce gives it to every member.
std::vector<double> comparison(const std::vector<double>& waits, double window) {
  std::vector<double> v{0};
  v.insert(v.end(), waits.begin(), waits.end());
  v.insert(v.end(), waits.size(), window);
  return v;
}

TEST(StragglerWatch, TwoWindowsTakenTogether) {
  const std::vector<int> members{0, 1, 2};
  StragglerWatch w(StragglerPolicy::Report, 10, 0.25);
  // Late by 20 % then 40 % of equal windows: 30 % together, found.
  EXPECT_TRUE(w.judge(comparison({5, 3, 5}, 10), members).empty());
  auto found = w.judge(comparison({5, 1, 5}, 10), members);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].member, 1);
  EXPECT_NEAR(found[0].late_share, 0.3, 1e-9);
  // One very late window (a checkpoint) after a punctual one: 45 % together,
  // but under half the fraction in the first: not found.
  StragglerWatch once(StragglerPolicy::Report, 10, 0.25);
  EXPECT_TRUE(once.judge(comparison({5, 4.9, 5}, 10), members).empty());
  EXPECT_TRUE(once.judge(comparison({9, 0, 9}, 10), members).empty());
  // Late by 15 % in each: above half the fraction, below it together.
  StragglerWatch mild(StragglerPolicy::Report, 10, 0.25);
  EXPECT_TRUE(mild.judge(comparison({5, 3.5, 5}, 10), members).empty());
  EXPECT_TRUE(mild.judge(comparison({5, 3.5, 5}, 10), members).empty());
}

TEST(StragglerWatch, DueBeforeTheSameCallOnEveryMember) {
  const StragglerWatch off(StragglerPolicy::Off, 10, 0.25), on(StragglerPolicy::Report, 10, 0.25);
  EXPECT_FALSE(off.due(10));
  EXPECT_TRUE(on.due(10));
  EXPECT_TRUE(on.due(20));
  EXPECT_FALSE(on.due(21));
}

}  // namespace
}  // namespace ringmend
