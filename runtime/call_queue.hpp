// The thread that runs a communicator's calls once the application has made
// a non-blocking one (Communicator::iallreduce and friends).
//
// Why a thread: a data-parallel trainer computes gradients on its own
// thread while earlier buckets are reduced. Progress inside wait()/test()
// would move nothing between those calls, so the collectives would run only
// once the computation stops waiting. One thread per communicator runs the
// calls in the order they were made, the blocking ones included, so that
// every member executes the same sequence, and the application's thread
// never calls MPI, UCX or the shared memory while it does. It sleeps on a
// condition variable while nothing is queued.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace ringmend {

class CallQueue {
 public:
  CallQueue();
  // Runs what is still queued, then joins the thread.
  ~CallQueue();
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;

  // Runs `job` on the queue's thread after every job pushed before it.
  // A job must not throw (it keeps its own outcome).
  void push(std::function<void()> job);
  bool on_queue_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ringmend
