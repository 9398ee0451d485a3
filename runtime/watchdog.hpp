// A watchdog for the waits that cannot be interrupted from inside.
//
// Some waits in MPI can hang after failures and never return: MPI_Init and
// the first agreement when a process died while MPI started (MPI may never
// learn of that death), an agreement of a recovery that waits for a process
// which is stuck rather than dead (or, in an Open MPI with a bug, for one
// that died), and MPI_Finalize. Nothing inside such a call can be told to
// give up; the watchdog ends the process instead, with a word to the
// launcher and a status, so that a hang becomes a loss that is reported.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ringmend/core/log.hpp"

namespace ringmend {

class Watchdog {
 public:
  // Ends the process if it still exists `seconds` after construction (0:
  // never): logs `message` at `level`, tells the launcher `word`=1 on
  // `outcome_fd` (outcome_channel.hpp), removes the files in `leftovers`
  // (what the process published for others, which no destructor will
  // withdraw now) and its progress record, and exits with `exit_status`.
  Watchdog(double seconds, int outcome_fd, LogLevel level, std::string message, const char* word,
           int exit_status, std::vector<std::string> leftovers = {});
  ~Watchdog();  // stops it
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace ringmend
