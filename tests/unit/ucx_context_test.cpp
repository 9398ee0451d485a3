// UcxContext's workers: one made ahead on the helper thread carries
// messages on this one; while an epoch is set up the helper waits, and
// once it is in use a channel handed to close_later() really goes (its
// peer sees the connection fail) and the next worker is made; without the
// helper, everything is inline. Channels of one process talk over UCX's
// TCP transport.
#include "transport/ucx_context.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "transport/ucx_channel.hpp"
#include "transport/ucx_environment.hpp"

namespace ringmend::transport {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kBound = std::chrono::seconds(20);

// Waits (bounded) until `done` holds, progressing the channels meanwhile.
template <class Done>
bool progress_until(std::vector<UcxChannel*> channels, Done done) {
  const auto deadline = Clock::now() + kBound;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    for (UcxChannel* c : channels) c->progress();
    std::this_thread::yield();
  }
  return true;
}

// Ranks 0 and 1 of a two-rank epoch, connected to each other.
void connect_pair(UcxChannel& a, UcxChannel& b) {
  std::vector<std::vector<std::byte>> addresses = {a.local_address(), b.local_address()};
  a.connect(addresses, {1});
  b.connect(addresses, {0});
}

// Sends `text` from `from` to `to` and checks it arrives whole.
void exchange(UcxChannel& from, UcxChannel& to, const char* text) {
  std::vector<char> out(text, text + std::strlen(text) + 1), in(out.size(), 'x');
  Piece send_piece{out.data(), out.size()}, recv_piece{in.data(), in.size()};
  Channel::Op recv = to.recv(from.rank(), 7, std::span<const Piece>(&recv_piece, 1));
  Channel::Op send = from.send(to.rank(), 7, std::span<const Piece>(&send_piece, 1));
  OpState sent = OpState::Pending, received = OpState::Pending;
  std::size_t bytes = 0;
  ASSERT_TRUE(progress_until({&from, &to}, [&] {
    if (sent == OpState::Pending) sent = from.test(send, nullptr);
    if (received == OpState::Pending) received = to.test(recv, &bytes);
    return sent != OpState::Pending && received != OpState::Pending;
  })) << "message not delivered within the bound";
  EXPECT_EQ(sent, OpState::Done);
  ASSERT_EQ(received, OpState::Done);
  EXPECT_EQ(bytes, out.size());
  EXPECT_STREQ(in.data(), text);
}

// Sends to `gone`'s former peer until the channel reports the failure.
bool sees_peer_gone(UcxChannel& survivor) {
  char byte = 1;
  Piece p{&byte, 1};
  const auto deadline = Clock::now() + kBound;
  while (!survivor.peer_failed()) {
    if (Clock::now() > deadline) return false;
    Channel::Op op;
    try {
      op = survivor.send(0, 9, std::span<const Piece>(&p, 1));
    } catch (const std::exception&) {
      return true;  // no connection left
    }
    OpState s = OpState::Pending;
    if (!progress_until({&survivor}, [&] {
          s = survivor.test(op, nullptr);
          return s != OpState::Pending || survivor.peer_failed();
        }))
      return false;
    if (s == OpState::Failed) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

class UcxContextTest : public ::testing::Test {
 protected:
  void SetUp() override { set_ucx_environment_defaults(); }
};

TEST_F(UcxContextTest, AWorkerMadeAheadCarriesMessagesAndAClosedChannelGoes) {
  UcxContext ucx({}, true);
  if (!ucx.workers_ahead()) GTEST_SKIP() << "this UCX has no thread support: workers are made inline";
  ucx.prepare_worker();
  const auto deadline = Clock::now() + kBound;
  while (ucx.helper_counts().made_ahead == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(ucx.helper_counts().made_ahead, 1u) << "the helper made no worker ahead";

  auto a = std::make_unique<UcxChannel>(ucx, 0, 2, 1);  // takes the one made ahead
  EXPECT_EQ(ucx.helper_counts().taken_ready, 1u);
  UcxChannel b(ucx, 1, 2, 1);
  connect_pair(*a, b);
  exchange(*a, b, "made ahead, used here");
  exchange(b, *a, "and back");

  // Until the epoch that took the worker is in use, the helper waits: its
  // work must not compete with the epoch's set-up.
  ucx.close_later(std::move(a));
  EXPECT_EQ(a, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(ucx.helper_counts().closed_later, 0u) << "closed while the epoch was being set up";
  EXPECT_EQ(ucx.helper_counts().made_ahead, 1u) << "made the next worker while the epoch was being set up";

  ucx.epoch_in_use();
  const auto closing = Clock::now() + kBound;
  while ((ucx.helper_counts().closed_later == 0 || ucx.helper_counts().made_ahead < 2) &&
         Clock::now() < closing)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(ucx.helper_counts().closed_later, 1u);
  EXPECT_EQ(ucx.helper_counts().made_ahead, 2u) << "no next worker once the epoch was in use";
  EXPECT_TRUE(sees_peer_gone(b)) << "the channel handed to close_later() still answers";
}

TEST_F(UcxContextTest, WithoutWorkersAheadEverythingIsInline) {
  UcxContext ucx({}, false);
  EXPECT_FALSE(ucx.workers_ahead());
  auto a = std::make_unique<UcxChannel>(ucx, 0, 2, 1);
  UcxChannel b(ucx, 1, 2, 1);
  connect_pair(*a, b);
  exchange(*a, b, "inline");
  ucx.close_later(std::move(a));  // destroyed before it returns
  EXPECT_TRUE(sees_peer_gone(b));
  const UcxContext::HelperCounts counts = ucx.helper_counts();
  EXPECT_EQ(counts.made_ahead + counts.taken_ready + counts.closed_later, 0u);
}

TEST_F(UcxContextTest, ADestroyedContextClosesWhatItsHelperStillHeld) {
  // A worker made ahead and never taken, and channels handed over just
  // before the end: all destroyed before ucp_cleanup (ASan and UCX's own
  // leak report would say otherwise).
  for (int round = 0; round < 3; ++round) {
    UcxContext ucx({}, true);
    ucx.prepare_worker();
    auto a = std::make_unique<UcxChannel>(ucx, 0, 2, 1);
    auto b = std::make_unique<UcxChannel>(ucx, 1, 2, 1);
    connect_pair(*a, *b);
    ucx.close_later(std::move(a));
    ucx.close_later(std::move(b));
  }
}

}  // namespace
}  // namespace ringmend::transport
