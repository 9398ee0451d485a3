// A spare in a 2 x 2 mesh, by recovery of the step (docs/subgroups.md,
// "Recovery by the step"): 4 members and 1 spare (RINGMEND_SPARES=1),
// RINGMEND_SUBGROUP_RECOVERY=step set in code, the layout of HSDP:
//
//   rank r holds shard r % 2 of the model; its row {2(r/2), 2(r/2)+1}
//   holds the whole model (the shard groups), its column {r % 2, r % 2 + 2}
//   the replicas of its shard. Each step s:
//     model = row.allgather(shard)               (both shards)
//     grad  = model's two halves + rank r's data of step s
//     g     = column.allreduce(grad)             (the replicas' sum)
//     vote  = world.allreduce(failed, Max)       (0: every call succeeded)
//     vote 0: shard = (shard + g) mod 1000, step + 1 (the commit)
//     else:   nothing is committed; the rows and columns are made again
//             (group(): no world call), a member admitted meanwhile gets
//             its shard from its column's other replica (a broadcast),
//             and the step runs again
//   Integers mod 1000 in Int32: exact. At the end every rank compares its
//   shard with a serial replay of every step, and with the other replica's.
//
//   --kill=PHASE  member 1 SIGKILLs itself in step 3: inside its row's
//                 allgather or its column's allreduce (a timer fires
//                 inside the 8 MiB call), between them (compute), or just
//                 before the vote (vote). The survivors' rows and columns
//                 end with MemberLost, the step is voted down, the spare
//                 is admitted in member 1's rank at the vote, receives
//                 member 1's shard from member 3, and the job ends with 4
//                 ranks, the spare among them, every shard exact.
//   --pid-dir=DIR writes DIR/memberN.pid, for a killer outside
//                 (spare_kill_random.sh); a member lost after the last
//                 vote then ends the last check's column.
//   --steps=N, --count=N (elements per shard).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ringmend/ringmend.hpp"

using namespace ringmend;

namespace {

std::string option(int argc, char** argv, const std::string& name, const std::string& fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind(prefix, 0) == 0) return std::string(argv[i]).substr(prefix.size());
  return fallback;
}

int failures = 0;
void expect(bool ok, const std::string& what, int me) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "member %d: FAILED: %s\n", me, what.c_str());
}

constexpr std::int32_t kModulus = 1000;

std::int32_t initial(int shard, std::size_t i) {
  return static_cast<std::int32_t>((i * 7 + static_cast<std::size_t>(shard) * 101) % kModulus);
}
std::int32_t data(int rank, int step, std::size_t i) {
  return static_cast<std::int32_t>(
      (static_cast<std::size_t>(rank) * 31 + static_cast<std::size_t>(step) * 17 + i * 3) % kModulus);
}

// Rank r's gradient in step s from the whole model (both shards).
std::vector<std::int32_t> gradient(const std::vector<std::int32_t>& model, int rank, int step) {
  const std::size_t n = model.size() / 2;
  std::vector<std::int32_t> g(n);
  for (std::size_t i = 0; i < n; ++i) g[i] = (model[i] + model[n + i] + data(rank, step, i)) % kModulus;
  return g;
}

// Both shards after `steps` steps without a failure.
std::vector<std::vector<std::int32_t>> replay(std::size_t n, int steps) {
  std::vector<std::vector<std::int32_t>> shard(2, std::vector<std::int32_t>(n));
  for (int c = 0; c < 2; ++c)
    for (std::size_t i = 0; i < n; ++i) shard[static_cast<std::size_t>(c)][i] = initial(c, i);
  for (int s = 0; s < steps; ++s) {
    std::vector<std::int32_t> model(shard[0]);
    model.insert(model.end(), shard[1].begin(), shard[1].end());
    for (int c = 0; c < 2; ++c) {
      // The column of shard c: ranks c and c + 2 (rows hold the same model).
      const auto a = gradient(model, c, s), b = gradient(model, c + 2, s);
      for (std::size_t i = 0; i < n; ++i)
        shard[static_cast<std::size_t>(c)][i] =
            (shard[static_cast<std::size_t>(c)][i] + a[i] + b[i]) % kModulus;
    }
  }
  return shard;
}

void die_in(int delay_ms) {
  std::thread([delay_ms] {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    raise(SIGKILL);
  }).detach();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string kill_phase = option(argc, argv, "kill", "");
  const std::string pid_dir = option(argc, argv, "pid-dir", "");
  const int steps = std::stoi(option(argc, argv, "steps", "8"));
  const std::size_t n = std::stoul(option(argc, argv, "count", "1048576"));
  constexpr int kVictim = 1, kKillStep = 3;

  Options options;
  options.subgroup_recovery = SubgroupRecovery::Step;
  Runtime rt(&argc, &argv, options);
  Communicator& world = rt.world();
  const int me = world.member_id();
  if (!pid_dir.empty())
    std::ofstream(pid_dir + "/member" + std::to_string(me) + ".pid") << ::getpid() << "\n";
  if (world.size() != 4) {
    std::fprintf(stderr, "member %d: run with 4 ranks and RINGMEND_SPARES=1\n", me);
    return 2;
  }
  // The registered state: a spare admitted later gets the step and a
  // survivor's shard (its own shard comes from its column afterwards).
  std::int64_t step = 0;
  std::vector<std::int32_t> shard(n);
  for (std::size_t i = 0; i < n; ++i) shard[i] = initial(world.rank() % 2, i);
  world.register_state("step", &step, sizeof step);
  world.register_state("shard", shard.data(), n * sizeof(std::int32_t));
  const bool spare = world.joined();
  if (spare) std::printf("member %d: admitted as rank %d at step %lld\n", me, world.rank(), (long long)step);

  std::unique_ptr<Communicator> row, column;
  bool remake = true, fresh = spare, first_vote = spare;
  int votes_down = 0, admitted = 0;
  std::vector<std::int32_t> next(n);  // the step's shard, until the vote commits it
  std::vector<double> vote_us;        // the votes that recovered nothing
  while (step < steps) {
    const int s = static_cast<int>(step);
    std::int32_t failed = 0;
    // A spare's first call is the vote the members are in: it has run no
    // step, so it votes the step down.
    if (first_vote) {
      failed = 1;
      first_vote = false;
    } else {
      try {
        const int r = world.rank();
        if (remake) {
          const std::vector<int> row_ranks{r / 2 * 2, r / 2 * 2 + 1}, column_ranks{r % 2, r % 2 + 2};
          row = world.group(row_ranks);
          column = world.group(column_ranks);
          // The shard comes from a replica that was there before: a spare's
          // is the state source's, of either shard.
          std::int32_t fresh_flags[2] = {0, 0};
          const std::int32_t mine = fresh ? 1 : 0;
          column->allgather(&mine, 1, DataType::Int32, fresh_flags, 2);
          const int source = fresh_flags[0] == 0 ? 0 : fresh_flags[1] == 0 ? 1 : -1;
          if (source < 0) {
            std::fprintf(stderr, "member %d: both replicas of shard %d were lost\n", me, r % 2);
            return 3;
          }
          column->broadcast(shard.data(), n * sizeof(std::int32_t), source);
          fresh = false;
          remake = false;
        }
        const bool victim = me == kVictim && s == kKillStep;
        if (victim && kill_phase == "row") die_in(2);
        std::vector<std::int32_t> model(2 * n);
        row->allgather(shard.data(), n, DataType::Int32, model.data(), model.size());
        if (victim && kill_phase == "compute") raise(SIGKILL);
        std::vector<std::int32_t> g = gradient(model, r, s);
        if (victim && kill_phase == "col") die_in(2);
        column->allreduce(g.data(), n, DataType::Int32, ReduceOp::Sum);
        if (victim && kill_phase == "vote") raise(SIGKILL);
        for (std::size_t i = 0; i < n; ++i) next[i] = (shard[i] + g[i]) % kModulus;
      } catch (const Error& e) {
        expect(e.code() == Errc::MemberLost, std::string("a step's error is MemberLost: ") + e.what(), me);
        std::printf("member %d: step %d: %s\n", me, s, e.what());
        failed = 1;
      }
    }
    const auto vote_start = std::chrono::steady_clock::now();
    const CollectiveResult v = world.allreduce(&failed, 1, DataType::Int32, ReduceOp::Max);
    if (!v.recovered)
      vote_us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - vote_start).count());
    admitted += static_cast<int>(v.joined.size());
    if (failed == 0) {
      std::copy(next.begin(), next.end(), shard.begin());  // the registered buffer stays where it is
      ++step;
    } else {
      ++votes_down;
      remake = true;
    }
  }

  const auto want = replay(n, steps);
  expect(shard == want[static_cast<std::size_t>(world.rank() % 2)],
         "shard " + std::to_string(world.rank() % 2) + " equals the serial replay's", me);
  // A member killed after the last vote (a kill from outside, in the
  // shutdown) ends the column here: then no spare replaces it.
  bool lost_after_the_last_vote = false;
  try {
    std::vector<std::int32_t> both(2 * n);
    column->allgather(shard.data(), n, DataType::Int32, both.data(), both.size());
    expect(std::equal(both.begin(), both.begin() + static_cast<long>(n), both.begin() + static_cast<long>(n)),
           "both replicas hold the same shard", me);
  } catch (const Error& e) {
    expect(e.code() == Errc::MemberLost && pid_dir.size() > 0, std::string("the last check: ") + e.what(),
           me);
    std::printf("member %d: a member was lost after the last vote: %s\n", me, e.what());
    lost_after_the_last_vote = true;
  }
  expect(world.size() == 4 || lost_after_the_last_vote,
         "the job kept its size (" + std::to_string(world.size()) + " ranks)", me);
  if (!kill_phase.empty()) {
    const std::vector<int> ids = world.member_ids();
    expect(std::find(ids.begin(), ids.end(), kVictim) == ids.end(), "member 1 is gone (the kill landed)", me);
    expect(votes_down >= 1, "the step was voted down at least once", me);
    expect(spare || admitted == 1, "the spare's admission was announced in a vote", me);
  }
  std::sort(vote_us.begin(), vote_us.end());
  if (!vote_us.empty())
    std::printf("member %d: vote %.1f / %.1f / %.1f us (min / median / max of %zu)\n", me, vote_us.front(),
                vote_us[vote_us.size() / 2], vote_us.back(), vote_us.size());
  std::printf("member %d: rank %d, %d steps, %d voted down%s\n", me, world.rank(), steps, votes_down,
              spare ? ", joined as a spare" : "");
  if (failures == 0) std::printf("TEST PASSED (member %d)\n", me);
  return failures == 0 ? 0 : 1;
}
