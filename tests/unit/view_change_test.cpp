// The native membership protocol's view change (membership/native/
// view_change.hpp), driven through simulated networks that lose and reorder
// messages, with processes that crash and detectors that suspect wrongly:
// the properties the SPIN model checks (docs/membership.md) must hold for the
// C++ state machine too, over thousands of seeded runs of 3 to 7 processes.
#include "membership/native/view_change.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <optional>
#include <random>

namespace ringmend::membership::native {
namespace {

using Ids = std::vector<MemberId>;

TEST(ViewChangeQuorum, MoreThanHalfOrHalfWithTheLowest) {
  const Ids four{0, 1, 2, 3};
  EXPECT_TRUE(is_quorum(four, {0, 1, 2}));
  EXPECT_TRUE(is_quorum(four, {0, 3}));
  EXPECT_FALSE(is_quorum(four, {1, 2}));  // the other half: no
  EXPECT_FALSE(is_quorum(four, {0}));
  const Ids three{4, 7, 9};
  EXPECT_TRUE(is_quorum(three, {7, 9}));
  EXPECT_FALSE(is_quorum(three, {4}));
  EXPECT_TRUE(is_quorum({5}, {5}));
  const Ids two{2, 6};
  EXPECT_TRUE(is_quorum(two, {2}));
  EXPECT_FALSE(is_quorum(two, {6}));
}

TEST(ViewChange, BadArgumentsAreRefused) {
  EXPECT_THROW(ViewChange(0, {0, 1}, 3, 2), std::invalid_argument);
  EXPECT_THROW(ViewChange(0, {0, 1, 1}, 0, 2), std::invalid_argument);
  EXPECT_THROW(ViewChange(0, {0, 1}, 0, 0), std::invalid_argument);
}

TEST(ViewChange, NothingHappensWithoutASuspicion) {
  ViewChange v(3, {0, 1, 2}, 1, 4);
  EXPECT_FALSE(v.changing());
  EXPECT_TRUE(v.timeout().empty());
  EXPECT_EQ(v.mode(), Mode::Active);
}

// One crashed member, no loss: the lowest survivor leads and everyone
// installs the survivors, in three message delays.
TEST(ViewChange, TheLowestSurvivorLeadsAfterACrash) {
  std::map<MemberId, ViewChange> p;
  for (MemberId m : {0, 1, 2, 3}) p.emplace(m, ViewChange(5, {0, 1, 2, 3}, m, 4));
  std::deque<Message> net;
  auto push = [&](std::vector<Message> out) {
    for (auto& m : out) net.push_back(std::move(m));
  };
  for (MemberId m : {1, 2, 3}) push(p.at(m).suspect(0));
  EXPECT_EQ(p.at(1).mode(), Mode::Preparing);
  while (!net.empty()) {
    Message m = net.front();
    net.pop_front();
    if (m.to != 0) push(p.at(m.to).receive(m));
  }
  // Member 0 never answered: it is suspected by the leader, who waited only
  // for the members it trusts.
  for (MemberId m : {1, 2, 3}) {
    EXPECT_EQ(p.at(m).mode(), Mode::Installed) << p.at(m).describe();
    EXPECT_EQ(p.at(m).next_view(), (Ids{1, 2, 3}));
  }
}

// A wrongly suspected member that is alive and cut off: the others decide
// without it, and when it is heard again it learns that it is fenced.
TEST(ViewChange, AMemberLeftOutLearnsItIsFenced) {
  std::map<MemberId, ViewChange> p;
  for (MemberId m : {0, 1, 2}) p.emplace(m, ViewChange(1, {0, 1, 2}, m, 4));
  std::deque<Message> net;
  auto push = [&](std::vector<Message> out) {
    for (auto& m : out) net.push_back(std::move(m));
  };
  push(p.at(1).suspect(0));
  push(p.at(2).suspect(0));
  while (!net.empty()) {  // member 0 is cut: nothing reaches it, nothing leaves it
    Message m = net.front();
    net.pop_front();
    if (m.to != 0) push(p.at(m.to).receive(m));
  }
  EXPECT_EQ(p.at(1).next_view(), (Ids{1, 2}));
  // Member 0 times out waiting and leads; the others answer with the decision.
  push(p.at(0).suspect(2));
  push(p.at(0).timeout());
  while (!net.empty()) {
    Message m = net.front();
    net.pop_front();
    push(p.at(m.to).receive(m));
  }
  EXPECT_EQ(p.at(0).mode(), Mode::Fenced) << p.at(0).describe();
  EXPECT_EQ(p.at(0).next_view(), (Ids{1, 2}));
}

// A joiner admitted by the leader is in the decided view and is told it.
TEST(ViewChange, AJoinerEntersTheNextView) {
  std::map<MemberId, ViewChange> p;
  for (MemberId m : {0, 1, 2}) p.emplace(m, ViewChange(0, {0, 1, 2}, m, 4));
  p.at(0).admit({7});
  std::deque<Message> net;
  auto push = [&](std::vector<Message> out) {
    for (auto& m : out) net.push_back(std::move(m));
  };
  push(p.at(0).suspect(2));
  std::optional<Ids> told_joiner;
  while (!net.empty()) {
    Message m = net.front();
    net.pop_front();
    if (m.to == 7) {
      told_joiner = m.value;
      continue;
    }
    if (m.to != 2) push(p.at(m.to).receive(m));
  }
  EXPECT_EQ(p.at(0).next_view(), (Ids{0, 1, 7}));
  ASSERT_TRUE(told_joiner.has_value());
  EXPECT_EQ(*told_joiner, (Ids{0, 1, 7}));
}

// Members released from the job take part in the change that leaves them
// out: three of four leave, the one that stays could not make a quorum
// alone. The leader is one of the leavers; every leaver learns the
// decision as a fenced member does, and the stayer installs a view of one.
// Delivers every message, and what it causes, until none is left: no
// loss, no crash.
void deliver_all(std::map<MemberId, ViewChange>& p, std::deque<Message>& net) {
  while (!net.empty()) {
    Message m = net.front();
    net.pop_front();
    for (auto& out : p.at(m.to).receive(m)) net.push_back(std::move(out));
  }
}

TEST(ViewChange, LeaversCountTowardTheQuorumThatLeavesThemOut) {
  std::map<MemberId, ViewChange> p;
  for (MemberId m : {0, 1, 2, 3}) p.emplace(m, ViewChange(4, {0, 1, 2, 3}, m, 4));
  std::deque<Message> net;
  for (MemberId m : {0, 1, 2, 3}) {
    p.at(m).release({0, 1, 2});
    for (auto& msg : p.at(m).request()) net.push_back(std::move(msg));
  }
  deliver_all(p, net);
  for (MemberId m : {0, 1, 2}) {
    EXPECT_EQ(p.at(m).mode(), Mode::Fenced) << p.at(m).describe();
    EXPECT_EQ(p.at(m).next_view(), (Ids{3}));
  }
  EXPECT_EQ(p.at(3).mode(), Mode::Installed) << p.at(3).describe();
  EXPECT_EQ(p.at(3).next_view(), (Ids{3}));
}

// A leader that does not know of the release proposes every member that
// answered: the release waits for a later change (the spare pool rounds
// again), and nothing else differs.
TEST(ViewChange, ALeaderThatKnowsNoLeaverKeepsEveryone) {
  std::map<MemberId, ViewChange> p;
  for (MemberId m : {0, 1, 2}) p.emplace(m, ViewChange(2, {0, 1, 2}, m, 4));
  std::deque<Message> net;
  for (MemberId m : {1, 2}) {
    p.at(m).release({2});
    for (auto& msg : p.at(m).request()) net.push_back(std::move(msg));
  }
  deliver_all(p, net);
  for (MemberId m : {0, 1, 2}) EXPECT_EQ(p.at(m).next_view(), (Ids{0, 1, 2})) << p.at(m).describe();
}

// --- the simulation -----------------------------------------------------

struct Faults {
  int crashes, losses, wrong_suspicions;
  int leavers = 0;  // members released in the change (ViewChange::release)
};

struct Outcome {
  std::string failure;  // empty: every property held
  bool decided = false;
  int fenced = 0, losses = 0, crashes = 0;
  bool released = false;  // a leaver was left out of the decision
};

// One view change among n processes under the given fault budget, every
// choice drawn from `seed`. Messages wait in one pool and are delivered in
// any order; when none is left, one process that waits has its round
// timeout (the model's `timeout`). Crashed processes are suspected by every
// detector eventually (completeness).
Outcome simulate(int n, Faults f, std::uint32_t seed) {
  std::mt19937 rng(seed);
  auto draw = [&](int below) { return static_cast<int>(rng() % static_cast<std::uint32_t>(below)); };
  Ids view;
  for (int i = 0; i < n; ++i) view.push_back(i * 3 + 1);  // ids need not be 0..n-1
  const int ballots = f.crashes + f.losses + f.wrong_suspicions + 2;
  std::vector<ViewChange> p;
  for (MemberId m : view) p.emplace_back(9, view, m, ballots);
  std::vector<bool> alive(static_cast<std::size_t>(n), true);
  auto index_of = [&](MemberId id) {
    return static_cast<int>(std::find(view.begin(), view.end(), id) - view.begin());
  };
  // Leavers: every process but a random one is told of the release (a
  // leader that was not told keeps them: the release waits for a later
  // change).
  Ids leavers;
  while (static_cast<int>(leavers.size()) < f.leavers) {
    const MemberId l = view[static_cast<std::size_t>(draw(n))];
    if (std::find(leavers.begin(), leavers.end(), l) == leavers.end()) leavers.push_back(l);
  }
  std::sort(leavers.begin(), leavers.end());
  if (!leavers.empty()) {
    const int untold = draw(2 * n);  // >= n: every process told
    for (int i = 0; i < n; ++i)
      if (i != untold) p[static_cast<std::size_t>(i)].release(leavers);
  }
  std::vector<Message> pool;
  Ids promised;  // who ever promised
  int crashes = 0, losses = 0, wrong = 0;
  // Sends what process `from` put out; it may crash half-way through (a
  // broadcast of which only a prefix left it).
  auto send_from = [&](int from, std::vector<Message> out) {
    if (out.size() > 1 && crashes < f.crashes && draw(8) == 0) {
      out.resize(static_cast<std::size_t>(draw(static_cast<int>(out.size()))));
      alive[static_cast<std::size_t>(from)] = false;
      ++crashes;
    }
    for (auto& m : out) {
      if (m.kind == MessageKind::Promise) {
        if (std::find(promised.begin(), promised.end(), m.from) == promised.end()) promised.push_back(m.from);
      }
      pool.push_back(std::move(m));
    }
  };
  // A fault is needed for a change: one crash or one wrong suspicion first.
  if (f.crashes > 0 && (f.wrong_suspicions == 0 || draw(2) == 0)) {
    alive[static_cast<std::size_t>(draw(n))] = false;
    ++crashes;
  } else {
    const int a = draw(n), b = (a + 1 + draw(n - 1)) % n;
    send_from(a, p[static_cast<std::size_t>(a)].suspect(view[static_cast<std::size_t>(b)]));
    ++wrong;
  }
  for (int step = 0; step < 20000; ++step) {
    const int choice = draw(20);
    if (choice == 0 && crashes < f.crashes) {  // a crash
      const int v = draw(n);
      if (alive[static_cast<std::size_t>(v)] && !p[static_cast<std::size_t>(v)].finished()) {
        alive[static_cast<std::size_t>(v)] = false;
        ++crashes;
      }
      continue;
    }
    if (choice == 1 && wrong < f.wrong_suspicions) {  // a wrong suspicion
      const int a = draw(n), b = draw(n);
      if (a != b && alive[static_cast<std::size_t>(a)] && alive[static_cast<std::size_t>(b)]) {
        send_from(a, p[static_cast<std::size_t>(a)].suspect(view[static_cast<std::size_t>(b)]));
        ++wrong;
      }
      continue;
    }
    if (choice == 2) {  // a detector reports a crash
      const int a = draw(n), b = draw(n);
      if (alive[static_cast<std::size_t>(a)] && !alive[static_cast<std::size_t>(b)])
        send_from(a, p[static_cast<std::size_t>(a)].suspect(view[static_cast<std::size_t>(b)]));
      continue;
    }
    if (!pool.empty()) {  // deliver (or lose) any waiting message
      const auto k = static_cast<std::size_t>(draw(static_cast<int>(pool.size())));
      Message m = pool[k];
      pool.erase(pool.begin() + static_cast<long>(k));
      const int to = index_of(m.to);
      if (to >= n || !alive[static_cast<std::size_t>(to)]) continue;  // to a crashed process, or a joiner
      if (m.from != m.to && losses < f.losses && draw(4) == 0) {
        ++losses;
        continue;
      }
      send_from(to, p[static_cast<std::size_t>(to)].receive(m));
      continue;
    }
    // Quiet: the detectors are complete first, then one waiting process times out.
    bool reported = false;
    for (int a = 0; a < n && !reported; ++a)
      for (int b = 0; b < n && !reported; ++b)
        if (alive[static_cast<std::size_t>(a)] && !alive[static_cast<std::size_t>(b)] &&
            !p[static_cast<std::size_t>(a)].finished()) {
          const auto& s = p[static_cast<std::size_t>(a)].suspected();
          if (std::find(s.begin(), s.end(), view[static_cast<std::size_t>(b)]) == s.end()) {
            send_from(a, p[static_cast<std::size_t>(a)].suspect(view[static_cast<std::size_t>(b)]));
            reported = true;
          }
        }
    if (reported) continue;
    // A process whose peers left view e finds its collectives stalled.
    for (int i = 0; i < n; ++i)
      for (MemberId m : promised)
        if (m != view[static_cast<std::size_t>(i)]) p[static_cast<std::size_t>(i)].stalled();
    std::vector<int> waiting;
    for (int i = 0; i < n; ++i)
      if (alive[static_cast<std::size_t>(i)] && !p[static_cast<std::size_t>(i)].finished() &&
          p[static_cast<std::size_t>(i)].changing())
        waiting.push_back(i);
    if (waiting.empty()) break;  // the end
    const int w = waiting[static_cast<std::size_t>(draw(static_cast<int>(waiting.size())))];
    send_from(w, p[static_cast<std::size_t>(w)].timeout());
  }

  // The properties.
  std::optional<Ids> decision;
  Ids live;
  for (int i = 0; i < n; ++i) {
    const auto& v = p[static_cast<std::size_t>(i)];
    if (alive[static_cast<std::size_t>(i)]) live.push_back(view[static_cast<std::size_t>(i)]);
    if (!v.decided()) continue;
    if (decision && *decision != v.next_view()) return {"agreement: two decisions, " + v.describe()};
    decision = v.next_view();
    const bool member = std::binary_search(v.next_view().begin(), v.next_view().end(), v.self());
    if ((v.mode() == Mode::Installed) != member) return {"fencing: " + v.describe()};
  }
  if (decision) {
    // The leavers answered too: the decision and they make a quorum.
    Ids with_leavers = *decision;
    for (MemberId l : leavers)
      if (std::find(promised.begin(), promised.end(), l) != promised.end()) with_leavers.push_back(l);
    std::sort(with_leavers.begin(), with_leavers.end());
    with_leavers.erase(std::unique(with_leavers.begin(), with_leavers.end()), with_leavers.end());
    if (!is_quorum(view, with_leavers)) return {"validity: the decision is no quorum"};
    for (MemberId m : *decision)
      if (std::find(promised.begin(), promised.end(), m) == promised.end())
        return {"validity: member " + std::to_string(m) + " is in the view but never promised"};
  }
  if (is_quorum(view, live)) {
    if (!decision) return {"termination: a live quorum decided nothing"};
    for (int i = 0; i < n; ++i)
      if (alive[static_cast<std::size_t>(i)] && !p[static_cast<std::size_t>(i)].decided())
        return {"termination: " + p[static_cast<std::size_t>(i)].describe()};
  }
  Outcome o;
  o.decided = decision.has_value();
  if (decision)
    for (MemberId l : leavers)
      if (!std::binary_search(decision->begin(), decision->end(), l)) o.released = true;
  for (const auto& v : p) o.fenced += v.mode() == Mode::Fenced ? 1 : 0;
  o.losses = losses;
  o.crashes = crashes;
  return o;
}

struct SimCase {
  int n;
  Faults faults;
};

class ViewChangeSimulation : public ::testing::TestWithParam<SimCase> {};

TEST_P(ViewChangeSimulation, AgreementValidityFencingTermination) {
  const SimCase c = GetParam();
  int decided = 0, fenced = 0, lossy = 0, crashed = 0, released = 0;
  for (std::uint32_t seed = 1; seed <= 3000; ++seed) {
    const Outcome o = simulate(c.n, c.faults, seed);
    ASSERT_TRUE(o.failure.empty()) << "n=" << c.n << " seed " << seed << ": " << o.failure;
    decided += o.decided;
    fenced += o.fenced > 0;
    lossy += o.losses > 0;
    crashed += o.crashes > 0;
    released += o.released;
  }
  // The faults landed: runs that decided, lost messages, crashed, fenced
  // a live process.
  std::printf("%d runs decided, %d lost messages, %d had a crash, %d fenced a live process\n", decided, lossy,
              crashed, fenced);
  EXPECT_GT(decided, 1500);
  if (c.faults.losses > 0) {
    EXPECT_GT(lossy, 300);
  }
  if (c.faults.crashes > 0) {
    EXPECT_GT(crashed, 1000);
  }
  if (c.faults.wrong_suspicions > 0) {
    EXPECT_GT(fenced, 100);
  }
  if (c.faults.leavers > 0) {
    EXPECT_GT(released, 1000);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Faults, ViewChangeSimulation,
    ::testing::Values(SimCase{3, {1, 1, 1}}, SimCase{3, {1, 3, 0}}, SimCase{3, {0, 2, 2}},
                      SimCase{4, {2, 2, 0}}, SimCase{4, {1, 2, 2}}, SimCase{5, {2, 3, 2}},
                      SimCase{7, {3, 4, 3}}, SimCase{4, {1, 2, 1, 2}}, SimCase{5, {2, 2, 1, 3}}),
    [](const ::testing::TestParamInfo<SimCase>& i) {
      return "n" + std::to_string(i.param.n) + "_crash" + std::to_string(i.param.faults.crashes) + "_loss" +
             std::to_string(i.param.faults.losses) + "_wrong" +
             std::to_string(i.param.faults.wrong_suspicions) +
             (i.param.faults.leavers ? "_leave" + std::to_string(i.param.faults.leavers) : "");
    });

}  // namespace
}  // namespace ringmend::membership::native
