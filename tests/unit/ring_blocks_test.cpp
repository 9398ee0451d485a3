// The block rings (coll/ring_allgather.hpp, coll/ring_reduce_scatter.hpp)
// and the pairwise alltoall (coll/pairwise_alltoall.hpp) with real processes: forked ranks on a shared-memory
// channel check every element, with the slots in and out of ring order; the bytes each rank sends are counted
// and must be (n-1)/n of the data, the least any allgather or reduce-scatter can move; a rank on another call
// is a Mismatch; a SIGKILLed rank interrupts the others.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "coll/pairwise_alltoall.hpp"
#include "coll/ring_allgather.hpp"
#include "coll/ring_reduce_scatter.hpp"
#include "tests/unit/forked_channel.hpp"

namespace ringmend::transport {
namespace {

using namespace forked;

// Counts the payload bytes a rank sends (the collective's data, not its
// headers) on the way to the channel underneath.
class CountingChannel final : public Channel {
 public:
  explicit CountingChannel(Channel& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  Op send(int peer, std::uint32_t tag, std::span<const Piece> pieces) override {
    if (tag == coll::kTagData)
      for (const Piece& p : pieces) data_bytes_sent += p.bytes;
    return inner_.send(peer, tag, pieces);
  }
  Op recv(int peer, std::uint32_t tag, std::span<const Piece> pieces) override {
    return inner_.recv(peer, tag, pieces);
  }
  OpState test(Op op, std::size_t* bytes) override { return inner_.test(op, bytes); }
  bool progress() override { return inner_.progress(); }
  bool peer_failed() const override { return inner_.peer_failed(); }
  void abandon() override { inner_.abandon(); }
  std::string failure_reason() const override { return inner_.failure_reason(); }
  std::size_t data_bytes_sent = 0;

 private:
  Channel& inner_;
};

// Element i of rank r's block j: small integers, exact in double.
double value(int r, std::size_t j, std::size_t i) { return static_cast<double>(r * 1000 + j * 37 + i % 101); }

struct BlockRun {
  std::size_t count = 1000;     // elements per block
  bool reversed_ring = false;   // ring order other than rank order
  bool shuffled_slots = false;  // slots other than ranks
  std::uint64_t seq = 1;
};

std::vector<int> ring_of(int ranks, bool reversed) {
  std::vector<int> ring(static_cast<std::size_t>(ranks));
  std::iota(ring.begin(), ring.end(), 0);
  if (reversed) std::reverse(ring.begin(), ring.end());
  return ring;
}

std::vector<int> slots_of(int ranks, bool shuffled) {
  std::vector<int> slots(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) slots[static_cast<std::size_t>(r)] = shuffled ? (r + 1) % ranks : r;
  return slots;
}

int run_allgather(int r, int ranks, ShmChannel& shm, TestWait& wait, const BlockRun& run) {
  CountingChannel ch(shm);
  const std::vector<int> slots = slots_of(ranks, run.shuffled_slots);
  std::vector<double> in(run.count), out(run.count * static_cast<std::size_t>(ranks), -1);
  for (std::size_t i = 0; i < run.count; ++i) in[i] = value(r, 0, i);
  coll::AllgatherArgs args{in.data(), out.data(), run.count, DataType::Float64, run.seq, slots.data()};
  coll::ring_allgather(ch, ring_of(ranks, run.reversed_ring), args, wait);
  for (int q = 0; q < ranks; ++q)
    for (std::size_t i = 0; i < run.count; ++i)
      if (out[static_cast<std::size_t>(slots[static_cast<std::size_t>(q)]) * run.count + i] != value(q, 0, i))
        return kWrong;
  // (n-1)/n of the output: n-1 blocks.
  return ch.data_bytes_sent == static_cast<std::size_t>(ranks - 1) * run.count * sizeof(double) ? kOk
                                                                                                : kOther;
}

int run_reduce_scatter(int r, int ranks, ShmChannel& shm, TestWait& wait, const BlockRun& run) {
  CountingChannel ch(shm);
  const std::vector<int> slots = slots_of(ranks, run.shuffled_slots);
  const std::size_t n = static_cast<std::size_t>(ranks);
  std::vector<double> in(run.count * n), out(run.count, -1), work(run.count * n);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < run.count; ++i) in[j * run.count + i] = value(r, j, i);
  coll::ReduceScatterArgs args{in.data(),     out.data(), run.count,    DataType::Float64,
                               ReduceOp::Sum, run.seq,    slots.data(), work.data()};
  coll::ring_reduce_scatter(ch, ring_of(ranks, run.reversed_ring), args, wait);
  const std::size_t mine = static_cast<std::size_t>(slots[static_cast<std::size_t>(r)]);
  for (std::size_t i = 0; i < run.count; ++i) {
    double want = 0;
    for (int q = 0; q < ranks; ++q) want += value(q, mine, i);
    if (out[i] != want) return kWrong;
  }
  // (n-1)/n of the input: n-1 blocks.
  return ch.data_bytes_sent == (n - 1) * run.count * sizeof(double) ? kOk : kOther;
}

// Uneven blocks: slot s holds uneven_count(s) elements (some none); every
// rank sends the output less its right neighbour's block.
std::size_t uneven_count(std::size_t slot, std::size_t base) { return slot % 3 == 1 ? 0 : base + slot * 77; }

int run_allgatherv(int r, int ranks, ShmChannel& shm, TestWait& wait, const BlockRun& run) {
  CountingChannel ch(shm);
  const std::vector<int> slots = slots_of(ranks, run.shuffled_slots);
  const auto n = static_cast<std::size_t>(ranks);
  std::vector<std::size_t> counts(n), offsets(n);
  std::size_t total = 0;
  for (std::size_t s = 0; s < n; ++s) {
    counts[s] = uneven_count(s, run.count);
    offsets[s] = total;
    total += counts[s];
  }
  const auto mine = static_cast<std::size_t>(slots[static_cast<std::size_t>(r)]);
  std::vector<double> in(counts[mine]), out(total, -1);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = value(r, 0, i);
  coll::AllgatherArgs args{in.data(), out.data(),   total,         DataType::Float64,
                           run.seq,   slots.data(), counts.data(), offsets.data()};
  coll::ring_allgather(ch, ring_of(ranks, run.reversed_ring), args, wait);
  for (int q = 0; q < ranks; ++q) {
    const auto s = static_cast<std::size_t>(slots[static_cast<std::size_t>(q)]);
    for (std::size_t i = 0; i < counts[s]; ++i)
      if (out[offsets[s] + i] != value(q, 0, i)) return kWrong;
  }
  // Every block but the one of its right neighbour, which has it already
  // (it receives every block but its own).
  const std::vector<int> ring = ring_of(ranks, run.reversed_ring);
  const auto p = static_cast<std::size_t>(std::find(ring.begin(), ring.end(), r) - ring.begin());
  const int right = ring[(p + 1) % n];
  const std::size_t skipped =
      ranks == 1 ? counts[mine] : counts[static_cast<std::size_t>(slots[static_cast<std::size_t>(right)])];
  return ch.data_bytes_sent == (total - skipped) * sizeof(double) ? kOk : kOther;
}

// Rank r sends pair_count(r, s) elements to rank s (some none).
std::size_t pair_count(std::size_t from, std::size_t to, std::size_t base) {
  return (from + to) % 3 == 2 ? 0 : base + from * 50 + to * 7;
}

// `expect_from_zero`: what rank 1 expects from rank 0 (pair_count otherwise).
int run_alltoall(int r, int ranks, ShmChannel& shm, TestWait& wait, const BlockRun& run,
                 std::size_t expect_from_zero = 0) {
  CountingChannel ch(shm);
  const std::vector<int> slots = slots_of(ranks, run.shuffled_slots);
  const auto n = static_cast<std::size_t>(ranks);
  const auto me = static_cast<std::size_t>(slots[static_cast<std::size_t>(r)]);
  // Counts by slot: channel rank q is slot slots[q].
  std::vector<std::size_t> send(n), recv(n), send_at(n), recv_at(n);
  std::size_t sent = 0, received = 0;
  for (std::size_t s = 0; s < n; ++s) {
    send[s] = pair_count(me, s, run.count);
    recv[s] = pair_count(s, me, run.count);
    if (expect_from_zero && me == 1 && s == 0) recv[s] = expect_from_zero;
    send_at[s] = sent;
    recv_at[s] = received;
    sent += send[s];
    received += recv[s];
  }
  std::vector<double> in(sent), out(received, -1);
  for (std::size_t s = 0; s < n; ++s)
    for (std::size_t i = 0; i < send[s]; ++i) in[send_at[s] + i] = value(static_cast<int>(me), s, i);
  coll::AlltoallArgs args{in.data(),      out.data(),  DataType::Float64, run.seq,     send.data(),
                          send_at.data(), recv.data(), recv_at.data(),    slots.data()};
  coll::pairwise_alltoall(ch, args, wait);
  for (std::size_t s = 0; s < n; ++s)
    for (std::size_t i = 0; i < recv[s]; ++i)
      if (out[recv_at[s] + i] != value(static_cast<int>(s), me, i)) return kWrong;
  // Exactly its own blocks to the others, nothing more.
  return ch.data_bytes_sent == (sent - send[me]) * sizeof(double) ? kOk : kOther;
}

void expect_all(const std::vector<int>& codes, int want) {
  for (std::size_t r = 0; r < codes.size(); ++r) EXPECT_EQ(codes[r], want) << "rank " << r;
  EXPECT_TRUE(dev_shm_clean());
}

class BlockRingRanks : public ::testing::TestWithParam<int> {};

TEST_P(BlockRingRanks, AllgatherIsExactAndSendsNMinusOneBlocks) {
  const int ranks = GetParam();
  for (const bool odd_order : {false, true}) {
    BlockRun run;
    run.reversed_ring = run.shuffled_slots = odd_order;
    expect_all(run_ranks(ranks, [&](int r, ShmChannel& ch,
                                    TestWait& w) { return run_allgather(r, ranks, ch, w, run); }),
               kOk);
  }
}

TEST_P(BlockRingRanks, ReduceScatterIsExactAndSendsNMinusOneBlocks) {
  const int ranks = GetParam();
  for (const bool odd_order : {false, true}) {
    BlockRun run;
    run.reversed_ring = run.shuffled_slots = odd_order;
    expect_all(run_ranks(ranks, [&](int r, ShmChannel& ch,
                                    TestWait& w) { return run_reduce_scatter(r, ranks, ch, w, run); }),
               kOk);
  }
}

TEST_P(BlockRingRanks, UnevenAllgatherIsExactAndSendsTheOthersBlocks) {
  const int ranks = GetParam();
  for (const bool odd_order : {false, true}) {
    BlockRun run;
    run.reversed_ring = run.shuffled_slots = odd_order;
    expect_all(run_ranks(ranks, [&](int r, ShmChannel& ch,
                                    TestWait& w) { return run_allgatherv(r, ranks, ch, w, run); }),
               kOk);
  }
}

TEST_P(BlockRingRanks, AlltoallIsExactAndSendsOnlyItsBlocks) {
  const int ranks = GetParam();
  for (const bool shuffled : {false, true}) {
    BlockRun run;
    run.shuffled_slots = shuffled;
    expect_all(run_ranks(ranks, [&](int r, ShmChannel& ch,
                                    TestWait& w) { return run_alltoall(r, ranks, ch, w, run); }),
               kOk);
  }
}

INSTANTIATE_TEST_SUITE_P(ShmBlockRings, BlockRingRanks, ::testing::Values(1, 2, 3, 4, 5));

// Blocks larger than the channel's slots: sent in several pieces underneath.
TEST(ShmBlockRings, LargeBlocks) {
  BlockRun run;
  run.count = 300000;
  expect_all(
      run_ranks(3, [&](int r, ShmChannel& ch, TestWait& w) { return run_allgather(r, 3, ch, w, run); }), kOk);
  expect_all(
      run_ranks(3, [&](int r, ShmChannel& ch, TestWait& w) { return run_reduce_scatter(r, 3, ch, w, run); }),
      kOk);
}

// Block sizes that differ across ranks: a Mismatch on the ranks that see it
// (their neighbour's header names the other count), never a hang.
TEST(ShmBlockRings, DifferentCountsAreAMismatch) {
  const auto codes = run_ranks(2, [](int r, ShmChannel& ch, TestWait& w) {
    BlockRun run;
    run.count = r == 0 ? 1000 : 1001;
    return run_reduce_scatter(r, 2, ch, w, run);
  });
  expect_all(codes, kMismatch);
}

TEST(ShmBlockRings, LargeUnevenBlocksAndAlltoall) {
  BlockRun run;
  run.count = 200000;
  expect_all(
      run_ranks(3, [&](int r, ShmChannel& ch, TestWait& w) { return run_allgatherv(r, 3, ch, w, run); }),
      kOk);
  expect_all(run_ranks(3, [&](int r, ShmChannel& ch, TestWait& w) { return run_alltoall(r, 3, ch, w, run); }),
             kOk);
}

// An uneven allgather whose ranks disagree on a block's size: a Mismatch
// on the ranks that see it, never a hang.
TEST(ShmBlockRings, UnevenCountsThatDifferAreAMismatch) {
  const auto codes = run_ranks(3, [](int r, ShmChannel& ch, TestWait& w) {
    BlockRun run;
    run.count = r == 2 ? 1001 : 1000;  // its slot 0 and 2 sizes differ from the others'
    return run_allgatherv(r, 3, ch, w, run);
  });
  for (int c : codes) EXPECT_TRUE(c == kMismatch || c == kInterrupted) << c;
  EXPECT_NE(std::count(codes.begin(), codes.end(), kMismatch), 0);
}

// Rank 1 expects more from rank 0 than rank 0 sends it: the pair's header
// says so before any data moves; the others may finish or be interrupted.
TEST(ShmBlockRings, AlltoallPairThatDisagreesIsAMismatch) {
  const auto codes = run_ranks(3, [](int r, ShmChannel& ch, TestWait& w) {
    BlockRun run;
    return run_alltoall(r, 3, ch, w, run, 4321);
  });
  EXPECT_EQ(codes[1], kMismatch);
}

// SIGKILL of one rank while blocks go round: the others are interrupted.
TEST(ShmBlockRings, KilledRankInterruptsTheOthers) {
  const auto codes = run_ranks(3, [](int r, ShmChannel& ch, TestWait& w) {
    if (r == 1) ::kill(::getpid(), SIGKILL);
    BlockRun run;
    run.count = 400000;
    return run_allgather(r, 3, ch, w, run);
  });
  EXPECT_EQ(codes[1], 128 + SIGKILL);
  EXPECT_EQ(codes[0], kInterrupted);
  EXPECT_EQ(codes[2], kInterrupted);
  EXPECT_TRUE(dev_shm_clean());
}

TEST(ShmBlockRings, KilledRankInterruptsAnAlltoall) {
  const auto codes = run_ranks(3, [](int r, ShmChannel& ch, TestWait& w) {
    if (r == 2) ::kill(::getpid(), SIGKILL);
    BlockRun run;
    run.count = 300000;
    return run_alltoall(r, 3, ch, w, run);
  });
  EXPECT_EQ(codes[2], 128 + SIGKILL);
  EXPECT_EQ(codes[0], kInterrupted);
  EXPECT_EQ(codes[1], kInterrupted);
  EXPECT_TRUE(dev_shm_clean());
}

}  // namespace
}  // namespace ringmend::transport
