// Test harness: forked processes as the ranks of one node, joined by a
// ShmChannel on a fresh segment (no MPI). Each rank runs a body and exits
// with one of the Exit codes; a SIGKILLed rank shows as 128 + 9.
#pragma once

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ringmend/core/options.hpp"
#include "transport/progress.hpp"
#include "transport/shm_channel.hpp"

namespace ringmend::transport::forked {

enum Exit { kOk = 0, kWrong = 1, kInterrupted = 2, kMismatch = 3, kTimedOut = 4, kOther = 5 };

class TestWait : public WaitContext {
 public:
  void check() override {
    if (std::chrono::steady_clock::now() > deadline_) throw std::runtime_error("timed out");
  }
  void on_phase(Phase, int) override {}

 private:
  std::chrono::steady_clock::time_point deadline_ =
      std::chrono::steady_clock::now() + std::chrono::seconds(20);
};

inline std::string name_prefix() { return "ringmend-chtest-" + std::to_string(::getpid()) + "-"; }

inline std::string unique_name() {
  static int n = 0;
  std::string name = "/";
  name += name_prefix();
  name += std::to_string(n++);
  return name;
}

// Nothing of this process's tests in /dev/shm.
inline bool dev_shm_clean() {
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm"))
    if (e.path().filename().string().rfind(name_prefix(), 0) == 0) return false;
  return true;
}

// A counter in memory shared with the forked ranks: the barrier before they
// exit (a rank that exits early is a dead peer to the others).
class ExitBarrier {
 public:
  ExitBarrier() {
    void* p =
        ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap");
    count_ = new (p) std::atomic<int>(0);
  }
  ~ExitBarrier() { ::munmap(count_, sizeof(std::atomic<int>)); }
  ExitBarrier(const ExitBarrier&) = delete;
  ExitBarrier& operator=(const ExitBarrier&) = delete;
  // Arrives, then waits until `ranks` have arrived.
  bool arrive_and_wait(int ranks) {
    count_->fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (count_->load() < ranks) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return true;
  }

 private:
  std::atomic<int>* count_ = nullptr;
};

using Body = std::function<int(int, ShmChannel&, TestWait&)>;

// Runs body(rank, channel, wait) in `ranks` forked processes sharing one
// channel segment (default layout) and returns their exit codes (128 +
// signal if killed).
inline std::vector<int> run_ranks(int ranks, const Body& body) {
  const auto l = ShmChannelLayout::make(ranks, Settings{}.shm_p2p_slot_bytes, Settings{}.shm_p2p_slots);
  const std::string name = unique_name();
  ShmSegment segment = ShmSegment::create(name, l.total);
  ExitBarrier barrier;
  int go[2];
  if (::pipe(go) != 0) throw std::runtime_error("pipe");
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(go[1]);
      std::vector<pid_t> all(static_cast<std::size_t>(ranks));
      const auto want = static_cast<ssize_t>(all.size() * sizeof(pid_t));
      if (::read(go[0], all.data(), all.size() * sizeof(pid_t)) != want) ::_exit(kOther);
      int code = kOther;
      try {
        ShmChannel ch(ShmSegment::attach(name, l.total).value(), l, r, all);
        TestWait wait;
        code = body(r, ch, wait);
        // A rank that failed leaves at once: its peers' waits then end.
        if (!barrier.arrive_and_wait(code == kOk ? ranks : 0)) code = kTimedOut;
      } catch (const Interrupted&) {
        code = kInterrupted;
      } catch (const Mismatch&) {
        code = kMismatch;
      } catch (const std::runtime_error& e) {
        code = std::string(e.what()) == "timed out" ? kTimedOut : kOther;
      } catch (...) {
      }
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  ::close(go[0]);
  for (int r = 0; r < ranks; ++r)
    if (::write(go[1], pids.data(), pids.size() * sizeof(pid_t)) < 0) break;
  ::close(go[1]);
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  segment.unlink();
  return codes;
}

}  // namespace ringmend::transport::forked
