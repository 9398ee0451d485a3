// The call thread of non-blocking calls (runtime/call_queue.hpp) and the
// Request's shared state (runtime/request.hpp), without MPI.
#include "runtime/call_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/request.hpp"

namespace ringmend {
namespace {

TEST(CallQueue, RunsJobsInOrderOnItsOwnThread) {
  std::vector<int> order;
  std::thread::id ran_on;
  {
    CallQueue q;
    EXPECT_FALSE(q.on_queue_thread());
    for (int i = 0; i < 100; ++i)
      q.push([&order, &ran_on, &q, i] {
        order.push_back(i);
        ran_on = std::this_thread::get_id();
        EXPECT_TRUE(q.on_queue_thread());
      });
  }  // the destructor runs what is queued, then joins
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(CallQueue, DestructionWaitsForASlowJob) {
  std::atomic<bool> done = false;
  {
    CallQueue q;
    q.push([&done] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      done = true;
    });
  }
  EXPECT_TRUE(done);
}

TEST(Request, EmptyIsComplete) {
  Request r;
  EXPECT_TRUE(r.test());
  EXPECT_EQ(r.wait().contributors, 0);
  bool ran = false;
  r.on_complete([&ran] { ran = true; });
  EXPECT_TRUE(ran);
}

TEST(Request, CompletesWithResultAndRunsCallbacksOnce) {
  auto state = std::make_shared<Request::State>();
  Request r(state);
  int before = 0, after = 0;
  r.on_complete([&before] { ++before; });
  EXPECT_FALSE(r.test());
  CollectiveResult res;
  res.contributors = 3;
  res.lost = {2};
  std::thread t([state, res] { state->complete(res, nullptr); });
  const CollectiveResult got = r.wait();  // blocks until the other thread completes it
  t.join();
  EXPECT_TRUE(r.test());
  EXPECT_EQ(got.contributors, 3);
  EXPECT_EQ(got.lost, std::vector<int>{2});
  EXPECT_EQ(before, 1);
  r.on_complete([&after] { ++after; });  // already complete: runs at once
  EXPECT_EQ(after, 1);
  EXPECT_EQ(r.wait().contributors, 3);  // again
}

TEST(Request, WaitRethrowsTheErrorEveryTime) {
  auto state = std::make_shared<Request::State>();
  Request r(state);
  state->complete({}, std::make_exception_ptr(Error(Errc::Mismatch, "count differs")));
  for (int i = 0; i < 2; ++i) {
    try {
      r.wait();
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::Mismatch);
    }
  }
}

}  // namespace
}  // namespace ringmend
