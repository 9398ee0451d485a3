// The shared-memory data path with real processes: forked ranks on one
// segment, checked results, mismatched calls, and a SIGKILLed rank noticed
// by its peers through its pidfd (no MPI involved).
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <vector>

#include "coll/pipeline_tuner.hpp"
#include "coll/selector.hpp"
#include "ringmend/core/error.hpp"
#include "transport/shm_node.hpp"

namespace ringmend::transport {
namespace {

using coll::AllreduceArgs;

enum Exit { kOk = 0, kWrong = 1, kInterrupted = 2, kMismatch = 3, kTimedOut = 4, kOther = 5 };

class TestWait : public WaitContext {
 public:
  explicit TestWait(std::function<void(Phase, int)> on = {}) : on_(std::move(on)) {}
  void check() override {
    if (std::chrono::steady_clock::now() > deadline_) throw std::runtime_error("timed out");
  }
  void on_phase(Phase p, int step) override {
    if (on_) on_(p, step);
  }

 private:
  std::function<void(Phase, int)> on_;
  std::chrono::steady_clock::time_point deadline_ =
      std::chrono::steady_clock::now() + std::chrono::seconds(20);
};

std::string unique_name() {
  static int n = 0;
  return "/ringmend-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

// Runs body(local, node) in `ranks` forked processes sharing one segment and
// returns their exit codes.
std::vector<int> run_ranks(int ranks, std::size_t chunk, std::size_t small,
                           const std::function<int(int, ShmNode&)>& body) {
  const auto layout = ShmLayout::make(ranks, 4 * chunk, small);  // `chunk`, 4 deep without a tuner
  const std::string name = unique_name();
  ShmSegment segment = ShmSegment::create(name, layout.total);
  int go[2];
  if (::pipe(go) != 0) throw std::runtime_error("pipe");
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(go[1]);
      std::vector<pid_t> all(static_cast<std::size_t>(ranks));
      const auto want = static_cast<ssize_t>(all.size() * sizeof(pid_t));
      if (::read(go[0], all.data(), all.size() * sizeof(pid_t)) != want) ::_exit(kOther);
      int code = kOther;
      try {
        ShmNode node(ShmSegment::attach(name, layout.total).value(), layout, r, all);
        code = body(r, node);
        // Like finalize: leave only once every rank is done with the segment.
        TestWait wait;
        shm_wait(node, wait, [&] { return node.all_at_least(&ShmRankControl::done, node.calls); });
      } catch (const Interrupted&) {
        code = kInterrupted;
      } catch (const Mismatch&) {
        // Stay a moment, as a rank in recovery would, so that peers read
        // this rank's descriptor rather than see it exit.
        ::usleep(300 * 1000);
        code = kMismatch;
      } catch (const std::runtime_error& e) {
        code = std::string(e.what()) == "timed out" ? kTimedOut : kOther;
      } catch (...) {
      }
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  ::close(go[0]);
  for (int r = 0; r < ranks; ++r)
    if (::write(go[1], pids.data(), pids.size() * sizeof(pid_t)) < 0) break;
  ::close(go[1]);
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  // The children attached long ago: the name must go, the test checks it.
  segment.unlink();
  return codes;
}

// One node of `ranks` ranks, as an epoch's plan gives it.
coll::Layout node_layout(int ranks) {
  coll::Layout h;
  h.node_shm = true;
  for (int r = 0; r < ranks; ++r) h.local_ranks.push_back(r);
  h.ring = h.local_ranks;
  h.leaders = {0};
  h.rails = ranks;
  return h;
}

// The algorithm the selector picks for this call (one-shot up to
// `small_bytes`, pipelined above), run on the node's segment alone.
void hierarchical_allreduce(ShmNode& node, std::nullptr_t, const coll::Layout& h, const AllreduceArgs& a,
                            TestWait& wait, std::size_t small_bytes, coll::PipelineTuner* tuner = nullptr) {
  coll::Call call;
  call.kind = coll::CollectiveKind::Allreduce;
  call.allreduce = a;
  // Without a tuner: the buffers cut into 4 chunks, always.
  coll::PipelineTuner fixed(node.layout().buffer_bytes, {node.layout().buffer_bytes / 4, 4}, false);
  const coll::Tuning tuning{small_bytes, 0, tuner ? tuner : &fixed};
  coll::select(call.kind, a.bytes(), h, tuning).run(call, {&node, nullptr, nullptr}, h, tuning, wait);
}

template <class T>
T input_value(int rank, std::size_t i) {
  return static_cast<T>((rank + 1) * 3 + static_cast<int>(i % 101) - 50);
}

template <class T>
int allreduce_and_check(ShmNode& node, int ranks, std::size_t count, DataType type, int calls,
                        coll::PipelineTuner* tuner = nullptr, int first_call = 1) {
  const coll::Layout h = node_layout(ranks);
  std::vector<T> in(count), out(count);
  for (int call = first_call; call < first_call + calls; ++call) {
    for (std::size_t i = 0; i < count; ++i) in[i] = input_value<T>(node.local() + call, i);
    TestWait wait;
    AllreduceArgs a{in.data(), out.data(), count, type, ReduceOp::Sum, static_cast<std::uint64_t>(call)};
    hierarchical_allreduce(node, nullptr, h, a, wait, {1024}, tuner);
    for (std::size_t i = 0; i < count; ++i) {
      T want = 0;
      for (int r = 0; r < ranks; ++r) want = static_cast<T>(want + input_value<T>(r + call, i));
      if (out[i] != want) return kWrong;
    }
  }
  return kOk;
}

class ShmAllreduce : public ::testing::TestWithParam<std::tuple<int, std::size_t>> {};

TEST_P(ShmAllreduce, MatchesTheSerialSum) {
  const auto [ranks, count] = GetParam();
  auto codes = run_ranks(ranks, 16 * 1024, 1024, [&, ranks = ranks, count = count](int, ShmNode& node) {
    int c = allreduce_and_check<float>(node, ranks, count, DataType::Float32, 3);
    if (c == kOk) c = allreduce_and_check<std::int64_t>(node, ranks, count, DataType::Int64, 3);
    return c;
  });
  for (int c : codes) EXPECT_EQ(c, kOk);
}

// 1 element (one-shot), just above the one-shot limit, several chunks with
// an odd tail, and more chunks than the pipeline depth many times over.
INSTANTIATE_TEST_SUITE_P(RanksAndSizes, ShmAllreduce,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::Values(std::size_t{1}, std::size_t{257},
                                                              std::size_t{12289}, std::size_t{100003})));

// While local rank 0's tuner tries its candidates, consecutive calls cut
// the buffers differently (64 KiB x 4, then 128 KiB x 2, ...): every result
// stays exact, whatever the other ranks' tuners would have chosen, and the
// tuner settles on one shape per size class.
TEST(ShmAllreduce, ShapeChangingBetweenCallsKeepsResultsExact) {
  for (int ranks : {2, 3}) {
    auto codes = run_ranks(ranks, 64 * 1024, 1024, [ranks](int local, ShmNode& node) -> int {
      // Other ranks tune towards other shapes: only rank 0's counts.
      coll::PipelineTuner tuner(node.layout().buffer_bytes, {64 * 1024, 4}, local == 0);
      const std::size_t counts[] = {100003, 12289, 70001, 100003, 257, 65536};
      int call = 1;
      for (int round = 0; round < 3 * coll::PipelineTuner::kTrials; ++round)
        for (std::size_t count : counts) {
          const int c = allreduce_and_check<float>(node, ranks, count, DataType::Float32, 1, &tuner, call++);
          if (c != kOk) return c;
        }
      if (local == 0 && !tuner.chosen(100003 * sizeof(float), ranks)) return kOther;
      return kOk;
    });
    for (int c : codes) EXPECT_EQ(c, kOk) << ranks << " ranks";
  }
}

TEST(ShmAllreduceErrors, DifferentCountsAreAMismatchOnEveryRank) {
  auto codes = run_ranks(3, 16 * 1024, 1024, [](int r, ShmNode& node) {
    const coll::Layout h = node_layout(3);
    const std::size_t count = r == 1 ? 5000 : 100;  // one-shot on two ranks, pipelined on one
    std::vector<float> in(count, 1.0f), out(count);
    TestWait wait;
    hierarchical_allreduce(node, nullptr, h,
                           {in.data(), out.data(), count, DataType::Float32, ReduceOp::Sum, 1}, wait, {1024});
    return kOk;
  });
  for (int c : codes) EXPECT_EQ(c, kMismatch);
}

TEST(ShmAllreduceFailures, AKilledRankIsNoticedByItsPeers) {
  const auto start = std::chrono::steady_clock::now();
  auto codes = run_ranks(3, 16 * 1024, 1024, [](int r, ShmNode& node) {
    const coll::Layout h = node_layout(3);
    const std::size_t count = 200000;
    std::vector<float> in(count, 1.0f), out(count);
    TestWait wait([r](Phase p, int step) {
      if (r == 2 && p == Phase::ReduceScatter && step == 5) ::raise(SIGKILL);
    });
    hierarchical_allreduce(node, nullptr, h,
                           {in.data(), out.data(), count, DataType::Float32, ReduceOp::Sum, 1}, wait, {1024});
    return kOk;
  });
  EXPECT_EQ(codes[0], kInterrupted);
  EXPECT_EQ(codes[1], kInterrupted);
  EXPECT_EQ(codes[2], 128 + SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// Nobody waits for a creator: a local rank whose leader died before it made
// the segment opens it all the same (the epoch's agreement then finds the
// death), and ranks that race to open it share one zeroed segment.
TEST(ShmNodeOpen, OpensWithoutItsLeader) {
  pid_t zombie = ::fork();
  if (zombie == 0) ::_exit(0);
  const auto layout = ShmLayout::make(2, 64 * 1024, 1024);
  const std::string name = unique_name();
  const auto start = std::chrono::steady_clock::now();
  auto node = ShmNode::open(name, layout, 1, {zombie, ::getpid()});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(node->control(1).done.load(), 0u);
  ShmSegment::unlink_name(name);
  ::waitpid(zombie, nullptr, 0);
}

TEST(ShmNodeOpen, RacingRanksShareOneSegment) {
  const std::string name = unique_name();
  constexpr int kRanks = 8;
  constexpr std::size_t kBytes = 1 << 20;
  std::vector<pid_t> children;
  for (int r = 0; r < kRanks; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      try {
        ShmSegment s = ShmSegment::open_shared(name, kBytes);
        s.reserve(static_cast<std::size_t>(r) * 4096, 4096);
        auto* word = reinterpret_cast<std::atomic<int>*>(s.data() + static_cast<std::size_t>(r) * 4096);
        if (word->load() != 0) ::_exit(2);  // not zeroed
        word->store(r + 1);
        // Wait until every rank has written its word into the same memory.
        for (int spins = 0; spins < 20'000'000; ++spins) {
          int seen = 0;
          for (int q = 0; q < kRanks; ++q)
            seen +=
                reinterpret_cast<std::atomic<int>*>(s.data() + static_cast<std::size_t>(q) * 4096)->load() ==
                q + 1;
          if (seen == kRanks) ::_exit(0);
          if (spins % 1000 == 0) ::sched_yield();
        }
        ::_exit(3);
      } catch (...) {
        ::_exit(4);
      }
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  ShmSegment::unlink_name(name);
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + name));
  // A segment of another size under the same name is an error, not a
  // mapping past its end.
  ShmSegment small = ShmSegment::open_shared(name, 4096);
  EXPECT_THROW(ShmSegment::open_shared(name, 8192), std::runtime_error);
  ShmSegment::unlink_name(name);
}

TEST(ShmSegmentLifetime, NothingIsLeftInDevShm) {
  const std::string name = unique_name();
  {
    ShmSegment s = ShmSegment::create(name, 1 << 20);
    auto other = ShmSegment::attach(name, 1 << 20);
    ASSERT_TRUE(other.has_value());
    EXPECT_TRUE(std::filesystem::exists("/dev/shm" + name));
  }
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + name));
  EXPECT_THROW(ShmSegment::create("/ringmend-test-no/slash", 4096), std::runtime_error);
}

// A process's own segment names go at its end, whoever created them.
TEST(ShmSegmentLifetime, NamesOfOneLeaderAreRemovedTogether) {
  const std::string prefix = unique_name().substr(1) + "-leader-";
  const std::string other = unique_name();
  {
    ShmSegment a = ShmSegment::open_shared("/" + prefix + "e0", 4096);
    ShmSegment b = ShmSegment::open_shared("/" + prefix + "e0-p2p", 4096);
    ShmSegment c = ShmSegment::open_shared(other, 4096);
    ShmSegment::unlink_names_starting_with(prefix);
    EXPECT_FALSE(std::filesystem::exists("/dev/shm/" + prefix + "e0"));
    EXPECT_FALSE(std::filesystem::exists("/dev/shm/" + prefix + "e0-p2p"));
    EXPECT_TRUE(std::filesystem::exists("/dev/shm" + other));
  }
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + other));
}

// A full /dev/shm is a clear error, not a SIGBUS at the first write: in a
// child with its own mount namespace and a 1 MiB /dev/shm, a node whose
// pipeline buffers (8 MiB) do not fit opens, and its first large allreduce
// fails with the reason, in step (the next call tries again).
TEST(ShmSegmentLifetime, FullDevShmIsAClearError) {
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(report[0]);
    auto say = [&](const std::string& what, int code) {
      (void)!::write(report[1], what.data(), what.size());
      ::_exit(code);
    };
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=1m") != 0)
      say(std::string("cannot mount a small /dev/shm here: ") + std::strerror(errno), 2);
    try {
      const std::string name = unique_name();
      const ShmLayout layout = ShmLayout::make(1, 8 << 20, 16 << 10);  // > 8 MiB
      ShmSegment segment = ShmSegment::create(name, layout.total);     // sized only: fits
      ShmNode node(std::move(segment), layout, 0, {::getpid()});
      const coll::Layout h = node_layout(1);
      std::vector<float> in(1 << 18, 1.0f), out(in.size());
      for (int call = 1; call <= 2; ++call) {
        TestWait wait;
        try {
          hierarchical_allreduce(node, nullptr, h,
                                 {in.data(), out.data(), in.size(), DataType::Float32, ReduceOp::Sum,
                                  static_cast<std::uint64_t>(call)},
                                 wait, {1024});
          say("a 1 MiB allreduce ran with 8 MiB of buffers in a 1 MiB /dev/shm", 1);
        } catch (const Error& e) {
          const std::string what = e.what();
          if (what.find("/dev/shm full") == std::string::npos || e.code() != Errc::Internal)
            say("call " + std::to_string(call) + ": " + what, 1);
        }
      }
      say("", 0);
    } catch (const std::exception& e) {
      say(std::string("unexpected: ") + e.what(), 1);
    }
  }
  ::close(report[1]);
  std::string text(512, '\0');
  const ssize_t got = ::read(report[0], text.data(), text.size());
  text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  ::close(report[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == 2) GTEST_SKIP() << text << " (needs root or user namespaces)";
  EXPECT_EQ(WEXITSTATUS(status), 0) << text;
}

}  // namespace
}  // namespace ringmend::transport
