// A loop of collectives during which ranks die (RINGMEND_FAULT, or kill -9
// from outside). Every survivor checks every result exactly against the
// reduction over the ranks that contributed to it, and at the end checks the
// membership it was told to expect.
//
//   fault_allreduce --iters=N --count=C [--expect-size=S]
//                   [--mode=allreduce|mixed|bcast|allgather|reduce_scatter|every|
//                           allgatherv|alltoall|uneven]
//                   [--expect-size-changed=CALL] [--allow-size-changed=yes]
//                   [--sleep-ms=M] [--pid-dir=D] [--expect-root-lost=CALL] [--allow-root-lost=yes]
//                   [--hang-member=ID --hang-at=ITERATION] [--expect-lost=ID[,ID...]]
//                   [--expect-members=ID,ID...]
// --hang-member: that member stops coming to the collectives at that
// iteration (it spins in its own code for ever, as a livelocked thread
// would): the hang detector must exclude it.
// --mode: mixed has a broadcast every third call; every cycles through
// allreduce, allgather, broadcast and reduce_scatter. --expect-size-changed:
// that call (a reduce_scatter a member dies in, no spare to replace it)
// fails with SizeChanged on every survivor (also an allgatherv's or an
// alltoall's: their counts were laid out for the old size). uneven
// alternates allgatherv and alltoall, whose blocks differ in size by rank,
// pair and iteration, some of them empty.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <thread>
#include <vector>

#include "test_data.hpp"

using namespace ringmend;
using namespace ringmend::testing;

int main(int argc, char** argv) {
  require_known_options(argc, argv,
                        {"iters", "count", "expect-size", "mode", "sleep-ms", "pid-dir", "expect-root-lost",
                         "expect-size-changed", "allow-root-lost", "allow-size-changed", "hang-member",
                         "hang-at", "expect-lost", "expect-members"});
  const int iters = std::stoi(option(argc, argv, "iters", "12"));
  const std::size_t count = std::stoul(option(argc, argv, "count", "100003"));
  const int expect_size = std::stoi(option(argc, argv, "expect-size", "-1"));
  const std::string mode = option(argc, argv, "mode", "allreduce");
  const int sleep_ms = std::stoi(option(argc, argv, "sleep-ms", "0"));
  const std::string pid_dir = option(argc, argv, "pid-dir", "");
  const long expect_root_lost = std::stol(option(argc, argv, "expect-root-lost", "-1"));
  const long expect_size_changed = std::stol(option(argc, argv, "expect-size-changed", "-1"));
  // With kills at random moments the root of a broadcast may be the victim:
  // RootLost is then the right answer, provided the root really is gone.
  const bool allow_root_lost = option(argc, argv, "allow-root-lost", "no") == "yes";
  // Likewise a call laid out for the size before a random kill: SizeChanged,
  // provided the size really changed.
  const bool allow_size_changed = option(argc, argv, "allow-size-changed", "no") == "yes";
  const int hang_member = std::stoi(option(argc, argv, "hang-member", "-1"));
  const int hang_at = std::stoi(option(argc, argv, "hang-at", "-1"));
  // --expect-lost=ID,...: every member started with the job must be told of
  // each listed member's loss (a spare keeps the size: this proves the
  // fault landed).
  const std::vector<int> expect_lost = int_list(option(argc, argv, "expect-lost", ""));
  // --expect-members=ID,...: the member ids at the end, by rank (which
  // spare took which place).
  const std::string expect_members = option(argc, argv, "expect-members", "");

  Runtime rt(&argc, &argv);
  Communicator& comm = rt.world();
  const int me = comm.member_id();
  // A rank lost while the Runtime started is already behind this epoch:
  // the callbacks below see only the changes after it.
  const std::uint64_t first_epoch = comm.epoch();
  if (!pid_dir.empty()) std::ofstream(pid_dir + "/rank" + std::to_string(me) + ".pid") << ::getpid() << "\n";
  // Every change starts where the last one ended (a rebuild that changed
  // no membership is folded into the next change), and the last one ends
  // at the size the job finishes with: no change went unannounced.
  std::uint64_t last_epoch = first_epoch;
  int last_size = comm.size(), broken_chain = 0;
  std::vector<int> told_lost;
  comm.on_membership_change([&](const MembershipChange& m) {
    if (m.old_epoch != last_epoch || m.old_size != last_size || m.new_epoch <= m.old_epoch) ++broken_chain;
    last_epoch = m.new_epoch;
    last_size = m.new_size;
    told_lost.insert(told_lost.end(), m.lost.begin(), m.lost.end());
    if (comm.rank() == 0 || m.new_rank == 0) {
      std::string lost, joined;
      for (int w : m.lost) lost += std::to_string(w) + " ";
      for (int w : m.joined) joined += std::to_string(w) + " ";
      std::printf(
          "membership change: epoch %llu -> %llu, lost [ %s], joined [ %s], %d -> %d ranks, %.1f ms\n",
          static_cast<unsigned long long>(m.old_epoch), static_cast<unsigned long long>(m.new_epoch),
          lost.c_str(), joined.c_str(), m.old_size, m.new_size, m.recovery_seconds * 1e3);
      std::fflush(stdout);
    }
  });

  const DataType types[] = {DataType::Float32, DataType::Int64, DataType::Float64, DataType::Int32};
  const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Prod, ReduceOp::Min};
  int failures = 0, recovered_calls = 0, root_lost_seen = 0, size_changed_seen = 0;
  // The loop's position is the state a spare resumes from (docs/elastic.md).
  int it = 0;
  comm.register_state("iteration", &it, sizeof it);
  if (comm.joined())
    std::printf("member %d: admitted as a spare at rank %d of %d, resuming at iteration %d\n", me,
                comm.rank(), comm.size(), it);
  // Every member's block of an allgather, by member id: the result names
  // its ranks' members, whoever contributed.
  auto block_value = [](int member, std::size_t i, int iteration) {
    return static_cast<std::int64_t>(member) * 1000003 + static_cast<std::int64_t>(i) * 7 + iteration;
  };
  // SizeChanged from a call laid out for `size` ranks: right when expected
  // there, and only if the size did change.
  auto size_changed_as_expected = [&](const Error& e, long call, std::size_t size) {
    return e.code() == Errc::SizeChanged && (call == expect_size_changed || allow_size_changed) &&
           comm.size() != static_cast<int>(size);
  };
  for (; it < iters; ++it) {
    if (me == hang_member && it == hang_at) {
      std::printf("member %d: stuck in its own code from iteration %d on\n", me, it);
      std::fflush(stdout);
      std::atomic<unsigned long> spin = 0;
      for (;;) spin.fetch_add(1, std::memory_order_relaxed);
    }
    const long call = static_cast<long>(comm.collectives_called()) + 1;
    const bool bcast =
        mode == "bcast" || (mode == "mixed" && it % 3 == 2) || (mode == "every" && it % 4 == 2);
    const bool gather = mode == "allgather" || (mode == "every" && it % 4 == 1);
    const bool scatter = mode == "reduce_scatter" || (mode == "every" && it % 4 == 3);
    const bool gatherv = mode == "allgatherv" || (mode == "uneven" && it % 2 == 0);
    const bool alltoall = mode == "alltoall" || (mode == "uneven" && it % 2 == 1);
    if (gatherv || alltoall) {
      // Sizes by rank (and pair), so that a spare in a lost rank's place
      // sends what the lost member would have; values by member id.
      const std::size_t size = static_cast<std::size_t>(comm.size()),
                        rank = static_cast<std::size_t>(comm.rank());
      auto block_count = [&](std::size_t from, std::size_t to) -> std::size_t {
        if ((from + 2 * to + static_cast<std::size_t>(it)) % 5 == 0) return 0;
        return count / 2 + (from * 31 + to * 17 + static_cast<std::size_t>(it) * 13) % (count / 2 + 1);
      };
      auto pair_value = [&](int member, std::size_t to, std::size_t i) {
        return block_value(member, i, it) * 16 + static_cast<std::int64_t>(to);
      };
      std::vector<std::size_t> send(size), recv(size);
      for (std::size_t s = 0; s < size; ++s) {
        send[s] = block_count(rank, gatherv ? 0 : s);
        recv[s] = block_count(s, gatherv ? 0 : rank);
      }
      const std::size_t out_total = std::accumulate(recv.begin(), recv.end(), std::size_t{0});
      std::vector<std::int64_t> in, out(out_total, -1);
      for (std::size_t s = 0; s < (gatherv ? 1 : size); ++s)
        for (std::size_t i = 0; i < send[s]; ++i) in.push_back(pair_value(me, gatherv ? 0 : s, i));
      const char* what = gatherv ? "allgatherv" : "alltoall";
      try {
        const CollectiveResult r = gatherv
                                       ? comm.allgatherv(in.data(), recv, DataType::Int64, out.data())
                                       : comm.alltoall(in.data(), send, DataType::Int64, out.data(), recv);
        recovered_calls += r.recovered;
        const std::vector<int> members = comm.member_ids();
        std::size_t wrong = r.contributors == comm.size() && members.size() == size ? 0 : 1, at = 0;
        for (std::size_t s = 0; s < size && s < members.size(); ++s)
          for (std::size_t i = 0; i < recv[s]; ++i, ++at)
            wrong += out[at] != pair_value(members[s], gatherv ? 0 : rank, i);
        if (wrong) {
          std::fprintf(stderr, "world rank %d: %s %d (recovered=%d, contributors=%d, size %d): %zu wrong\n",
                       me, what, it, r.recovered, r.contributors, comm.size(), wrong);
          ++failures;
        }
      } catch (const Error& e) {
        if (size_changed_as_expected(e, call, size)) {
          ++size_changed_seen;
        } else {
          std::fprintf(stderr, "world rank %d: %s %d: unexpected error: %s\n", me, what, it, e.what());
          ++failures;
        }
      }
    } else if (scatter) {
      // Block j of every member's input is its fill for salt it * 64 + j;
      // rank r's output, the reduction of the members' blocks r.
      const DataType t = types[it % 4];
      const ReduceOp op = ops[(it / 4 + it) % 4];
      const std::size_t size = static_cast<std::size_t>(comm.size()), block = count * size_of(t);
      std::vector<std::byte> in(size * block);
      for (std::size_t j = 0; j < size; ++j) {
        TypedBuffer b(t, count);
        b.fill_input(me, op, it * 64 + static_cast<int>(j));
        std::memcpy(in.data() + j * block, b.data(), block);
      }
      TypedBuffer out(t, count);
      try {
        const CollectiveResult r = comm.reduce_scatter(in.data(), out.data(), count, t, op);
        recovered_calls += r.recovered;
        const std::size_t wrong = out.wrong(contributors_of(comm, r), op, it * 64 + comm.rank());
        if (wrong) {
          std::fprintf(stderr,
                       "world rank %d: reduce_scatter %d (%s %s, recovered=%d, contributors=%d): %zu wrong\n",
                       me, it, std::string(name_of(t)).c_str(), std::string(name_of(op)).c_str(), r.recovered,
                       r.contributors, wrong);
          ++failures;
        }
      } catch (const Error& e) {
        if (size_changed_as_expected(e, call, size)) {
          ++size_changed_seen;
        } else {
          std::fprintf(stderr, "world rank %d: reduce_scatter %d: unexpected error: %s\n", me, it, e.what());
          ++failures;
        }
      }
    } else if (gather) {
      // In place every other call: this rank's block already in its slot.
      const std::size_t size = static_cast<std::size_t>(comm.size()),
                        rank = static_cast<std::size_t>(comm.rank());
      std::vector<std::int64_t> out(count * size, -1), in(count);
      for (std::size_t i = 0; i < count; ++i) in[i] = block_value(me, i, it);
      const bool in_place = it % 2 == 1;
      if (in_place) std::copy(in.begin(), in.end(), out.begin() + static_cast<std::ptrdiff_t>(rank * count));
      const CollectiveResult r = comm.allgather(in_place ? out.data() + rank * count : in.data(), count,
                                                DataType::Int64, out.data(), out.size());
      recovered_calls += r.recovered;
      const std::vector<int> members = comm.member_ids();
      std::size_t wrong = r.contributors == comm.size() ? 0 : 1;
      for (std::size_t b = 0; b < static_cast<std::size_t>(r.contributors) && b < members.size(); ++b)
        for (std::size_t i = 0; i < count; ++i) wrong += out[b * count + i] != block_value(members[b], i, it);
      if (wrong) {
        std::fprintf(stderr,
                     "world rank %d: allgather %d (recovered=%d, contributors=%d, size %d): %zu wrong\n", me,
                     it, r.recovered, r.contributors, comm.size(), wrong);
        ++failures;
      }
    } else if (bcast) {
      const int root = it % comm.size();
      const int root_world = comm.member_ids()[static_cast<std::size_t>(root)];
      std::vector<std::int32_t> buf(count);
      for (std::size_t i = 0; i < count; ++i)
        buf[i] = comm.rank() == root
                     ? static_cast<std::int32_t>(i * 7 + static_cast<std::size_t>(root_world + it))
                     : -1;
      try {
        CollectiveResult r = comm.broadcast(buf.data(), count * 4, root);
        recovered_calls += r.recovered;
        for (std::size_t i = 0; i < count; ++i)
          if (buf[i] != static_cast<std::int32_t>(i * 7 + static_cast<std::size_t>(root_world + it))) {
            std::fprintf(stderr, "world rank %d: broadcast %d wrong at %zu\n", me, it, i);
            ++failures;
            break;
          }
      } catch (const Error& e) {
        const std::vector<int> members = comm.member_ids();
        const bool root_gone = std::find(members.begin(), members.end(), root_world) == members.end();
        if (e.code() == Errc::RootLost && root_gone && (call == expect_root_lost || allow_root_lost)) {
          ++root_lost_seen;
        } else {
          std::fprintf(stderr, "world rank %d: broadcast %d: unexpected error: %s\n", me, it, e.what());
          ++failures;
        }
      }
    } else {
      const DataType t = types[it % 4];
      const ReduceOp op = ops[(it / 4 + it) % 4];
      TypedBuffer in(t, count), out(t, count);
      in.fill_input(me, op, it);
      const bool in_place = it % 2 == 1;
      CollectiveResult r = in_place ? comm.allreduce(in.data(), count, t, op)
                                    : comm.allreduce(in.data(), out.data(), count, t, op);
      recovered_calls += r.recovered;
      const std::size_t wrong = (in_place ? in : out).wrong(contributors_of(comm, r), op, it);
      if (wrong) {
        std::fprintf(stderr,
                     "world rank %d: allreduce %d (%s %s, recovered=%d, contributors=%d): %zu wrong\n", me,
                     it, std::string(name_of(t)).c_str(), std::string(name_of(op)).c_str(), r.recovered,
                     r.contributors, wrong);
        ++failures;
      }
    }
    if (sleep_ms) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
  }
  if (expect_size >= 0 && comm.size() != expect_size) {
    std::fprintf(stderr, "world rank %d: ended with %d ranks, expected %d\n", me, comm.size(), expect_size);
    ++failures;
  }
  if (broken_chain || last_size != comm.size() || last_epoch > comm.epoch()) {
    std::fprintf(stderr,
                 "world rank %d: the membership callbacks do not chain from epoch %llu (%d of them broke the "
                 "chain; the last ended at epoch %llu with %d ranks, the job is at epoch %llu with %d)\n",
                 me, static_cast<unsigned long long>(first_epoch), broken_chain,
                 static_cast<unsigned long long>(last_epoch), last_size,
                 static_cast<unsigned long long>(comm.epoch()), comm.size());
    ++failures;
  }
  if (expect_size_changed >= 0 && !allow_size_changed && size_changed_seen != 1) {
    std::fprintf(stderr, "world rank %d: expected Errc::SizeChanged in call %ld\n", me, expect_size_changed);
    ++failures;
  }
  for (const int id : expect_lost) {
    if (comm.joined() || std::find(told_lost.begin(), told_lost.end(), id) != told_lost.end()) continue;
    std::fprintf(stderr, "world rank %d: never told of member %d's loss (the fault did not land)\n", me, id);
    ++failures;
  }
  if (!expect_members.empty() && comm.member_ids() != int_list(expect_members)) {
    std::string got;
    for (int id : comm.member_ids()) got += (got.empty() ? "" : ",") + std::to_string(id);
    std::fprintf(stderr, "world rank %d: ended with members %s (by rank), expected %s\n", me, got.c_str(),
                 expect_members.c_str());
    ++failures;
  }
  if (expect_root_lost >= 0 && root_lost_seen != 1) {
    std::fprintf(stderr, "world rank %d: expected Errc::RootLost in call %ld\n", me, expect_root_lost);
    ++failures;
  }
  std::printf("TEST %s world rank %d: %s, %d collectives, final size %d, epoch %llu, %d recovered calls\n",
              failures ? "FAILED" : "PASSED", me, failures ? "not verified" : "verified", iters, comm.size(),
              static_cast<unsigned long long>(comm.epoch()), recovered_calls);
  return failures ? 1 : 0;
}
