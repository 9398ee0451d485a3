// ShmChannel with real processes: forked ranks on one segment exchange
// checked messages (fragmented, in pieces, out of tag order, many to one,
// truncated), and a SIGKILLed peer ends the wait for its message (no MPI).
#include "transport/shm_channel.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/forked_channel.hpp"
#include "transport/progress.hpp"

namespace ringmend::transport {
namespace {

using namespace forked;

const std::size_t kSlot = Settings{}.shm_p2p_slot_bytes;  // the layout every channel uses

// Content that differs at every offset, per message (seed).
std::byte pattern(std::size_t i, unsigned seed) {
  const std::uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
  return static_cast<std::byte>(x >> 56);
}

std::vector<std::byte> message(std::size_t bytes, unsigned seed) {
  std::vector<std::byte> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = pattern(i, seed);
  return v;
}

bool is_message(const std::byte* p, std::size_t bytes, unsigned seed) {
  for (std::size_t i = 0; i < bytes; ++i)
    if (p[i] != pattern(i, seed)) return false;
  return true;
}

Piece piece(std::vector<std::byte>& v, std::size_t from = 0, std::size_t n = SIZE_MAX) {
  return {v.data() + from, std::min(n, v.size() - from)};
}

Channel::Op send(ShmChannel& ch, int peer, std::uint32_t tag, std::vector<std::byte>& v) {
  const Piece p = piece(v);
  return ch.send(peer, tag, std::span<const Piece>(&p, 1));
}

Channel::Op recv(ShmChannel& ch, int peer, std::uint32_t tag, std::vector<std::byte>& v) {
  const Piece p = piece(v);
  return ch.recv(peer, tag, std::span<const Piece>(&p, 1));
}

// Waits for a receive; kOk when it brought `want` bytes of message `seed`.
int check_recv(ShmChannel& ch, Channel::Op op, TestWait& wait, const std::vector<std::byte>& buf,
               std::size_t want, unsigned seed) {
  std::size_t got = SIZE_MAX;
  if (wait_for(ch, op, wait, &got) != OpState::Done || got != want) return kWrong;
  return is_message(buf.data(), want, seed) ? kOk : kWrong;
}

void expect_all(const std::vector<int>& codes, int want) {
  for (std::size_t r = 0; r < codes.size(); ++r) EXPECT_EQ(codes[r], want) << "rank " << r;
  EXPECT_TRUE(dev_shm_clean());
}

class ShmChannelRoundTrip : public ::testing::TestWithParam<std::size_t> {};

// Rank 0 sends, rank 1 checks and answers with other content, rank 0 checks.
TEST_P(ShmChannelRoundTrip, ContentSurvivesBothWays) {
  const std::size_t bytes = GetParam();
  expect_all(run_ranks(2,
                       [bytes](int r, ShmChannel& ch, TestWait& wait) -> int {
                         const unsigned mine = 10 + static_cast<unsigned>(r),
                                        theirs = 11 - static_cast<unsigned>(r);
                         std::vector<std::byte> out = message(bytes, mine), in(bytes + 64);
                         if (r == 1) {
                           if (int c = check_recv(ch, recv(ch, 0, 5, in), wait, in, bytes, theirs)) return c;
                         }
                         if (wait_for(ch, send(ch, 1 - r, 5, out), wait) != OpState::Done) return kWrong;
                         if (r == 0) return check_recv(ch, recv(ch, 1, 5, in), wait, in, bytes, theirs);
                         return kOk;
                       }),
             kOk);
}

// Named ShmChannel/... so that the sanitizer run's filter (^Shm) takes them.
INSTANTIATE_TEST_SUITE_P(ShmChannel, ShmChannelRoundTrip,
                         ::testing::Values(std::size_t{0}, std::size_t{1}, std::size_t{7}, kSlot - 1, kSlot,
                                           kSlot + 1, (std::size_t{1} << 20) + 3, std::size_t{64} << 20),
                         [](const auto& p) { return "bytes_" + std::to_string(p.param); });

// Many messages of one tag, sent before the receiver posts anything (the
// ring fills, the rest waits in the sender's queue): they arrive in order.
TEST(ShmChannel, MessagesArriveInSendingOrder) {
  constexpr int kCount = 24;
  auto size_of = [](int i) { return static_cast<std::size_t>(i) * 37 * 1024 + static_cast<std::size_t>(i); };
  expect_all(
      run_ranks(2,
                [&](int r, ShmChannel& ch, TestWait& wait) -> int {
                  std::vector<std::vector<std::byte>> bufs;
                  std::vector<Channel::Op> ops;
                  for (int i = 0; i < kCount; ++i) {
                    bufs.push_back(r == 0 ? message(size_of(i), static_cast<unsigned>(i))
                                          : std::vector<std::byte>(size_of(i)));
                  }
                  if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
                  for (int i = 0; i < kCount; ++i)
                    ops.push_back(r == 0 ? send(ch, 1, 9, bufs[static_cast<std::size_t>(i)])
                                         : recv(ch, 0, 9, bufs[static_cast<std::size_t>(i)]));
                  for (int i = 0; i < kCount; ++i) {
                    const auto k = static_cast<std::size_t>(i);
                    if (r == 0 && wait_for(ch, ops[k], wait) != OpState::Done) return kWrong;
                    if (r == 1 && check_recv(ch, ops[k], wait, bufs[k], size_of(i), static_cast<unsigned>(i)))
                      return kWrong;
                  }
                  return kOk;
                }),
      kOk);
}

// Two pieces (a 13-byte header and a payload) received as one piece; one
// piece received into two, split inside a fragment.
TEST(ShmChannel, PiecesAreConcatenated) {
  constexpr std::size_t kBytes = 3 * kSlot + 101, kSplit = 13;
  expect_all(run_ranks(2,
                       [](int r, ShmChannel& ch, TestWait& wait) -> int {
                         if (r == 0) {
                           std::vector<std::byte> first = message(kBytes, 1), second = message(kBytes, 2);
                           const Piece two[] = {piece(first, 0, kSplit), piece(first, kSplit)};
                           Channel::Op ops[] = {ch.send(1, 1, two), send(ch, 1, 2, second)};
                           for (Channel::Op op : ops)
                             if (wait_for(ch, op, wait) != OpState::Done) return kWrong;
                           return kOk;
                         }
                         std::vector<std::byte> one(kBytes), split(kBytes + 10);
                         if (int c = check_recv(ch, recv(ch, 0, 1, one), wait, one, kBytes, 1)) return c;
                         const Piece two[] = {piece(split, 0, kSplit + kSlot), piece(split, kSplit + kSlot)};
                         std::size_t got = 0;
                         if (wait_for(ch, ch.recv(0, 2, two), wait, &got) != OpState::Done || got != kBytes)
                           return kWrong;
                         return is_message(split.data(), kBytes, 2) ? kOk : kWrong;
                       }),
             kOk);
}

// Tags 1, 2 sent; 2 received first (1 goes to the unexpected buffer on
// the way), then 1. Then tags 4, 5, 6 all buffered before any receive,
// received as 5, 6, 4. Last a message only partly buffered when its receive
// is posted (the rest goes straight to the receive).
TEST(ShmChannel, TagsMatchOutOfOrder) {
  auto size_of = [](std::uint32_t tag) {
    const std::size_t sizes[] = {0, 2 * kSlot + 5, 3000, 4 * (std::size_t{1} << 20) + 1, kSlot + 9, 17, 0};
    return sizes[tag];
  };
  expect_all(run_ranks(2,
                       [&](int r, ShmChannel& ch, TestWait& wait) -> int {
                         const std::uint32_t order[] = {1, 2, 4, 5, 6, 3};
                         if (r == 0) {
                           std::vector<std::vector<std::byte>> bufs;
                           std::vector<Channel::Op> ops;
                           for (std::uint32_t tag : order) {
                             bufs.push_back(message(size_of(tag), tag));
                             ops.push_back(send(ch, 1, tag, bufs.back()));
                           }
                           for (Channel::Op op : ops)
                             if (wait_for(ch, op, wait) != OpState::Done) return kWrong;
                           return kOk;
                         }
                         auto receive = [&](std::uint32_t tag) {
                           std::vector<std::byte> buf(size_of(tag));
                           return check_recv(ch, recv(ch, 0, tag, buf), wait, buf, buf.size(), tag);
                         };
                         std::vector<std::byte> b(size_of(2));
                         Channel::Op ob = recv(ch, 0, 2, b);
                         if (int code = check_recv(ch, ob, wait, b, b.size(), 2)) return code;
                         if (int code = receive(1)) return code;
                         // Let the sender fill the ring; buffer 4, 5, 6 and a part of 3.
                         std::this_thread::sleep_for(std::chrono::milliseconds(50));
                         ch.progress();
                         for (std::uint32_t tag : {5u, 6u, 4u, 3u})
                           if (int code = receive(tag)) return code;
                         return kOk;
                       }),
             kOk);
}

// Ranks 1..3 each send three messages to rank 0 at once.
TEST(ShmChannel, ManySendersToOneReceiver) {
  constexpr int kRanks = 4;
  auto size_of = [](int src, int i) {
    const std::size_t sizes[] = {1, 300 * 1024 + 7, 2 * (std::size_t{1} << 20) + 11};
    return sizes[i] + static_cast<std::size_t>(src);
  };
  auto seed = [](int src, int i) { return static_cast<unsigned>(src * 10 + i); };
  expect_all(
      run_ranks(kRanks,
                [&](int r, ShmChannel& ch, TestWait& wait) -> int {
                  std::vector<std::vector<std::byte>> bufs;
                  std::vector<Channel::Op> ops;
                  for (int src = 1; src < kRanks; ++src) {
                    if (r != 0 && r != src) continue;
                    for (int i = 0; i < 3; ++i) {
                      bufs.push_back(r == 0 ? std::vector<std::byte>(size_of(src, i))
                                            : message(size_of(src, i), seed(src, i)));
                      ops.push_back(r == 0 ? recv(ch, src, 7, bufs.back()) : send(ch, 0, 7, bufs.back()));
                    }
                  }
                  std::size_t k = 0;
                  for (int src = 1; src < kRanks; ++src) {
                    if (r != 0 && r != src) continue;
                    for (int i = 0; i < 3; ++i, ++k) {
                      if (r != 0 && wait_for(ch, ops[k], wait) != OpState::Done) return kWrong;
                      if (r == 0 && check_recv(ch, ops[k], wait, bufs[k], size_of(src, i), seed(src, i)))
                        return kWrong;
                    }
                  }
                  return kOk;
                }),
      kOk);
}

// Longer than the receive: Truncated, whether it arrived before the receive
// (buffered) or after (streamed); the channel goes on working.
TEST(ShmChannel, LongerMessageIsTruncated) {
  constexpr std::size_t kEarly = 1000, kLate = 12 * kSlot, kFine = kSlot + 3;
  expect_all(run_ranks(2,
                       [](int r, ShmChannel& ch, TestWait& wait) -> int {
                         std::vector<std::byte> early = message(kEarly, 1), late = message(kLate, 2),
                                                fine = message(kFine, 3), go;
                         if (r == 0) {
                           if (wait_for(ch, send(ch, 1, 4, early), wait) != OpState::Done) return kWrong;
                           if (wait_for(ch, recv(ch, 1, 5, go), wait) != OpState::Done) return kWrong;
                           for (auto* v : {&late, &fine})
                             if (wait_for(ch, send(ch, 1, 4, *v), wait) != OpState::Done) return kWrong;
                           return kOk;
                         }
                         std::this_thread::sleep_for(std::chrono::milliseconds(20));
                         ch.progress();  // `early` is now in the unexpected buffer
                         std::vector<std::byte> small(100), mid(2 * kSlot), in(kFine);
                         std::size_t got = 0;
                         if (wait_for(ch, recv(ch, 0, 4, small), wait, &got) != OpState::Truncated)
                           return kWrong;
                         if (got != small.size() || !is_message(small.data(), small.size(), 1)) return kWrong;
                         Channel::Op op = recv(ch, 0, 4, mid);  // posted before `late` is sent
                         if (wait_for(ch, send(ch, 0, 5, go), wait) != OpState::Done) return kWrong;
                         if (wait_for(ch, op, wait, &got) != OpState::Truncated) return kWrong;
                         if (got != mid.size() || !is_message(mid.data(), mid.size(), 2)) return kWrong;
                         return check_recv(ch, recv(ch, 0, 4, in), wait, in, kFine, 3);
                       }),
             kOk);
}

// Rank 1 dies in the middle of a message rank 0 is waiting for.
TEST(ShmChannel, KilledPeerInterruptsTheWait) {
  // The sender dies with its message only partly in the ring, whatever the
  // timing: the receiver starts draining only after the sender's last push
  // (the message is 16 rings long, and nothing pushes the rest).
  void* shared =
      ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* pushed = new (shared) std::atomic<int>(0);
  const auto start = std::chrono::steady_clock::now();
  auto codes = run_ranks(2, [pushed](int r, ShmChannel& ch, TestWait& wait) -> int {
    std::vector<std::byte> buf = message(16 * kSlot * Settings{}.shm_p2p_slots, 1);
    if (r == 1) {
      send(ch, 0, 1, buf);  // fills the ring, and no more
      pushed->store(1);
      ::raise(SIGKILL);
    }
    while (pushed->load() == 0) std::this_thread::yield();
    const auto op = recv(ch, 1, 1, buf);
    wait_for(ch, op, wait);
    return kWrong;
  });
  ::munmap(shared, sizeof(std::atomic<int>));
  EXPECT_EQ(codes[0], kInterrupted);
  EXPECT_EQ(codes[1], 128 + SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(dev_shm_clean());
}

// A peer that put its message in the ring and exited has not failed it;
// what is still posted to or from it fails once the exit is seen.
TEST(ShmChannel, PeerThatExitsAfterSendingFailsNothing) {
  auto codes = run_ranks(2, [](int r, ShmChannel& ch, TestWait& wait) -> int {
    std::vector<std::byte> buf = message(kSlot * 3 + 1, 1), never(10);
    if (r == 1) {
      if (wait_for(ch, send(ch, 0, 1, buf), wait) != OpState::Done) ::_exit(kWrong);
      ::_exit(kOk);  // without the exit barrier
    }
    Channel::Op orphan = recv(ch, 1, 2, never);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::vector<std::byte> in(buf.size());
    if (int c = check_recv(ch, recv(ch, 1, 1, in), wait, in, in.size(), 1)) return c;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!ch.peer_failed() && std::chrono::steady_clock::now() < deadline) ch.progress();
    if (!ch.peer_failed() || ch.failure_reason().find("exited") == std::string::npos) return kWrong;
    if (ch.test(orphan, nullptr) != OpState::Failed) return kWrong;
    if (ch.test(recv(ch, 1, 3, in), nullptr) != OpState::Failed) return kWrong;
    if (ch.test(send(ch, 1, 3, in), nullptr) != OpState::Failed) return kWrong;
    ::_exit(kOk);  // rank 1 never reaches the exit barrier
  });
  expect_all(codes, kOk);
}

// After a Shrink the survivors keep their rings (ShmChannel::for_survivors):
// ranks 0 and 2 of 3 talk, leave a message unreceived in each direction,
// take the channel over as local ranks 0 and 1, and then see only what they
// send each other afterwards, under the same tag, in a ring that stays
// usable for messages larger than itself.
TEST(ShmChannel, SurvivorsReuseTheirRingsEmptied) {
  auto* shared = static_cast<std::atomic<int>*>(
      ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(shared, MAP_FAILED);
  auto* pids = new (shared) std::atomic<int>[3] {};
  auto* arrived = new (shared + 3) std::atomic<int>[2] {};
  auto barrier = [&](int k) {
    arrived[k].fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived[k].load() < 2)
      if (std::chrono::steady_clock::now() > deadline) return false;
    return true;
  };
  const std::size_t big = Settings{}.shm_p2p_slot_bytes * Settings{}.shm_p2p_slots * 3 + 5;
  const auto codes = run_ranks(3, [&](int r, ShmChannel& ch, TestWait& wait) -> int {
    pids[r].store(::getpid());
    if (r == 1) return kOk;  // the member that is lost
    const int peer = 2 - r;
    std::vector<std::byte> out = message(1000, 10u + static_cast<unsigned>(r)), in(1000);
    Channel::Op sent = send(ch, peer, 7, out);
    if (check_recv(ch, recv(ch, peer, 7, in), wait, in, in.size(), 10u + static_cast<unsigned>(peer)))
      return kWrong;
    if (wait_for(ch, sent, wait) != OpState::Done) return kWrong;
    std::vector<std::byte> stale = message(500, 20u + static_cast<unsigned>(r));
    if (wait_for(ch, send(ch, peer, 7, stale), wait) != OpState::Done)
      return kWrong;                    // in the ring, never received
    if (!barrier(0)) return kTimedOut;  // both left the old epoch
    while (pids[0].load() == 0 || pids[2].load() == 0) std::this_thread::yield();
    auto next = ShmChannel::for_survivors(ch, {0, 2}, r / 2, {pids[0].load(), pids[2].load()});
    if (next->size() != 2 || next->rank() != r / 2) return kWrong;
    if (!barrier(1)) return kTimedOut;  // both emptied their side (the epoch's agreement)
    const int now_peer = 1 - r / 2;
    std::vector<std::byte> fresh = message(big, 30u + static_cast<unsigned>(r)), got(big);
    Channel::Op f = send(*next, now_peer, 7, fresh);
    if (check_recv(*next, recv(*next, now_peer, 7, got), wait, got, big, 30u + static_cast<unsigned>(peer)))
      return kWrong;
    return wait_for(*next, f, wait) == OpState::Done ? kOk : kWrong;
  });
  expect_all(codes, kOk);
  ::munmap(shared, 4096);
}

}  // namespace
}  // namespace ringmend::transport
