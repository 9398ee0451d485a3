// Subgroups (Communicator::split, Communicator::group; docs/subgroups.md),
// 4 ranks, results checked exactly on every rank against references each
// rank computes from the member ids:
//
//   (no flag)      rows {0,1} {2,3} and columns {0,2} {1,3} made by split
//                  (columns ordered by a descending key), evens and odds by
//                  group(); every collective on each, blocking and not,
//                  in place and not, small and large, interleaved with the
//                  world's calls; rank 3 passes kNoColor once (no
//                  subgroup); a world-only call on a subgroup is refused.
//   --kill=before  member 3 SIGKILLs itself before its row's call of round
//                  5: member 2 gets MemberLost in that call and in every
//                  later one of its row; the row {0,1} goes on without an
//                  error through the world's recovery (3 ranks after it).
//   --kill=during  the same, member 3 killed by a timer of its own inside
//                  a 16 MiB call of its row: member 2 gets MemberLost in
//                  that round or the next (when the call had ended on its
//                  side first), never a wrong result.
//   --kill=outside member 3 SIGKILLs itself in round 5, while the row
//                  {0,1} runs calls of 64 KiB until one of them reports
//                  that it ran again after the world's recovery (a
//                  recovery needs every survivor: the row's members join
//                  it from inside their call, then finish the call); every
//                  result exact, the row never ended.
//   --bad-input    rank 1 passes a null buffer in its row's round 3: it
//                  gets InvalidArgument, rank 0 an error, both at once;
//                  the row {2,3} and the world go on.
//   --survive=DIR  for subgroup_kill_random.sh: writes DIR/rankN.pid, then
//                  150 rounds of row, column and world calls; a member is
//                  SIGKILLed from outside at any moment (start-up, split,
//                  a subgroup's first call, steady calls, the end): every
//                  subgroup call succeeds exactly or raises MemberLost (then
//                  that subgroup is left alone), every world call succeeds
//                  exactly over the members alive.
//   --refused      under the native membership: split and group are
//                  refused with InvalidArgument on every rank, saying why.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ringmend/ringmend.hpp"

using namespace ringmend;

namespace {

int failures = 0;
void expect(bool ok, const std::string& what, int me) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "member %d: FAILED: %s\n", me, what.c_str());
}

// Member m's i-th element in round `round`: small integers, exact in float.
float value(int member, std::size_t i, int round) {
  return static_cast<float>((member * 7 + static_cast<int>(i % 13) * 3 + round) % 11 - 5);
}

// The sum over `members` of their values.
bool sums_match(const std::vector<float>& got, const std::vector<int>& members, int round) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    float want = 0;
    for (int m : members) want += value(m, i, round);
    if (got[i] != want) return false;
  }
  return true;
}

std::vector<float> values(int member, std::size_t n, int round) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = value(member, i, round);
  return v;
}

void failure_free(Communicator& world, int me) {
  auto rows = world.split(me / 2, me);
  auto cols = world.split(me % 2, -me);  // descending key: the higher member first
  const std::vector<int> evens{0, 2}, odds{1, 3};
  auto pair = world.group(me % 2 == 0 ? evens : odds);
  auto none = world.split(me == 3 ? Communicator::kNoColor : 0, 0);
  expect(rows && cols && pair, "split/group returned a subgroup", me);
  expect((me == 3) == (none == nullptr), "kNoColor returns no subgroup (only there)", me);
  expect(rows->size() == 2 && rows->rank() == me % 2, "row rank", me);
  expect(cols->size() == 2 && cols->rank() == 1 - me / 2, "column ranked by descending key", me);
  expect(pair->rank() == me / 2 && rows->is_subgroup() && !world.is_subgroup(), "group rank", me);
  expect(cols->member_ids() == (me % 2 == 0 ? std::vector<int>{2, 0} : std::vector<int>{3, 1}),
         "column members", me);
  if (none) expect(none->size() == 3, "the group without rank 3", me);

  const std::vector<int> row_members = rows->member_ids(), col_members = cols->member_ids();
  const std::vector<int> everyone{0, 1, 2, 3};
  for (int round = 0; round < 30; ++round) {
    // Sizes across the one-shot, pipelined and ring paths.
    const std::size_t n = round % 3 == 0 ? 7 : round % 3 == 1 ? 5000 : 300000;
    std::vector<float> in = values(me, n, round), out(n);
    rows->allreduce(in.data(), out.data(), n, DataType::Float32, ReduceOp::Sum);
    expect(sums_match(out, row_members, round), "row allreduce, round " + std::to_string(round), me);

    std::vector<float> inplace = values(me, n, round);
    cols->allreduce(inplace.data(), n, DataType::Float32, ReduceOp::Sum);
    expect(sums_match(inplace, col_members, round), "column allreduce in place", me);

    // A non-blocking row call in flight across a world call.
    std::vector<float> nb_out(n);
    Request r = rows->iallreduce(in.data(), nb_out.data(), n, DataType::Float32, ReduceOp::Sum);
    std::vector<float> w = values(me, 64, round);
    world.allreduce(w.data(), 64, DataType::Float32, ReduceOp::Sum);
    r.wait();
    expect(sums_match(nb_out, row_members, round), "non-blocking row allreduce", me);
    expect(sums_match(w, everyone, round), "world allreduce between subgroup calls", me);

    // allgather: each rank's block in its rank's slot, the input inside
    // the output too (torch's in-place all_gather).
    const std::size_t block = n / 7 + 1;
    std::vector<float> gathered(2 * block);
    std::vector<float> mine = values(me, block, round);
    cols->allgather(mine.data(), block, DataType::Float32, gathered.data(), gathered.size());
    bool ok = true;
    for (int slot = 0; slot < 2; ++slot)
      for (std::size_t i = 0; i < block; ++i)
        ok &= gathered[static_cast<std::size_t>(slot) * block + i] == value(col_members[slot], i, round);
    expect(ok, "column allgather", me);
    std::vector<float> in_output(2 * block, -99.0F);
    std::memcpy(&in_output[static_cast<std::size_t>(pair->rank()) * block], mine.data(),
                block * sizeof(float));
    pair->allgather(&in_output[static_cast<std::size_t>(pair->rank()) * block], block, DataType::Float32,
                    in_output.data(), in_output.size());
    const std::vector<int> pair_members = pair->member_ids();
    ok = true;
    for (int slot = 0; slot < 2; ++slot)
      for (std::size_t i = 0; i < block; ++i)
        ok &= in_output[static_cast<std::size_t>(slot) * block + i] == value(pair_members[slot], i, round);
    expect(ok, "pair allgather, input inside the output", me);

    // reduce_scatter: rank r gets the sum of every rank's block r.
    std::vector<float> blocks = values(me, 2 * block, round), part(block);
    rows->reduce_scatter(blocks.data(), part.data(), block, DataType::Float32, ReduceOp::Sum);
    ok = true;
    for (std::size_t i = 0; i < block; ++i) {
      float want = 0;
      for (int m : row_members) want += value(m, static_cast<std::size_t>(rows->rank()) * block + i, round);
      ok &= part[i] == want;
    }
    expect(ok, "row reduce_scatter", me);

    // allgatherv and alltoall over the row: rank r's block of r + 1 + round
    // % 3 values (alltoall: to rank s, s + r + 1 of them; some rounds none).
    auto uneven = [&](std::size_t from, std::size_t to) -> std::size_t {
      return round % 5 == 4 && from == 0 ? 0 : from + to + 1 + static_cast<std::size_t>(round % 3);
    };
    const auto row_rank = static_cast<std::size_t>(rows->rank());
    std::vector<std::size_t> counts{uneven(0, 0), uneven(1, 0)},
        sends{uneven(row_rank, 0), uneven(row_rank, 1)}, recvs{uneven(0, row_rank), uneven(1, row_rank)};
    std::vector<float> gv(counts[0] + counts[1], -1.0F), own = values(me, counts[row_rank], round);
    rows->allgatherv(own.data(), counts, DataType::Float32, gv.data());
    std::vector<float> to_all, from_all(recvs[0] + recvs[1], -1.0F);
    for (std::size_t s = 0; s < 2; ++s)
      for (std::size_t i = 0; i < sends[s]; ++i)
        to_all.push_back(value(me, i, round) + static_cast<float>(s));
    rows->alltoall(to_all.data(), sends, DataType::Float32, from_all.data(), recvs);
    ok = true;
    for (std::size_t s = 0, at = 0, got = 0; s < 2; ++s) {
      for (std::size_t i = 0; i < counts[s]; ++i) ok &= gv[at++] == value(row_members[s], i, round);
      for (std::size_t i = 0; i < recvs[s]; ++i)
        ok &= from_all[got++] == value(row_members[s], i, round) + static_cast<float>(row_rank);
    }
    expect(ok, "row allgatherv and alltoall", me);

    // broadcast from rank 1 of the column (its first member by key is rank 0).
    std::vector<float> b = cols->rank() == 1 ? values(me, n, round) : std::vector<float>(n, 0.0F);
    cols->broadcast(b.data(), n * sizeof(float), 1);
    expect(b == values(col_members[1], n, round), "column broadcast", me);
    pair->barrier();
    if (none) {
      std::vector<float> x = values(me, 10, round);
      none->allreduce(x.data(), 10, DataType::Float32, ReduceOp::Sum);
      expect(sums_match(x, {0, 1, 2}, round), "the group without rank 3", me);
    }
  }
  try {
    rows->grow(1);
    expect(false, "grow on a subgroup is refused", me);
  } catch (const Error& e) {
    expect(e.code() == Errc::InvalidArgument, "grow on a subgroup: InvalidArgument", me);
  }
}

// Row calls of `n` floats for 12 rounds, a world call after each; member 3
// dies in round 5 (before its row call, or inside it by a timer).
void row_mate_dies(Communicator& world, int me, bool during) {
  auto rows = world.split(me / 2, me);
  const std::vector<int> row_members = rows->member_ids();
  const std::size_t n = during ? (4u << 20) : 5000;  // 16 MiB: a call long enough to die in
  int lost_at = -1;
  for (int round = 0; round < 12; ++round) {
    if (me == 3 && round == 5) {
      if (!during) raise(SIGKILL);
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
        raise(SIGKILL);
      }).detach();
    }
    std::vector<float> in = values(me, n, round), out(n);
    try {
      rows->allreduce(in.data(), out.data(), n, DataType::Float32, ReduceOp::Sum);
      expect(sums_match(out, row_members, round), "row allreduce, round " + std::to_string(round), me);
      expect(lost_at < 0, "no call succeeds after MemberLost", me);
    } catch (const Error& e) {
      expect(me == 2 && e.code() == Errc::MemberLost,
             "only member 2 gets an error, MemberLost (got " + std::string(e.what()) + ")", me);
      if (lost_at < 0) {
        lost_at = round;
        std::printf("member %d: round %d: %s\n", me, round, e.what());
      }
    }
    std::vector<float> w = values(me, 16, round);
    const CollectiveResult r = world.allreduce(w.data(), 16, DataType::Float32, ReduceOp::Sum);
    if (r.recovered)
      std::printf("member %d: world recovered in round %d, lost %d\n", me, round, r.lost.at(0));
    expect(sums_match(w, round < 5 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{0, 1, 2}, round) ||
               (round == 5 && during && sums_match(w, {0, 1, 2, 3}, round)),
           "world allreduce, round " + std::to_string(round), me);
  }
  expect(world.size() == 3, "the world lost member 3 (the kill landed)", me);
  if (me == 2)
    expect(lost_at == 5 || (during && lost_at == 6), "member 2 got MemberLost in round 5 (or 6)", me);
}

void survive(Communicator& world, int me) {
  auto rows = world.split(me / 2, me);
  auto cols = world.split(me % 2, me);
  std::vector<Communicator*> subs{rows.get(), cols.get()};
  std::vector<std::vector<int>> members{rows->member_ids(), cols->member_ids()};
  std::vector<bool> ended{false, false};
  for (int round = 0; round < 150; ++round) {
    for (std::size_t s = 0; s < subs.size(); ++s) {
      if (ended[s]) continue;
      std::vector<float> x = values(me, 5000, round);
      try {
        subs[s]->allreduce(x.data(), x.size(), DataType::Float32, ReduceOp::Sum);
        expect(sums_match(x, members[s], round),
               "subgroup " + std::to_string(s) + " round " + std::to_string(round), me);
      } catch (const Error& e) {
        expect(e.code() == Errc::MemberLost, std::string("a subgroup's error is MemberLost: ") + e.what(),
               me);
        std::printf("member %d: subgroup %zu ended in round %d: %s\n", me, s, round, e.what());
        ended[s] = true;
      }
    }
    std::vector<float> w = values(me, 16, round);
    world.allreduce(w.data(), w.size(), DataType::Float32, ReduceOp::Sum);
    expect(sums_match(w, world.member_ids(), round), "world allreduce, round " + std::to_string(round), me);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // A kill after the last call (in the shutdown) leaves 4: the script
  // checks that the launcher saw the victim killed.
  expect(world.size() == 3 || world.size() == 4, "the world lost one member at most", me);
}

void bad_input(Communicator& world, int me) {
  auto rows = world.split(me / 2, me);
  const std::vector<int> row_members = rows->member_ids();
  for (int round = 0; round < 8; ++round) {
    std::vector<float> in = values(me, 1000, round), out(1000);
    const bool bad = me == 1 && round == 3;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      rows->allreduce(bad ? nullptr : in.data(), out.data(), 1000, DataType::Float32, ReduceOp::Sum);
      expect(me >= 2 || round < 3, "row {0,1} ends at round 3", me);
      expect(sums_match(out, row_members, round), "row allreduce", me);
    } catch (const Error& e) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (round == 3) std::printf("member %d: %s (%.3f s)\n", me, e.what(), s);
      expect(me < 2 && round >= 3, "only the row {0,1} fails, from round 3", me);
      expect(me != 1 || round != 3 || e.code() == Errc::InvalidArgument, "rank 1: InvalidArgument", me);
      expect(s < 5, "the error comes at once, not at a time limit", me);
    }
    std::vector<float> w = values(me, 16, round);
    world.allreduce(w.data(), 16, DataType::Float32, ReduceOp::Sum);
    expect(sums_match(w, {0, 1, 2, 3}, round), "world allreduce", me);
  }
}

// --kill=outside: a death outside the row {0,1} interrupts its calls.
void death_outside_row(Communicator& world, int me) {
  auto rows = world.split(me / 2, me);
  const std::vector<int> row_members = rows->member_ids();
  for (int round = 0; round < 8; ++round) {
    if (me == 3 && round == 5) raise(SIGKILL);
    if (me < 2 && round == 5) {
      bool ran_again = false;
      int calls = 0;
      const auto t0 = std::chrono::steady_clock::now();
      // Both members stop at the same call: the row agrees on whether
      // either saw it (Max of a flag, itself a call that may run again).
      // Every call is larger than RINGMEND_SMALL_BYTES, so that it finishes
      // on both members or on neither (a call one member finished ends the
      // subgroup: docs/subgroups.md).
      std::vector<int> flags(16384);
      for (int agreed = 0; agreed == 0;) {
        std::vector<float> x = values(me, 16384, round + calls);
        CollectiveResult r = rows->allreduce(x.data(), x.size(), DataType::Float32, ReduceOp::Sum);
        expect(sums_match(x, row_members, round + calls), "row allreduce " + std::to_string(calls), me);
        ran_again = ran_again || r.recovered;
        const bool late = std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10);
        std::fill(flags.begin(), flags.end(), ran_again || late ? 1 : 0);
        r = rows->allreduce(flags.data(), flags.size(), DataType::Int32, ReduceOp::Max);
        agreed = flags[0];
        ran_again = ran_again || r.recovered;
        ++calls;
      }
      expect(ran_again, "a row call ran again after the world's recovery (within 10 s)", me);
      std::printf("member %d: the row's call ran again after the world's recovery (%d calls)\n", me, calls);
    } else {
      std::vector<float> x = values(me, 5000, round);
      try {
        rows->allreduce(x.data(), x.size(), DataType::Float32, ReduceOp::Sum);
        expect(sums_match(x, row_members, round), "row allreduce, round " + std::to_string(round), me);
        expect(me < 2 || round < 5, "the row {2,3} ends at round 5", me);
      } catch (const Error& e) {
        expect(me == 2 && round >= 5 && e.code() == Errc::MemberLost,
               "only member 2's row ends: " + std::string(e.what()), me);
      }
    }
    std::vector<float> w = values(me, 16, round);
    world.allreduce(w.data(), w.size(), DataType::Float32, ReduceOp::Sum);
    expect(sums_match(w, round < 5 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{0, 1, 2}, round),
           "world allreduce, round " + std::to_string(round), me);
  }
  expect(world.size() == 3, "the world lost member 3 (the kill landed)", me);
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode.rfind("--survive=", 0) == 0) {
    // Before the Runtime: a kill may land in the start-up too.
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    const std::string file = mode.substr(10) + "/rank" + (rank ? rank : "x") + ".pid";
    if (FILE* f = std::fopen(file.c_str(), "w")) {
      std::fprintf(f, "%d\n", static_cast<int>(getpid()));
      std::fclose(f);
    }
  }
  Runtime rt(&argc, &argv);
  Communicator& world = rt.world();
  const int me = world.member_id();
  // --survive: a member killed in the start-up leaves 3 (the job starts without it).
  const bool surviving = mode.rfind("--survive=", 0) == 0;
  if (world.size() != 4 && !(surviving && world.size() == 3)) {
    std::fprintf(stderr, "subgroups: needs 4 ranks\n");
    return 2;
  }
  try {
    if (mode.empty())
      failure_free(world, me);
    else if (mode == "--kill=before" || mode == "--kill=during")
      row_mate_dies(world, me, mode == "--kill=during");
    else if (mode == "--kill=outside")
      death_outside_row(world, me);
    else if (mode == "--bad-input")
      bad_input(world, me);
    else if (mode.rfind("--survive=", 0) == 0)
      survive(world, me);
    else if (mode == "--refused") {
      for (int which = 0; which < 2; ++which) {
        try {
          const std::vector<int> all{0, 1, 2, 3};
          auto sub = which == 0 ? world.split(0, me) : world.group(all);
          expect(false, "a subgroup under the native membership is refused", me);
        } catch (const Error& e) {
          expect(e.code() == Errc::InvalidArgument && std::strstr(e.what(), "native membership"),
                 std::string("refused with a reason: ") + e.what(), me);
        }
      }
      std::vector<float> w = values(me, 16, 0);
      world.allreduce(w.data(), 16, DataType::Float32, ReduceOp::Sum);
      expect(sums_match(w, {0, 1, 2, 3}, 0), "the world goes on", me);
    } else {
      std::fprintf(stderr, "subgroups: unknown flag %s\n", mode.c_str());
      return 2;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "member %d: FAILED: %s\n", me, e.what());
    ++failures;
  }
  std::printf("member %d: %s\n", me, failures == 0 ? "TEST PASSED" : "TEST FAILED");
  return failures == 0 ? 0 : 1;
}
