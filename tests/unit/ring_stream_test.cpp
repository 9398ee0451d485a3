// RingStream with real processes: forked ranks on a shared-memory channel
// run many ring allreduces in flight at once and check every element; a
// call that differs across ranks is a Mismatch; a SIGKILLed rank interrupts
// its neighbours.
#include "coll/ring_stream.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "tests/unit/forked_channel.hpp"

namespace ringmend::transport {
namespace {

using namespace forked;
using coll::AllreduceArgs;
using coll::RingStream;

// Element i of piece p from rank r: small integers, exact in float.
float value(int r, std::size_t p, std::size_t i) {
  return static_cast<float>((r + 1) * 3 + (p * 7 + i) % 13);
}

struct StreamRun {
  std::vector<std::size_t> counts;  // elements per piece (0 allowed)
  std::size_t in_flight = 4;
  std::uint64_t seq = 1;
};

// Runs every piece through the stream, starting new ones as soon as there
// is room, and checks each output against the sum over `ranks`.
int run_stream(int r, int ranks, ShmChannel& ch, TestWait& wait, const StreamRun& run) {
  std::vector<int> ring(static_cast<std::size_t>(ranks));
  std::iota(ring.begin(), ring.end(), 0);
  const std::size_t total = std::accumulate(run.counts.begin(), run.counts.end(), std::size_t{0});
  AllreduceArgs call{nullptr, nullptr, total, DataType::Float32, ReduceOp::Sum, run.seq};
  std::vector<std::vector<float>> in(run.counts.size()), out(run.counts.size());
  for (std::size_t p = 0; p < run.counts.size(); ++p) {
    in[p].resize(run.counts[p]);
    out[p].assign(run.counts[p], -1.0f);
    for (std::size_t i = 0; i < in[p].size(); ++i) in[p][i] = value(r, p, i);
  }
  RingStream stream(ch, ring, call, run.in_flight);
  std::size_t next = 0;
  while (stream.finished() < run.counts.size()) {
    while (next < run.counts.size() && !stream.full()) {
      stream.start(in[next].data(), out[next].data(), run.counts[next]);
      ++next;
    }
    if (!stream.advance()) wait.check();
    if (stream.finished() > next) return kWrong;  // finished before started
  }
  stream.finish(wait);
  for (std::size_t p = 0; p < run.counts.size(); ++p)
    for (std::size_t i = 0; i < out[p].size(); ++i) {
      float want = 0;
      for (int q = 0; q < ranks; ++q) want += value(q, p, i);
      if (out[p][i] != want) return kWrong;
    }
  return kOk;
}

void expect_all(const std::vector<int>& codes, int want) {
  for (std::size_t r = 0; r < codes.size(); ++r) EXPECT_EQ(codes[r], want) << "rank " << r;
  EXPECT_TRUE(dev_shm_clean());
}

class RingStreamRanks : public ::testing::TestWithParam<int> {};

// Pieces of every awkward size (empty, shorter than the ring, odd), more of
// them than fit in flight.
TEST_P(RingStreamRanks, EveryPieceIsReducedEverywhere) {
  const int ranks = GetParam();
  StreamRun run;
  run.counts = {0, 1, 2, 3, 5, 1000, 4096, 33333, 7, 0, 65537, 12, 100000, 3, 1, 250000};
  expect_all(run_ranks(ranks, [&](int r, ShmChannel& ch,
                                  TestWait& wait) { return run_stream(r, ranks, ch, wait, run); }),
             kOk);
}

INSTANTIATE_TEST_SUITE_P(ShmRingStream, RingStreamRanks, ::testing::Values(2, 3, 4));

// One piece at a time must work too (the tags then never differ).
TEST(ShmRingStream, OnePieceInFlight) {
  StreamRun run;
  run.counts = {10, 20000, 3, 70000};
  run.in_flight = 1;
  expect_all(
      run_ranks(3, [&](int r, ShmChannel& ch, TestWait& wait) { return run_stream(r, 3, ch, wait, run); }),
      kOk);
}

// A rank on another collective: its neighbours' header check catches it.
TEST(ShmRingStream, DifferentCallIsAMismatch) {
  const auto codes = run_ranks(2, [](int r, ShmChannel& ch, TestWait& wait) {
    StreamRun run;
    run.counts = {1000, 1000};
    run.seq = r == 0 ? 5 : 6;
    return run_stream(r, 2, ch, wait, run);
  });
  expect_all(codes, kMismatch);
}

// SIGKILL of one rank while pieces are in flight: the others are
// interrupted (not left waiting for the deadline).
TEST(ShmRingStream, KilledRankInterruptsTheOthers) {
  const auto codes = run_ranks(3, [](int r, ShmChannel& ch, TestWait& wait) {
    if (r == 1) {
      ::usleep(20 * 1000);  // let the others post their first pieces
      ::kill(::getpid(), SIGKILL);
    }
    StreamRun run;
    run.counts = {200000, 200000, 200000};
    return run_stream(r, 3, ch, wait, run);
  });
  EXPECT_EQ(codes[1], 128 + SIGKILL);
  EXPECT_EQ(codes[0], kInterrupted);
  EXPECT_EQ(codes[2], kInterrupted);
  EXPECT_TRUE(dev_shm_clean());
}

}  // namespace
}  // namespace ringmend::transport
