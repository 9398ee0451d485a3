// Non-blocking collectives: several in flight, mixed with blocking ones,
// progressing while this thread computes, completed in order, recovered
// when a member dies during one (RINGMEND_FAULT picks the call), errors
// reported by wait() on every rank. Every result is checked exactly.
//
//   nonblocking [--buckets=B] [--steps=S] [--count=C] [--expect-size=N]
#include <chrono>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <vector>

#include "test_data.hpp"

using namespace ringmend;
using namespace ringmend::testing;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what, int me) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "world rank %d: %s\n", me, what.c_str());
}

// Busy work on this thread, as a backward pass is: no sleeping.
double compute_for(std::chrono::milliseconds span) {
  const auto until = std::chrono::steady_clock::now() + span;
  double x = 1;
  while (std::chrono::steady_clock::now() < until)
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  require_known_options(argc, argv, {"buckets", "steps", "count", "expect-size"});
  const int buckets = std::stoi(option(argc, argv, "buckets", "6"));
  const int steps = std::stoi(option(argc, argv, "steps", "12"));
  const std::size_t count = std::stoul(option(argc, argv, "count", "40009"));
  const int expect_size = std::stoi(option(argc, argv, "expect-size", "-1"));

  Runtime rt(&argc, &argv);
  Communicator& comm = rt.world();
  const int me = comm.member_id();
  // Who contributed to a call that completed before the caller looked: the
  // members of the call's epoch (recorded by the callbacks, which run on
  // the call thread when the membership changes), plus those lost in it
  // when the result still holds their inputs.
  std::map<std::uint64_t, std::vector<int>> members_at{{comm.epoch(), comm.member_ids()}};
  comm.on_membership_change([&](const MembershipChange& m) { members_at[m.new_epoch] = comm.member_ids(); });
  const auto contributors = [&](const CollectiveResult& r) {
    auto it = members_at.upper_bound(r.epoch);  // the last change at or before the call's epoch
    std::set<int> ids(std::prev(it)->second.begin(), std::prev(it)->second.end());
    if (r.contributors == static_cast<int>(ids.size()) + static_cast<int>(r.lost.size()))
      ids.insert(r.lost.begin(), r.lost.end());
    return std::vector<int>(ids.begin(), ids.end());
  };

  // An empty request is complete.
  {
    Request none;
    expect(none.test() && none.wait().contributors == 0, "an empty Request is not complete", me);
  }

  // Progress while this thread computes: a request made before 400 ms of
  // busy work has completed by its end, without a test() or wait() between.
  {
    TypedBuffer b(DataType::Int64, 1001);
    b.fill_input(me, ReduceOp::Sum, 1);
    Request r = comm.iallreduce(b.data(), b.count, DataType::Int64, ReduceOp::Sum);
    compute_for(std::chrono::milliseconds(400));
    expect(r.test(), "a request made before 400 ms of computation had not completed at its end", me);
    const CollectiveResult res = r.wait();
    expect(b.wrong(contributors(res), ReduceOp::Sum, 1) == 0, "progress check: wrong result", me);
  }

  // Steps of a data-parallel trainer: buckets reduced while the next are
  // computed, a blocking call in between, wait for all; on_complete runs
  // once per request.
  int recovered_steps = 0, completions = 0;
  for (int step = 0; step < steps; ++step) {
    std::vector<TypedBuffer> grads;
    std::vector<Request> requests;
    const DataType types[] = {DataType::Float32, DataType::Int32, DataType::BFloat16, DataType::Float64};
    grads.reserve(static_cast<std::size_t>(buckets));
    for (int b = 0; b < buckets; ++b) {
      grads.emplace_back(types[b % 4], count + static_cast<std::size_t>(b));
      grads.back().fill_input(me, ReduceOp::Sum, step * 100 + b);
      requests.push_back(
          comm.iallreduce(grads.back().data(), grads.back().count, grads.back().type, ReduceOp::Sum));
      requests.back().on_complete([&completions] { ++completions; });
      compute_for(std::chrono::milliseconds(2));
    }
    TypedBuffer loss(DataType::Float64, 1);
    loss.fill_input(me, ReduceOp::Max, step);
    const CollectiveResult lr = comm.allreduce(loss.data(), 1, DataType::Float64, ReduceOp::Max);
    bool recovered = lr.recovered;
    for (int b = 0; b < buckets; ++b) {
      const CollectiveResult r = requests[static_cast<std::size_t>(b)].wait();
      recovered = recovered || r.recovered;
      expect(grads[static_cast<std::size_t>(b)].wrong(contributors(r), ReduceOp::Sum, step * 100 + b) == 0,
             "step " + std::to_string(step) + " bucket " + std::to_string(b) + ": wrong result", me);
    }
    expect(loss.wrong(contributors(lr), ReduceOp::Max, step) == 0, "blocking call between: wrong", me);
    if (recovered) ++recovered_steps;
  }
  expect(completions == steps * buckets, "on_complete ran " + std::to_string(completions) + " times", me);

  // A broadcast and a barrier, non-blocking.
  {
    std::vector<std::int32_t> data(5003, comm.rank() == 0 ? 7 : 0);
    Request b = comm.ibroadcast(data.data(), data.size() * sizeof(std::int32_t), 0);
    Request bar = comm.ibarrier();
    b.wait();
    bar.wait();
    std::size_t wrong = 0;
    for (auto v : data) wrong += v != 7;
    expect(wrong == 0, "ibroadcast: wrong data", me);
  }

  // A broadcast whose root is named by member id: the last member (after a
  // kill, no longer the last rank of the job's start); a member id that is
  // not a member is RootLost on every rank.
  {
    const std::vector<int> members = comm.member_ids();
    const int root = members.back();
    std::vector<std::int64_t> data(999, me == root ? root * 1000 + 7 : -1);
    comm.ibroadcast_from_member(data.data(), data.size() * sizeof(std::int64_t), root).wait();
    std::size_t wrong = 0;
    for (auto v : data) wrong += v != root * 1000 + 7;
    expect(wrong == 0, "ibroadcast_from_member: wrong data", me);
    try {
      comm.ibroadcast_from_member(data.data(), 8, 1000000).wait();
      expect(false, "a broadcast from a non-member did not fail", me);
    } catch (const Error& e) {
      expect(e.code() == Errc::RootLost, std::string("non-member root reported as ") + to_string(e.code()),
             me);
    }
  }

  // A mismatch in a non-blocking call: wait() throws Mismatch on every rank,
  // and the next call works.
  {
    std::vector<float> x(100 + (comm.rank() == 0 ? 1 : 0), 1.0f);
    Request r = comm.iallreduce(x.data(), x.size(), DataType::Float32, ReduceOp::Sum);
    try {
      r.wait();
      expect(false, "a count mismatch in iallreduce was not reported", me);
    } catch (const Error& e) {
      expect(e.code() == Errc::Mismatch, std::string("mismatch reported as ") + to_string(e.code()), me);
    }
    // wait() again gives the same error.
    try {
      r.wait();
      expect(false, "a second wait() did not report the error again", me);
    } catch (const Error&) {
    }
    TypedBuffer b(DataType::Int32, 77);
    b.fill_input(me, ReduceOp::Min, 9);
    const CollectiveResult res = comm.iallreduce(b.data(), b.count, DataType::Int32, ReduceOp::Min).wait();
    expect(b.wrong(contributors(res), ReduceOp::Min, 9) == 0, "after the mismatch: wrong result", me);
  }

  const bool size_ok = expect_size < 0 || comm.size() == expect_size;
  expect(size_ok,
         "ended with " + std::to_string(comm.size()) + " ranks, expected " + std::to_string(expect_size), me);
  std::printf("TEST %s world rank %d: %d steps of %d buckets, %d recovered, %d ranks\n",
              failures ? "FAILED" : "PASSED", me, steps, buckets, recovered_steps, comm.size());
  return failures ? 1 : 0;
}
