#include "transport/peer_watch.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <utility>
#include <vector>

namespace ringmend::transport {
namespace {

int pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

}  // namespace

PeerWatch::PeerWatch(const std::vector<pid_t>& pids) : pids_(pids) {
  const pid_t self = ::getpid();
  for (std::size_t i = 0; i < pids.size(); ++i) {
    if (pids[i] <= 0 || pids[i] == self) continue;
    int fd = pidfd_open(pids[i]);
    if (fd < 0) {
      all_watched_ = false;
      continue;
    }
    fds_.push_back(fd);
    index_.push_back(static_cast<int>(i));
  }
}

PeerWatch::~PeerWatch() { close_all(); }

PeerWatch::PeerWatch(PeerWatch&& other) noexcept
    : fds_(std::move(other.fds_)),
      index_(std::move(other.index_)),
      pids_(std::move(other.pids_)),
      all_watched_(other.all_watched_) {
  other.fds_.clear();
}

PeerWatch& PeerWatch::operator=(PeerWatch&& other) noexcept {
  if (this != &other) {
    close_all();
    fds_ = std::move(other.fds_);
    index_ = std::move(other.index_);
    pids_ = std::move(other.pids_);
    all_watched_ = other.all_watched_;
    other.fds_.clear();
  }
  return *this;
}

void PeerWatch::close_all() {
  for (int fd : fds_) ::close(fd);
  fds_.clear();
}

int PeerWatch::exited() const {
  if (fds_.empty()) return -1;
  // Polled from every idle shared-memory wait: no allocation here.
  constexpr std::size_t kOnStack = 64;
  std::array<pollfd, kOnStack> stack;
  std::vector<pollfd> heap(fds_.size() > kOnStack ? fds_.size() : 0);
  pollfd* p = fds_.size() > kOnStack ? heap.data() : stack.data();
  for (std::size_t i = 0; i < fds_.size(); ++i) p[i] = {fds_[i], POLLIN, 0};
  if (::poll(p, fds_.size(), 0) <= 0) return -1;
  for (std::size_t i = 0; i < fds_.size(); ++i)
    if (p[i].revents) return index_[i];
  return -1;
}

bool PeerWatch::has_exited(int index) const {
  for (std::size_t i = 0; i < fds_.size(); ++i)
    if (index_[i] == index) {
      pollfd p{fds_[i], POLLIN, 0};
      return ::poll(&p, 1, 0) > 0 && p.revents != 0;
    }
  return false;
}

std::string PeerWatch::describe_exit(int index) const {
  if (index < 0 || static_cast<std::size_t>(index) >= pids_.size()) return "no process exited";
  return "process " + std::to_string(pids_[static_cast<std::size_t>(index)]) + " exited";
}

}  // namespace ringmend::transport
