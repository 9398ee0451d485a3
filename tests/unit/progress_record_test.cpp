// The progress record and the rules of the hang detector
// (core/progress_record.hpp): a real child process writes its record, is
// judged from it, stopped and excluded through its pidfd.
#include "ringmend/core/progress_record.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace ringmend::progress {
namespace {

Observation seen(Phase phase, std::uint64_t seq, double idle) {
  Observation o;
  o.phase = phase;
  o.seq = seq;
  o.idle_seconds = idle;
  return o;
}

TEST(HangRule, StuckOnlyWhenBothWaitedTheHangTimeout) {
  // Not at the collective the judge waits in (#7), idle 5 s: stuck once the
  // judge itself waited 3 s.
  EXPECT_TRUE(is_stuck(seen(Phase::Application, 6, 5), 7, 3, 3));
  EXPECT_FALSE(is_stuck(seen(Phase::Application, 6, 5), 7, 2.9, 3));   // the judge waited too little
  EXPECT_FALSE(is_stuck(seen(Phase::Application, 6, 2.9), 7, 10, 3));  // it came recently
  EXPECT_FALSE(is_stuck(seen(Phase::Application, 7, 50), 7, 10, 3));   // it finished #7 already
  EXPECT_TRUE(is_stuck(seen(Phase::Collective, 7, 4), 7, 4, 3));       // inside one, no progress
  EXPECT_FALSE(is_stuck(seen(Phase::Recovery, 6, 50), 7, 50, 3));      // bounded by the recovery's own
  EXPECT_FALSE(is_stuck(seen(Phase::Finishing, 6, 50), 7, 50, 3));
  EXPECT_FALSE(is_stuck(seen(Phase::Collective, 7, 50), 7, 50, 0));  // 0: detection off
  EXPECT_TRUE(is_stuck_in_collective(seen(Phase::Collective, 7, 3), 3));
  EXPECT_FALSE(is_stuck_in_collective(seen(Phase::Application, 7, 50), 3));
}

// The launcher's rule compares stamps: a member that stamps every 20 ms,
// looked at every 100.1 ms, shows an age that grows by 0.1 ms per look for
// 200 looks (the two periods alias); it must never count as stuck.
TEST(HangRule, TheLauncherComparesStampsNotAges) {
  StillInCollective progressing, stopped;
  double worst = 0;
  for (int i = 0; i < 400; ++i) {
    const double t = 1 + i * 0.1001;                                           // monotonic time: never 0
    const auto stamp = static_cast<std::uint64_t>(t / 0.020) * 20'000'000ULL;  // every 20 ms
    Observation o = seen(Phase::Collective, 7, t - static_cast<double>(stamp) / 1e9);
    o.stamp_ns = stamp;
    worst = std::max(worst, progressing.look(o, 0.1001));
    Observation frozen = seen(Phase::Collective, 7, t);
    frozen.stamp_ns = 1;
    stopped.look(frozen, 0.1001);
  }
  EXPECT_EQ(worst, 0) << "a progressing member counted as stuck";
  Observation frozen = seen(Phase::Collective, 7, 40);
  frozen.stamp_ns = 1;
  EXPECT_GT(stopped.look(frozen, 0.1), 39.0);
  EXPECT_EQ(stopped.look(std::nullopt, 0.1), 0);  // no record: nothing counted
}

// A child with a record in phase `phase` at collective `seq` that then
// waits for ever without stamping it.
pid_t child_with_record(Phase phase, std::uint64_t seq, int member, CallSignature call = {}) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto record = OwnRecord::create();
    if (!record) ::_exit(3);
    record->set_member(member);
    record->enter(phase, seq, call);
    [[maybe_unused]] const auto n = ::write(ready[1], "x", 1);
    for (;;) ::pause();
  }
  char c;
  [[maybe_unused]] const auto n = ::read(ready[0], &c, 1);
  ::close(ready[0]);
  ::close(ready[1]);
  return pid;
}

// The stamps' coarse clock is the fine one at the kernel's tick: never
// ahead of it, at most a tick (4 ms) behind, and it moves.
TEST(ProgressRecord, TheCoarseClockIsTheMonotonicClockAtATick) {
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t coarse = coarse_monotonic_ns(), fine = monotonic_ns();
    ASSERT_LE(coarse, fine);
    ASSERT_LT(fine - coarse, 5'000'000u);
  }
  const std::uint64_t before = coarse_monotonic_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GT(coarse_monotonic_ns(), before);
}

TEST(ProgressRecord, ReadByAnotherProcessAndAgesWithoutStamps) {
  const pid_t pid = child_with_record(Phase::Collective, 42, 5, CallSignature{1000, 0x0102030400000000ULL});
  ASSERT_GT(pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto o = observe(pid);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->member, 5);
  EXPECT_EQ(o->phase, Phase::Collective);
  EXPECT_EQ(o->seq, 42u);
  EXPECT_EQ(o->call, (CallSignature{1000, 0x0102030400000000ULL}));
  EXPECT_GE(o->idle_seconds, 0.19);
  EXPECT_EQ(o->excluded_by, -1);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  // A record whose process is gone: nothing to judge, and nobody excluded.
  std::string why;
  EXPECT_FALSE(exclude(pid, 1, 1.0, why));
  remove_record(pid);
  EXPECT_FALSE(observe(pid));
  EXPECT_FALSE(observe(::getpid() + 1000000));  // no such record
}

TEST(ProgressRecord, ACollectiveNumberIsNeverReadWithAnotherCollectivesCall) {
  // The owner enters collective i with a call of count i, as fast as it
  // can; a reader must never pair a number with another one's call.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto record = OwnRecord::create();
    if (!record) ::_exit(3);
    [[maybe_unused]] const auto n = ::write(ready[1], "x", 1);
    for (std::uint64_t i = 1;; ++i) record->enter(Phase::Collective, i, CallSignature{i, ~i});
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  int known = 0;
  for (int look = 0; look < 20000; ++look) {
    const auto o = observe(pid);
    if (!o || !o->call.known()) continue;
    ++known;
    ASSERT_EQ(o->call.count, o->seq) << "look " << look;
    ASSERT_EQ(o->call.shape, ~o->seq) << "look " << look;
  }
  EXPECT_GT(known, 1000);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  remove_record(pid);
}

TEST(ProgressRecord, ExcludeKillsAStoppedProcessAndSaysWho) {
  const pid_t pid = child_with_record(Phase::Application, 7, 2);
  ASSERT_GT(pid, 0);
  ::kill(pid, SIGSTOP);
  for (int i = 0; i < 100 && process_state(pid) != 'T'; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(process_state(pid), 'T');
  std::string why;
  ASSERT_TRUE(exclude(pid, 3, 4.5, why)) << why;
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  // What the launcher reads after the end (before it removes the record).
  const auto o = observe(pid);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->excluded_by, 3);
  EXPECT_NEAR(o->excluded_after, 4.5, 0.01);
  remove_record(pid);
  EXPECT_EQ(process_state(pid), '\0');
}

// A judge reads the state of a node mate that another judge has just
// killed: the process may be reaped between the open and the read of
// /proc/<pid>/stat (read fails with ESRCH). That is "gone", not an error
// (a stream reader threw there, and the judge's rank crashed).
TEST(ProgressRecord, StateOfAProcessReapedWhileReadIsGone) {
  for (int round = 0; round < 200; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(0);
    std::thread reaper([pid] { ::waitpid(pid, nullptr, 0); });
    char state = 'R';
    for (int i = 0; i < 1000000 && state != '\0'; ++i) ASSERT_NO_THROW(state = process_state(pid));
    reaper.join();
    EXPECT_EQ(process_state(pid), '\0');
  }
}

// A reader that opens a record its owner has created but not yet sized
// (the owner's start, between its shm_open and its ftruncate) finds no
// record: mapping the empty file and reading it raised SIGBUS in the reader.
TEST(ProgressRecord, ARecordNotSizedYetIsNoRecord) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const std::string name = "/ringmend-progress-" + std::to_string(child);
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ::close(fd);
  EXPECT_FALSE(observe(child).has_value());
  std::string why;
  EXPECT_FALSE(exclude(child, 0, 1.0, why));
  ::shm_unlink(name.c_str());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace ringmend::progress
