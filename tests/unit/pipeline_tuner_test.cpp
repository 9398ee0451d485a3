// PipelineTuner: which shapes it tries, that it keeps the fastest per size
// class and node size, and that a pinned or multi-node pipeline is fixed.
#include "coll/pipeline_tuner.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "ringmend/core/sizes.hpp"

namespace ringmend::coll {
namespace {

constexpr PipelineGeometry kFixed{256 * KiB, 4};

// Feeds the tuner `trials` rounds of calls of `bytes`, timing each shape
// with `seconds_of(shape)`.
template <class Time>
void measure(PipelineTuner& t, std::size_t bytes, int ranks, Time seconds_of) {
  for (int i = 0; i < 100 && !t.chosen(bytes, ranks); ++i) {
    const PipelineGeometry g = t.propose(bytes, ranks, false);
    t.record(bytes, ranks, false, g, seconds_of(g));
  }
}

TEST(PipelineTuner, CandidatesFitTheBuffersAndStopAtTheMessage) {
  PipelineTuner t(2 * MiB, kFixed, true);
  const auto big = t.candidates(64 * MiB);
  ASSERT_EQ(big.size(), 5u);  // 64K .. 1M; 2M would leave one buffer
  for (const PipelineGeometry& g : big) {
    EXPECT_LE(g.chunk_bytes * g.depth, 2 * MiB);
    EXPECT_GE(g.depth, 2u);
    EXPECT_LE(g.depth, PipelineTuner::kMaxDepth);
  }
  EXPECT_EQ(big.back(), (PipelineGeometry{1 * MiB, 2}));
  // A 300 KiB message: 64K, 128K, 256K, and 512K (one chunk); no larger.
  EXPECT_EQ(t.candidates(300 * KiB).size(), 4u);
  // Buffers too small for any two chunks: the fixed shape.
  PipelineTuner small(64 * KiB, {16 * KiB, 4}, true);
  EXPECT_EQ(small.candidates(1 * MiB), std::vector<PipelineGeometry>{(PipelineGeometry{16 * KiB, 4})});
}

TEST(PipelineTuner, KeepsTheFastestShapePerSizeClass) {
  PipelineTuner t(2 * MiB, kFixed, true);
  // 512 KiB chunks are fastest at 4 MiB; 128 KiB ones at 1 MiB.
  measure(t, 4 * MiB, 2, [](PipelineGeometry g) { return g.chunk_bytes == 512 * KiB ? 1.0 : 2.0; });
  measure(t, 1 * MiB, 2, [](PipelineGeometry g) { return g.chunk_bytes == 128 * KiB ? 1.0 : 2.0; });
  ASSERT_NE(t.chosen(4 * MiB, 2), nullptr);
  EXPECT_EQ(t.chosen(4 * MiB, 2)->chunk_bytes, 512 * KiB);
  EXPECT_EQ(t.propose(4 * MiB + 12345, 2, false).chunk_bytes, 512 * KiB);  // same class
  EXPECT_EQ(t.propose(1 * MiB, 2, false).chunk_bytes, 128 * KiB);
  // Another node size is another class, still measuring.
  EXPECT_EQ(t.chosen(4 * MiB, 3), nullptr);
}

TEST(PipelineTuner, OneSlowTrialDoesNotDecide) {
  PipelineTuner t(2 * MiB, kFixed, true);
  int calls = 0;
  // 1 MiB chunks are fastest, except for one preempted call.
  measure(t, 8 * MiB, 2, [&](PipelineGeometry g) {
    ++calls;
    if (g.chunk_bytes == 1 * MiB) return calls < 10 ? 50.0 : 1.0;
    return 2.0;
  });
  ASSERT_NE(t.chosen(8 * MiB, 2), nullptr);
  EXPECT_EQ(t.chosen(8 * MiB, 2)->chunk_bytes, 1 * MiB);
  EXPECT_EQ(calls, 5 * PipelineTuner::kTrials);
}

TEST(PipelineTuner, PinnedOrAcrossNodesTheShapeIsFixed) {
  PipelineTuner pinned(2 * MiB, kFixed, false);
  EXPECT_EQ(pinned.propose(4 * MiB, 2, false), kFixed);
  pinned.record(4 * MiB, 2, false, kFixed, 1.0);
  EXPECT_EQ(pinned.chosen(4 * MiB, 2), nullptr);
  PipelineTuner tuned(2 * MiB, kFixed, true);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(tuned.propose(4 * MiB, 2, true), kFixed);
  EXPECT_THROW(PipelineTuner(512 * KiB, {256 * KiB, 4}, true), std::invalid_argument);
}

}  // namespace
}  // namespace ringmend::coll
