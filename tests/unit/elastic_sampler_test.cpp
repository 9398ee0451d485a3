// The elastic sampler's accounting, with membership changes played out in
// one process: every member has its own sampler, as in a job; a member that
// dies contributes nothing to the step, a joiner starts from a survivor's
// saved state, and every sample must be counted exactly once per epoch.
// (tests/mpi/elastic_check.cpp plays the same in real jobs, with kills.)
#include "ringmend/elastic_sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

namespace ringmend {
namespace {

// A job of members, each with its sampler, counting what enters the
// results.
struct Job {
  std::uint64_t samples;
  std::uint32_t per_rank;
  std::vector<int> view;  // member id per rank
  std::map<int, ElasticSampler> sampler;
  std::map<int, std::vector<std::uint64_t>> batch;
  std::vector<int> counted;  // per sample, in the current epoch
  std::uint64_t epoch = 0;
  int next_id = 100;

  Job(std::uint64_t n, std::uint32_t b, int size) : samples(n), per_rank(b), counted(n, 0) {
    for (int id = 0; id < size; ++id) {
      view.push_back(id);
      sampler.emplace(id, ElasticSampler(n, b, 7));
    }
  }
  // Every member deals out the step.
  void deal() {
    batch.clear();
    for (std::size_t r = 0; r < view.size(); ++r)
      batch[view[r]] = sampler.at(view[r]).next(static_cast<int>(r), view);
  }
  // A spare takes rank `rank` (a lost member's) with a survivor's state,
  // during the step, and computes its share.
  int join_at(std::size_t rank) {
    const int id = next_id++;
    ElasticSampler s(samples, per_rank);
    s.load(sampler.at(view[0]).save());  // a survivor's, before the spare is placed
    view.insert(view.begin() + static_cast<std::ptrdiff_t>(rank), id);
    sampler.emplace(id, s);
    batch[id] = sampler.at(id).next(static_cast<int>(rank), view);
    return id;
  }
  void lose(int id) {
    view.erase(std::find(view.begin(), view.end(), id));
    sampler.erase(id);
    batch.erase(id);  // its contribution never reaches the result
  }
  // The collective returned: what entered it is counted, then every member
  // completes the step, and all agree on where the epoch stands.
  void complete() {
    std::vector<std::uint64_t> entered;
    for (const auto& [id, ids] : batch)
      for (std::uint64_t s : ids) ++counted[s], entered.push_back(s);
    std::sort(entered.begin(), entered.end());
    for (int id : view) {
      // What complete() says the step consumed is what entered the result.
      auto used = sampler.at(id).complete(view);
      std::sort(used.begin(), used.end());
      EXPECT_EQ(used, entered);
    }
    const ElasticSampler& first = sampler.at(view[0]);
    for (int id : view) {
      EXPECT_EQ(sampler.at(id).epoch(), first.epoch());
      EXPECT_EQ(sampler.at(id).remaining(), first.remaining());
    }
    if (first.epoch() != epoch) {
      for (std::uint64_t s = 0; s < samples; ++s)
        ASSERT_EQ(counted[s], 1) << "sample " << s << ", epoch " << epoch;
      std::fill(counted.begin(), counted.end(), 0);
      epoch = first.epoch();
    }
  }
};

TEST(ElasticSampler, EveryEpochDealsEverySampleOnce) {
  Job job(103, 4, 3);  // 103 samples, 12 a step: the last step is short
  for (int step = 0; step < 30; ++step) {
    job.deal();
    job.complete();
  }
  EXPECT_EQ(job.epoch, 3u);  // 9 steps an epoch
}

TEST(ElasticSampler, SharesAreDisjointAndInTheEpochsOrder) {
  ElasticSampler a(50, 5, 1), b(50, 5, 1);
  const std::vector<int> members{0, 1, 2};
  std::set<std::uint64_t> seen;
  for (int r = 0; r < 3; ++r) {
    const auto share = a.next(r, members);
    EXPECT_EQ(share, b.next(r, members));  // the same seed: the same order
    EXPECT_EQ(share.size(), 5u);
    seen.insert(share.begin(), share.end());
  }
  EXPECT_EQ(seen.size(), 15u);
  ElasticSampler plain(10, 3, 1, false);
  EXPECT_EQ(plain.next(1, std::vector<int>{4, 5}), (std::vector<std::uint64_t>{3, 4, 5}));
}

TEST(ElasticSampler, EpochsHaveDifferentOrders) {
  ElasticSampler s(64, 64, 3);
  const std::vector<int> one{0};
  const auto first = s.next(0, one);
  s.complete(one);
  EXPECT_EQ(s.epoch(), 1u);
  const auto second = s.next(0, one);
  EXPECT_NE(first, second);
  EXPECT_TRUE(std::is_permutation(first.begin(), first.end(), second.begin()));
}

TEST(ElasticSampler, ALostMembersSamplesAreDealtOutAgainFirst) {
  Job job(40, 2, 4);
  job.deal();
  const auto lost_share = job.batch.at(2);
  job.lose(2);
  job.complete();
  job.deal();
  // The survivors deal the lost share out first: rank 0 takes it.
  EXPECT_EQ(job.batch.at(0), lost_share);
  for (int step = 0; step < 40; ++step) {
    job.complete();
    job.deal();
  }
  EXPECT_GE(job.epoch, 2u);
}

TEST(ElasticSampler, AJoinerComputesTheLostPositionsShare) {
  Job job(40, 2, 4);
  job.deal();
  const auto lost_share = job.batch.at(2);
  job.lose(2);
  const int spare = job.join_at(2);
  EXPECT_EQ(job.batch.at(spare), lost_share);
  job.complete();
  EXPECT_EQ(job.sampler.at(0).remaining(), 40u - 8u);  // nothing dealt out again
}

TEST(ElasticSampler, TwoLostOneReplacedGapsCloseUp) {
  Job job(60, 3, 4);
  job.deal();
  const auto share1 = job.batch.at(1), share2 = job.batch.at(2);
  job.lose(1);
  job.lose(2);
  const int spare = job.join_at(1);  // the lowest lost position; member 3 is now rank 2
  EXPECT_EQ(job.batch.at(spare), share1);
  job.complete();
  job.deal();
  EXPECT_EQ(job.batch.at(0), share2);  // member 2's share, again
  for (int step = 0; step < 40; ++step) {
    job.complete();
    job.deal();
  }
}

TEST(ElasticSampler, GrowAndReleaseBetweenSteps) {
  Job job(70, 3, 2);
  for (int step = 0; step < 50; ++step) {
    job.deal();
    job.complete();
    if (step == 4) {  // grow by two: they start from a member's state
      for (int k = 0; k < 2; ++k) {
        const int id = job.next_id++;
        ElasticSampler s(70, 3);
        s.load(job.sampler.at(job.view[0]).save());
        job.view.push_back(id);
        job.sampler.emplace(id, s);
      }
    }
    if (step == 9) {  // release ranks 0 and 3
      const int a = job.view[0], b = job.view[3];
      job.view.erase(
          std::remove_if(job.view.begin(), job.view.end(), [&](int id) { return id == a || id == b; }),
          job.view.end());
      job.sampler.erase(a);
      job.sampler.erase(b);
    }
  }
  EXPECT_GE(job.epoch, 3u);
}

// Random kills, replacements, grows and releases, across many epochs.
TEST(ElasticSampler, RandomChangesCountEverySampleOnce) {
  std::mt19937 rng(12345);
  Job job(97, 2, 5);
  for (int step = 0; step < 2000; ++step) {
    job.deal();
    const int event = static_cast<int>(rng() % 10);
    if (event == 0 && job.view.size() > 1) {  // a member dies during the step, no spare
      job.lose(job.view[rng() % job.view.size()]);
    } else if (event == 1 && job.view.size() > 1) {  // one dies and a spare takes its place
      const std::size_t r = rng() % job.view.size();
      job.lose(job.view[r]);
      job.join_at(r);
    } else if (event == 2 && job.view.size() > 2) {  // two die, one spare
      std::size_t a = rng() % job.view.size(), b = rng() % job.view.size();
      if (a == b) b = (a + 1) % job.view.size();
      const int ia = job.view[a], ib = job.view[b];
      job.lose(ia);
      job.lose(ib);
      job.join_at(std::min(a, b));
    }
    job.complete();
    if (event == 3 && job.view.size() < 8) {  // grow by one, between steps
      const int id = job.next_id++;
      ElasticSampler s(97, 2);
      s.load(job.sampler.at(job.view[0]).save());
      job.view.push_back(id);
      job.sampler.emplace(id, s);
    } else if (event == 4 && job.view.size() > 1) {  // release one, between steps
      const int id = job.view[rng() % job.view.size()];
      job.view.erase(std::find(job.view.begin(), job.view.end(), id));
      job.sampler.erase(id);
    } else if (event == 5 && job.view.size() < 3) {
      // Keep the job from dwindling to one rank.
      const int id = job.next_id++;
      ElasticSampler s(97, 2);
      s.load(job.sampler.at(job.view[0]).save());
      job.view.push_back(id);
      job.sampler.emplace(id, s);
    }
  }
  EXPECT_GT(job.epoch, 20u);
}

TEST(ElasticSampler, BadInputIsAnError) {
  EXPECT_THROW(ElasticSampler(0, 1), Error);
  EXPECT_THROW(ElasticSampler(10, 0), Error);
  ElasticSampler s(10, 2);
  EXPECT_THROW(s.complete(std::vector<int>{0}), Error);  // no step in flight
  EXPECT_THROW(s.next(2, std::vector<int>{0, 1}), Error);
  std::vector<std::byte> junk(40, std::byte{1});
  EXPECT_THROW(s.load(junk), Error);
  auto saved = s.save();
  saved.resize(saved.size() - 8);
  EXPECT_THROW(s.load(saved), Error);
}

}  // namespace
}  // namespace ringmend
