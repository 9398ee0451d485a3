#include "runtime/watchdog.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "ringmend/core/progress_record.hpp"
#include "runtime/outcome_channel.hpp"

namespace ringmend {

Watchdog::Watchdog(double seconds, int outcome_fd, LogLevel level, std::string message, const char* word,
                   int exit_status, std::vector<std::string> leftovers) {
  if (seconds <= 0) return;
  thread_ = std::thread([=, this, message = std::move(message), leftovers = std::move(leftovers)] {
    std::unique_lock lock(m_);
    if (cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return done_; })) return;
    log(level, message);
    tell_launcher(outcome_fd, std::string(word) + "=1");
    std::fflush(stderr);
    std::fflush(stdout);
    for (const std::string& path : leftovers) ::unlink(path.c_str());
    progress::remove_record(::getpid());  // no destructor runs
    // Not exit(): the other threads are inside MPI, and destructors or
    // atexit handlers could wait on them for ever.
    ::_exit(exit_status);
  });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(m_);
    done_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

}  // namespace ringmend
