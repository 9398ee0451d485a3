// Direct liveness check of the processes on this node (pidfds).
//
// MPI reports a dead rank within tens of milliseconds; a shared-memory wait
// can see it sooner and without any MPI call: a pidfd becomes readable the
// moment its process exits (SIGKILL included).
#pragma once

#include <sys/types.h>

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

  // Index (into the constructor's `pids`) of a process that has exited, or -1.
  int exited() const;
  // Whether the process at `index` has exited (false for one not watched).
  bool has_exited(int index) const;
  bool available() const { return all_watched_; }
  std::string describe_exit(int index) const;
  // The pidfds, for a caller that waits in its own poll() (one becomes
  // readable when its process exits), and the constructor's index of the
  // process behind the pidfd at `position`.
  const std::vector<int>& descriptors() const { return fds_; }
  int index_at(std::size_t position) const { return index_.at(position); }

 private:
  void close_all();
  std::vector<int> fds_;    // pidfd per watched process
  std::vector<int> index_;  // its index in the constructor's list
  std::vector<pid_t> pids_;
  bool all_watched_ = true;
};

}  // namespace ringmend::transport
