// Direct liveness check of the processes on this node (pidfds).
//
// MPI reports a dead rank within tens of milliseconds; a shared-memory wait
// can see it sooner and without any MPI call. Two signs, whichever comes
// first: the process is dying of a signal (/proc/PID/stat: its exit begun,
// a signal in its exit code; visible within a fraction of a millisecond of
// a SIGKILL), or its pidfd is readable (its exit finished). Between the two
// the kernel releases the process's memory: 25-50 ms for a process that
// imported torch, longer for one holding gigabytes; none of its code runs
// then, so for its peers it is gone.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace ringmend::transport {

class PeerWatch {
 public:
  PeerWatch() = default;
  // Watches `pids` (entries <= 0 and this process are skipped). Processes that
  // cannot be watched (other PID namespace, old kernel) are left to MPI's
  // failure detection; available() says whether all could be.
  explicit PeerWatch(const std::vector<pid_t>& pids);
  ~PeerWatch();
  PeerWatch(PeerWatch&& other) noexcept;
  PeerWatch& operator=(PeerWatch&& other) noexcept;
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // Index (into the constructor's `pids`) of a process that has exited or
  // is dying of a signal, or -1. The /proc check runs at most every kDyingCheckPeriod
  // (the pidfds at every call): it is called from idle waits.
  int exited() const;
  // Whether the process at `index` has exited or is dying of a signal
  // (false for one not watched).
  bool has_exited(int index) const;
  static constexpr std::chrono::microseconds kDyingCheckPeriod{500};
  bool available() const { return all_watched_; }
  std::string describe_exit(int index) const;
  // The pidfds, for a caller that waits in its own poll() (one becomes
  // readable when its process exits), and the constructor's index of the
  // process behind the pidfd at `position`.
  const std::vector<int>& descriptors() const { return fds_; }
  int index_at(std::size_t position) const { return index_.at(position); }

 private:
  void close_all();
  // Reads which watched processes are dying of a signal, at most every
  // kDyingCheckPeriod (a read of /proc each): exited() and has_exited()
  // share it, so that a wait that asks after every peer costs no more.
  void refresh_dying() const;
  std::vector<int> fds_;    // pidfd per watched process
  std::vector<int> index_;  // its index in the constructor's list
  // /proc/PID/stat of each, opened with its pidfd: it names that process,
  // not a later one given the same pid (reads fail once it is reaped).
  std::vector<int> stat_fds_;
  // Seen dying (it stays so), by position, and when /proc is read next.
  mutable std::vector<char> dying_;
  mutable std::chrono::steady_clock::time_point next_dying_check_{};
  std::vector<pid_t> pids_;
  bool all_watched_ = true;
};

}  // namespace ringmend::transport
