// What a Request shares with the call it stands for (ringmend.hpp): the
// call's outcome once complete, and what is to run then. Private to runtime/.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

#include "ringmend/ringmend.hpp"

namespace ringmend {

struct Request::State {
  std::mutex mutex;
  std::condition_variable completed;
  bool done = false;
  CollectiveResult result;
  std::exception_ptr error;
  std::vector<std::function<void()>> on_complete;

  // The call's end: wakes the waiters, then runs the completion functions.
  void complete(CollectiveResult r, std::exception_ptr e);
};

}  // namespace ringmend
