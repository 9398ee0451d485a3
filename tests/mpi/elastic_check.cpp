// Every sample exactly once per epoch, whatever ranks die, join or leave.
//
// Each step, every rank takes its share of the epoch's samples from an
// ElasticSampler and contributes a count vector (one per sample id it
// processed); the allreduced sums are added up over the epoch. At the end
// of every epoch each sample's sum must be exactly 1: a sample that no
// result contains was lost, one counted twice was repeated. The sums, the
// sampler and the step are registered state, so a spare admitted for a
// killed rank resumes the step it joins. Grow and release at chosen steps.
//
//   elastic_check [--samples=N] [--per-rank=B] [--epochs=E] [--grow-at=S --grow=K]
//                 [--release-at=S --release=R[,R...]] [--expect-size=N] [--step-ms=MS]
//                 [--work-ms=MS]   (each step computes for MS of this process's CPU
//                                   time: a CPU-throttled member is slower by as much)
//                 [--expect-members=ID,ID...]   (the member ids at the end, by rank)
//                 [--expect-lost=ID,ID...]      (members whose loss every member is told of)
//                 [--pid-dir=D]   (a member writes D/rank<world rank>.pid once started)
//                 [--state-before-start]   (the sums are given to the Runtime: a joiner
//                                           receives them in place, StateBuffer)
//                 [--wrong-state-on=W]     (and world rank W gives one element more: as a
//                                           joiner it must fail with a clear error)
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ringmend/elastic_sampler.hpp"
#include "ringmend/ringmend.hpp"
#include "test_data.hpp"

namespace {

std::string arg(int argc, char** argv, const char* name, const std::string& fallback) {
  const std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) return argv[i] + prefix.size();
  return fallback;
}

long number(int argc, char** argv, const char* name, long fallback) {
  return std::atol(arg(argc, argv, name, std::to_string(fallback)).c_str());
}

// Computes for `ms` of this thread's CPU time (not wall time: a member
// given a tenth of a CPU by its cgroup takes ten times as long).
void spend_cpu(long ms) {
  const auto cpu_now = [] {
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  };
  const double until = cpu_now() + static_cast<double>(ms) * 1e-3;
  volatile double x = 1;
  while (cpu_now() < until)
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
}

int check(int argc, char** argv) {
  ringmend::testing::require_known_options(
      argc, argv,
      {"samples", "per-rank", "epochs", "grow-at", "grow", "release-at", "release", "expect-size", "step-ms",
       "wrong-state-on", "state-before-start", "pid-dir", "expect-members", "work-ms", "expect-lost"});
  const auto samples = static_cast<std::uint64_t>(number(argc, argv, "samples", 500));
  const auto per_rank = static_cast<std::uint32_t>(number(argc, argv, "per-rank", 7));
  const auto epochs = static_cast<std::uint64_t>(number(argc, argv, "epochs", 3));
  const long grow_at = number(argc, argv, "grow-at", -1), grow = number(argc, argv, "grow", 1);
  const long release_at = number(argc, argv, "release-at", -1);
  const std::vector<int> release = ringmend::testing::int_list(arg(argc, argv, "release", ""));
  const long expect_size = number(argc, argv, "expect-size", -1);
  const long step_ms = number(argc, argv, "step-ms", 0);
  const long work_ms = number(argc, argv, "work-ms", 0);

  // World rank W of --wrong-state-on registers a buffer of another size.
  const char* world_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const long wrong_on = number(argc, argv, "wrong-state-on", -1);
  const bool wrong_here = wrong_on >= 0 && world_rank != nullptr && std::atol(world_rank) == wrong_on;
  const bool before_start = wrong_on >= 0 || arg(argc, argv, "state-before-start", "-") != "-";
  std::vector<std::int64_t> sums(samples + (wrong_here ? 1 : 0), 0), contribution(samples + 1);
  std::vector<ringmend::StateBuffer> state;
  if (before_start) state.push_back({"sums", sums.data(), sums.size() * sizeof(std::int64_t)});
  std::optional<ringmend::Runtime> started;
  try {
    started.emplace(&argc, &argv, ringmend::Options{}, state);
  } catch (const ringmend::Error& e) {
    const std::string expected = "register_state('sums'): this joiner registers";
    if (!wrong_here || e.code() != ringmend::Errc::InvalidArgument ||
        std::string(e.what()).find(expected) != 0)
      throw;
    std::printf("TEST PASSED world rank %ld: a joiner with state of another size is told: %s\n", wrong_on,
                e.what());
    return 0;
  }
  ringmend::Runtime& rt = *started;
  ringmend::Communicator& comm = rt.world();
  const int me = comm.member_id();
  if (const std::string dir = arg(argc, argv, "pid-dir", ""); !dir.empty() && !comm.joined())
    std::ofstream(dir + "/rank" + std::to_string(me) + ".pid") << ::getpid() << "\n";

  ringmend::ElasticSampler sampler(samples, per_rank, 11);
  std::int64_t step = 0;
  int failures = 0, changes_seen = 0;
  sampler.register_state(comm, "sampler");
  if (!before_start) comm.register_state("sums", std::span<std::int64_t>(sums));
  comm.register_state("step", &step, sizeof step);
  if (comm.joined())
    std::printf("member %d joined at rank %d of %d, step %lld, epoch %llu\n", me, comm.rank(), comm.size(),
                static_cast<long long>(step), static_cast<unsigned long long>(sampler.epoch()));
  // --expect-lost=ID,...: every member there from the start must be told of
  // each listed member's loss (with spares the size alone cannot show that
  // the fault landed).
  const std::vector<int> expect_lost = ringmend::testing::int_list(arg(argc, argv, "expect-lost", ""));
  std::vector<int> told_lost;
  comm.on_membership_change([&](const ringmend::MembershipChange& m) {
    ++changes_seen;
    told_lost.insert(told_lost.end(), m.lost.begin(), m.lost.end());
  });

  while (sampler.epoch() < epochs) {
    const std::uint64_t epoch = sampler.epoch();
    const std::vector<std::uint64_t> batch = sampler.next(comm);
    std::fill(contribution.begin(), contribution.end(), 0);
    for (std::uint64_t id : batch) ++contribution[id];
    contribution[samples] = 1;  // ranks that contributed
    if (step_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
    if (work_ms > 0) spend_cpu(work_ms);
    const ringmend::CollectiveResult r =
        comm.allreduce(std::span<std::int64_t>(contribution), ringmend::ReduceOp::Sum);
    // Released as a straggler (RINGMEND_STRAGGLER_POLICY=release) before
    // this step's call: the others deal this member's samples out again.
    if (r.left) {
      std::printf("member %d released as a straggler before step %lld, after %d sample errors\n", me,
                  static_cast<long long>(step + 1), failures);
      return failures == 0 ? 0 : 1;
    }
    for (std::uint64_t i = 0; i < samples; ++i) sums[i] += contribution[i];
    sampler.complete(comm);
    ++step;
    if (r.recovered && comm.rank() == 0)
      std::printf("step %lld: recovered (lost %zu, joined %zu), %d ranks contributed\n",
                  static_cast<long long>(step), r.lost.size(), r.joined.size(),
                  static_cast<int>(contribution[samples]));
    if (sampler.epoch() != epoch) {
      int wrong = 0;
      for (std::uint64_t i = 0; i < samples; ++i)
        if (sums[i] != 1) {
          if (++wrong <= 5)
            std::printf("TEST FAILED member %d: epoch %llu: sample %llu counted %lld times\n", me,
                        static_cast<unsigned long long>(epoch), static_cast<unsigned long long>(i),
                        static_cast<long long>(sums[i]));
        }
      failures += wrong;
      std::fill(sums.begin(), sums.end(), 0);
    }
    if (step == grow_at) {
      const ringmend::CollectiveResult g = comm.grow(static_cast<int>(grow));
      if (comm.rank() == 0)
        std::printf("step %lld: grow(%ld): %zu joined, %d ranks\n", static_cast<long long>(step), grow,
                    g.joined.size(), comm.size());
    }
    if (step == release_at) {
      const ringmend::CollectiveResult g = comm.release(release);
      if (g.left) {
        std::printf("member %d released at step %lld, after %d sample errors\n", me,
                    static_cast<long long>(step), failures);
        return failures == 0 ? 0 : 1;
      }
      if (comm.rank() == 0)
        std::printf("step %lld: released %zu: %d ranks\n", static_cast<long long>(step), g.released.size(),
                    comm.size());
    }
  }
  if (expect_size >= 0 && comm.size() != expect_size) {
    std::printf("TEST FAILED member %d: ended with %d ranks, expected %ld\n", me, comm.size(), expect_size);
    ++failures;
  }
  if (const std::string ids = arg(argc, argv, "expect-members", "");
      !ids.empty() && comm.member_ids() != ringmend::testing::int_list(ids)) {
    std::string got;
    for (int id : comm.member_ids()) got += (got.empty() ? "" : ",") + std::to_string(id);
    std::printf("TEST FAILED member %d: ended with members %s (by rank), expected %s\n", me, got.c_str(),
                ids.c_str());
    ++failures;
  }
  for (const int id : expect_lost) {
    if (comm.joined() || std::find(told_lost.begin(), told_lost.end(), id) != told_lost.end()) continue;
    std::printf("TEST FAILED member %d: never told of member %d's loss (the fault did not land)\n", me, id);
    ++failures;
  }
  if (failures == 0)
    std::printf(
        "TEST PASSED member %d: %llu epochs of %llu samples, %lld steps, %d ranks at the end, %d changes\n",
        me, static_cast<unsigned long long>(epochs), static_cast<unsigned long long>(samples),
        static_cast<long long>(step), comm.size(), changes_seen);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return check(argc, argv);
  } catch (const ringmend::Error& e) {
    std::printf("TEST FAILED: %s (%s)\n", e.what(), ringmend::to_string(e.code()));
    return 1;
  }
}
