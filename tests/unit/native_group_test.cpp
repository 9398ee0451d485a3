// The native membership's pieces without a launcher: the frame format, the
// heartbeat ring, and groups of real processes (fork) on this machine's
// loopback that lose members for real: one SIGKILLed (its connections
// reset), one stopped (silent: only the heartbeats notice; continued
// later, it must find itself fenced), half of the group stopped (no quorum:
// the others give up with an error instead of deciding alone).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "membership/native/frame.hpp"
#include "membership/native/group.hpp"
#include "membership/native/heartbeat_ring.hpp"
#include "membership/native/join.hpp"

namespace ringmend::membership::native {
namespace {

using Ids = std::vector<MemberId>;

TEST(NativeFrame, EveryKindRoundTrips) {
  Frame p;
  p.kind = FrameKind::Protocol;
  p.epoch = 7;
  p.from = 3;
  p.protocol.kind = MessageKind::Promise;
  p.protocol.to = 1;
  p.protocol.ballot = {4, 1};
  p.protocol.accepted = {2, 0};
  p.protocol.value = {0, 1, 3};
  Frame g;
  g.kind = FrameKind::Gather;
  g.epoch = 2;
  g.from = 9;
  g.round = 41;
  g.tag = 0xfeedface12345678ULL;
  g.payload = std::string("a\0b", 3);
  Frame h;
  h.kind = FrameKind::Hello;
  h.from = 5;
  h.job_key = 0x1234567890abcdefULL;
  const std::string bytes = encode(p) + encode(g) + encode(h);
  FrameReader reader;
  for (char c : bytes) reader.append(&c, 1);  // one byte at a time: frames cut anywhere
  auto a = reader.next();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, FrameKind::Protocol);
  EXPECT_EQ(a->protocol.kind, MessageKind::Promise);
  EXPECT_EQ(a->protocol.epoch, 7u);
  EXPECT_EQ(a->protocol.from, 3);
  EXPECT_EQ(a->protocol.to, 1);
  EXPECT_EQ(a->protocol.ballot, (Ballot{4, 1}));
  EXPECT_EQ(a->protocol.accepted, (Ballot{2, 0}));
  EXPECT_EQ(a->protocol.value, (Ids{0, 1, 3}));
  auto b = reader.next();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->round, 41u);
  EXPECT_EQ(b->tag, 0xfeedface12345678ULL);
  EXPECT_EQ(b->payload, std::string("a\0b", 3));
  auto c = reader.next();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->job_key, 0x1234567890abcdefULL);
  EXPECT_FALSE(reader.next());
}

TEST(NativeFrame, NonsenseIsRefusedNotAllocated) {
  FrameReader huge;
  const std::string header("\xff\xff\xff\x7f", 4);  // 2 GB announced
  huge.append(header.data(), header.size());
  EXPECT_THROW(huge.next(), std::runtime_error);
  FrameReader unknown;
  Frame f;
  f.kind = FrameKind::Heartbeat;
  std::string bytes = encode(f);
  bytes[4] = 99;  // no such kind
  unknown.append(bytes.data(), bytes.size());
  EXPECT_THROW(unknown.next(), std::runtime_error);
  FrameReader truncated;
  f.kind = FrameKind::Gather;
  f.payload = "12345";
  bytes = encode(f);
  bytes[bytes.size() - 6] = 50;  // the payload claims 50 bytes within the frame's length
  truncated.append(bytes.data(), bytes.size());
  EXPECT_THROW(truncated.next(), std::runtime_error);
}

TEST(HeartbeatRing, LeadersWatchTheirPredecessorsAcrossNodes) {
  // Three nodes of two: leaders 0, 2, 4.
  const std::vector<Placement> view{{0, "a"}, {1, "a"}, {2, "b"}, {3, "b"}, {4, "c"}, {5, "c"}};
  const HeartbeatRing leader(view, 2);
  EXPECT_TRUE(leader.is_leader());
  EXPECT_EQ(leader.send_to(), (Ids{4, 0}));
  EXPECT_EQ(leader.watch(), (Ids{0, 4}));
  EXPECT_EQ(leader.node_of(4), (Ids{4, 5}));
  EXPECT_EQ(leader.node_mates(), (Ids{3}));
  const HeartbeatRing other(view, 3);
  EXPECT_FALSE(other.is_leader());
  EXPECT_TRUE(other.send_to().empty());
  EXPECT_TRUE(other.watch().empty());
  EXPECT_EQ(other.node_mates(), (Ids{2}));
  // One node: nobody to send to. Two: each watches the other once.
  EXPECT_TRUE(HeartbeatRing({{0, "a"}, {1, "a"}}, 0).send_to().empty());
  EXPECT_EQ(HeartbeatRing({{0, "a"}, {1, "b"}}, 1).watch(), (Ids{0}));
  // Seven nodes: two successors, two predecessors.
  std::vector<Placement> seven;
  for (MemberId m = 0; m < 7; ++m) seven.push_back({m, "n" + std::to_string(m)});
  const HeartbeatRing r(seven, 0);
  EXPECT_EQ(r.send_to(), (Ids{1, 2}));
  EXPECT_EQ(r.watch(), (Ids{6, 5}));
}

// ---- groups of real processes ----

constexpr int kDone = 0, kFenced = 10, kGaveUp = 11, kWrong = 12, kCrashed = 13;
constexpr MemberId kJoinerIds = MemberId{1} << 30;  // join.hpp

struct Plan {
  int processes = 4;
  int rounds = 40;
  double round_pause = 0.01;  // seconds between all-gathers
  GroupSettings settings{
      .heartbeat_timeout = 0.3, .round_timeout = 0.05, .recovery_timeout = 5, .fenced_grace = 0.2};
};

// A run that ended by an exception: the report says why, the exit code what.
int ended_by(std::exception_ptr e, const std::string& report) {
  try {
    std::rethrow_exception(e);
  } catch (const MembershipError& m) {
    std::ofstream(report) << "error " << m.what() << "\n";
    return m.kind() == MembershipError::Kind::Fenced ? kFenced : kGaveUp;
  } catch (const std::exception& x) {
    std::ofstream(report) << "crashed " << x.what() << "\n";
  }
  return kCrashed;
}

// What one process of the group does: `rounds` all-gathers of "round:id",
// each result checked, a recovery whenever the view changes. Writes
// "epoch view rounds" to `report` at the end.
int run_member(Group& group, const Plan& plan, const std::string& report) {
  try {
    bool resync = false;
    for (int round = 0; round < plan.rounds;) {
      group.progress(0);
      if (resync) {
        // The native all-gathers are not uniform: around a view change one
        // member may have finished round r while another saw it fail. After
        // a recovery the members first say where they stand, in an
        // all-gather of its own, and go on after the highest round.
        auto where = group.allgather("sync:" + std::to_string(round), 10);
        if (!where) {
          group.recover();
          continue;
        }
        int highest = round;
        for (const std::string& w : *where)
          if (w.rfind("sync:", 0) == 0) highest = std::max(highest, std::stoi(w.substr(5)));
        round = highest + 1;
        resync = false;
        continue;
      }
      auto all = group.allgather(std::to_string(round) + ":" + std::to_string(group.self()), 10);
      if (!all) {
        group.recover();
        resync = true;
        continue;
      }
      const auto& members = group.members();
      if (all->size() != members.size()) return kWrong;
      for (std::size_t i = 0; i < members.size(); ++i) {
        const std::string want = std::to_string(round) + ":" + std::to_string(members[i]);
        // A joiner does not know the round in its first all-gather: it says "x".
        const bool joiners_first = members[i] >= kJoinerIds && (*all)[i] == "x:" + std::to_string(members[i]);
        if ((*all)[i] != want && !joiners_first) return kWrong;
      }
      ++round;
      const auto pause = std::chrono::steady_clock::now() + std::chrono::duration<double>(plan.round_pause);
      while (std::chrono::steady_clock::now() < pause) group.progress(5);
    }
    std::ofstream out(report);
    out << group.epoch() << " ";
    for (MemberId m : group.members()) out << m << ",";
    out << " " << plan.rounds << "\n";
    out.close();
    // Wait a moment for the others to finish before leaving: a member
    // that leaves early is not a failure (Bye), but its peers may still
    // be in their last all-gather.
    group.allgather("end", 10);
    group.leave();
    return kDone;
  } catch (...) {
    return ended_by(std::current_exception(), report);
  }
}

// A joiner's part: all-gathers in the members' rounds (the round learned
// from the first), until the members' "end". Writes "epoch size" at the end.
int run_joiner(Group& group, const std::string& report) {
  try {
    const std::string id = std::to_string(group.self());
    std::string mine = "x:" + id;
    for (int i = 0; i < 1000; ++i) {
      group.progress(0);
      auto all = group.allgather(mine, 10);
      if (!all) {
        group.recover();
        mine = "x:" + id;
        continue;
      }
      long round = -1;
      for (std::size_t k = 0; k < all->size(); ++k) {
        if (group.members()[k] >= kJoinerIds) continue;
        if ((*all)[k] == "end") {
          std::ofstream(report) << group.epoch() << " " << group.members().size() << "\n";
          group.leave();
          return kDone;
        }
        // A round ("r:id"), or where a member stands after a recovery
        // ("sync:r", a round of its own): the highest.
        const std::string& e = (*all)[k];
        round = std::max(round, std::stol(e.rfind("sync:", 0) == 0 ? e.substr(5) : e));
      }
      mine = std::to_string(round + 1) + ":" + id;
    }
    return kWrong;
  } catch (...) {
    return ended_by(std::current_exception(), report);
  }
}

class NativeGroup : public ::testing::Test {
 public:
  void SetUp() override {
    char dir[] = "/tmp/ringmend-native-group-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    for (pid_t p : pids_)
      if (p > 0) ::kill(p, SIGKILL);
    for (pid_t p : pids_)
      if (p > 0) ::waitpid(p, nullptr, 0);
    std::system(("rm -rf " + dir_).c_str());
  }
  std::string report(int i) const { return dir_ + "/member-" + std::to_string(i); }

  // Forks plan.processes members, each a "node" of its own (so that the
  // heartbeats watch every one), on the loopback.
  void start(const Plan& plan) {
    start(plan, [&](int i, Group& group) { return run_member(group, plan, report(i)); });
  }
  // The same, each process running `body(index, group)` for its exit code.
  void start(const Plan& plan, const std::function<int(int, Group&)>& body) {
    std::vector<std::unique_ptr<ControlNet>> nets;
    std::vector<PeerRecord> view;
    for (int i = 0; i < plan.processes; ++i) {
      nets.push_back(std::make_unique<ControlNet>(42, i, "127.0.0.1"));
      view.push_back({i, nets.back()->address(), "node" + std::to_string(i), 0});
    }
    for (int i = 0; i < plan.processes; ++i) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        for (int j = 0; j < plan.processes; ++j)
          if (j != i) nets[static_cast<std::size_t>(j)].reset();
        Group group(std::move(nets[static_cast<std::size_t>(i)]), view, plan.settings);
        ::_exit(body(i, group));
      }
      pids_.push_back(pid);
    }
    for (const PeerRecord& r : view) publish_record(dir_ + "/rendezvous", r, 42);
  }
  // Forks a process that joins the running group `after` seconds from now
  // (process index plan.processes).
  void start_joiner(const Plan& plan, double after) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(after));
      try {
        auto group = join_running_job(plan.settings, "lo", dir_ + "/rendezvous", 5);
        ::_exit(run_joiner(*group, report(plan.processes)));
      } catch (const std::exception& e) {
        std::ofstream(report(plan.processes)) << "crashed " << e.what() << "\n";
        ::_exit(kCrashed);
      }
    }
    pids_.push_back(pid);
  }
  int wait_for(int i) {
    int status = 0;
    ::waitpid(pids_[static_cast<std::size_t>(i)], &status, 0);
    pids_[static_cast<std::size_t>(i)] = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string read_report(int i) const {
    std::ifstream in(report(i));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string dir_;
  std::vector<pid_t> pids_;
};

TEST_F(NativeGroup, AllGathersWithoutFailures) {
  Plan plan;
  start(plan);
  for (int i = 0; i < plan.processes; ++i) {
    EXPECT_EQ(wait_for(i), kDone) << read_report(i);
    EXPECT_EQ(read_report(i), "0 0,1,2,3, 40\n");
  }
}

// A process started later asks to join (join.hpp) and is admitted: every
// member and the joiner finish in a view of 4 that names it, and every
// all-gather after it came holds its part.
TEST_F(NativeGroup, AJoinerStartedLaterIsAdmitted) {
  Plan plan;
  plan.processes = 3;
  plan.rounds = 60;
  plan.round_pause = 0.02;
  start(plan);
  start_joiner(plan, 0.3);
  for (int i = 0; i <= plan.processes; ++i) EXPECT_EQ(wait_for(i), kDone) << read_report(i);
  for (int i = 0; i < plan.processes; ++i) {
    std::istringstream report(read_report(i));
    std::uint64_t epoch = 0;
    std::string view;
    report >> epoch >> view;
    EXPECT_GE(epoch, 1u) << read_report(i);
    EXPECT_EQ(std::count(view.begin(), view.end(), ','), 4) << "the view does not hold the joiner: " << view;
    EXPECT_EQ(view.rfind("0,1,2,", 0), 0u) << view;
  }
  EXPECT_NE(read_report(plan.processes).find(" 4\n"), std::string::npos) << read_report(plan.processes);
}

// Member `victim` of `processes` SIGKILLed during the job: every survivor
// finishes every round in view 1 without it.
void expect_killed_member_left_out(NativeGroup& t, int processes, int victim, const std::string& view) {
  Plan plan;
  plan.processes = processes;
  plan.rounds = 60;
  t.start(plan);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(t.pids_[static_cast<std::size_t>(victim)], SIGKILL);
  EXPECT_EQ(t.wait_for(victim), 128 + SIGKILL);  // it died during the job
  for (int i = 0; i < processes; ++i) {
    if (i == victim) continue;
    EXPECT_EQ(t.wait_for(i), kDone) << t.read_report(i);
    EXPECT_EQ(t.read_report(i), "1 " + view + " 60\n");
  }
}

TEST_F(NativeGroup, AKilledMemberIsLeftOutByEverySurvivor) {
  expect_killed_member_left_out(*this, 5, 2, "0,1,3,4,");
}

// Member 0 leads every view change.
TEST_F(NativeGroup, TheLeaderKilledIsReplaced) { expect_killed_member_left_out(*this, 4, 0, "1,2,3,"); }

TEST_F(NativeGroup, ASilentMemberIsFencedWhenItComesBack) {
  Plan plan;
  plan.rounds = 80;
  start(plan);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Stopped: alive, its connections open, silent (a node cut away).
  ::kill(pids_[3], SIGSTOP);
  for (int i : {0, 1, 2}) {
    EXPECT_EQ(wait_for(i), kDone) << read_report(i);
    EXPECT_EQ(read_report(i), "1 0,1,2, 80\n");
  }
  // Back, it must not complete anything with them: it learns that it was
  // left out and leaves with an error (or gives up: nobody answers any
  // more once the others have left).
  ::kill(pids_[3], SIGCONT);
  const int status = wait_for(3);
  EXPECT_TRUE(status == kFenced || status == kGaveUp) << status << ": " << read_report(3);
  EXPECT_EQ(read_report(3).rfind("error ", 0), 0u) << read_report(3);
}

TEST_F(NativeGroup, AHealedPartitionLearnsItWasFenced) {
  Plan plan;
  plan.rounds = 400;  // the others are still running when it comes back
  start(plan);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(pids_[1], SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // heartbeat timeout and a view change
  ::kill(pids_[1], SIGCONT);
  EXPECT_EQ(wait_for(1), kFenced) << read_report(1);
  EXPECT_NE(read_report(1).find("was left out of view 1"), std::string::npos) << read_report(1);
  for (int i : {0, 2, 3}) {
    EXPECT_EQ(wait_for(i), kDone) << read_report(i);
    EXPECT_EQ(read_report(i), "1 0,2,3, 400\n");
  }
}

TEST_F(NativeGroup, HalfWithoutTheLowestGivesUpInsteadOfDecidingAlone) {
  Plan plan;
  plan.rounds = 1000;
  plan.settings.recovery_timeout = 1.5;
  start(plan);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(pids_[0], SIGSTOP);
  ::kill(pids_[1], SIGSTOP);
  for (int i : {2, 3}) {
    EXPECT_EQ(wait_for(i), kGaveUp) << read_report(i);
    EXPECT_NE(read_report(i).find("no new view"), std::string::npos) << read_report(i);
  }
}

// The end of a job with spares under the native membership: the three
// members finish; two say Bye, the third dies before it could (its
// connections reset). The two spares' view change then has no quorum of
// five, and nobody is left to decide with: a spare that names the members
// as needed stops waiting at once instead of for the recovery timeout, and
// learns from the Bye that the job finished.
TEST_F(NativeGroup, ASpareStopsWaitingOnceEveryMemberIsGone) {
  Plan plan;
  plan.processes = 5;
  plan.settings.recovery_timeout = 30;
  start(plan, [&](int i, Group& group) {
    try {
      if (!group.allgather("end", 10)) return kWrong;
      // Members go once the others had time to complete the all-gather too
      // (one that leaves at once can close its connections before a slower
      // process has all the all-gather's frames).
      if (i <= 2)
        for (int turn = 0; turn < 30; ++turn) group.progress(10);
      if (i == 2) ::_exit(kDone);  // no Bye
      if (i < 2) {
        group.leave();
        return kDone;
      }
      const auto began = std::chrono::steady_clock::now();
      const auto seconds = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      };
      while (!group.changing() && seconds() < 10) group.progress(10);
      if (!group.changing()) return kWrong;
      Group::Change change = group.recover(false, {0, 1, 2});
      // Under load member 0 or 1 may see member 2's death before it
      // leaves: the view change then installs a view with it, without 2.
      // Its Bye then comes in that view (the spares abandon the change it
      // starts, or find every member gone at once).
      const auto all_gone = [&] { return group.gone(0) && group.gone(1) && group.gone(2); };
      while (!change.abandoned && change.lost.size() < 3 && seconds() < 10) {
        while (!group.changing() && !all_gone() && seconds() < 10) group.progress(10);
        if (!group.changing() && !all_gone()) return kWrong;
        change = group.recover(false, {0, 1, 2});
      }
      std::ofstream(report(i)) << (change.abandoned ? "abandoned" : "installed")
                               << (group.said_bye(0) && group.said_bye(1) ? " after Bye" : " without Bye")
                               << (seconds() < 5 ? " at once" : " late") << "\n";
      return kDone;
    } catch (...) {
      return ended_by(std::current_exception(), report(i));
    }
  });
  for (int i = 0; i < 3; ++i) EXPECT_EQ(wait_for(i), kDone) << i;
  for (int i : {3, 4}) {
    EXPECT_EQ(wait_for(i), kDone) << read_report(i);
    EXPECT_EQ(read_report(i), "abandoned after Bye at once\n");
  }
}

}  // namespace
}  // namespace ringmend::membership::native
