#include "transport/peer_watch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>
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

// The kernel's PF_EXITING task flag: set by do_exit() before it releases
// the process's memory (include/linux/sched.h).
constexpr unsigned long kPfExiting = 0x4;

// Whether the process whose /proc/PID/stat is open at `fd` is dying of a
// signal (a SIGKILL, a crash): its main thread has begun its exit
// (PF_EXITING in field 9, or a zombie) with a signal in its exit code
// (field 52, as waitpid() reports it), or it was reaped (the read fails).
// A main thread that ended on its own (pthread_exit) while the others run
// on has exit code 0: alive, left to the pidfd; so is a normal exit.
bool stat_says_killed(int fd) {
  std::array<char, 1024> buf{};
  const ssize_t n = ::pread(fd, buf.data(), buf.size() - 1, 0);
  if (n <= 0) return true;  // ESRCH: the process is gone
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so
  // the fields are counted from the last ')' (field 3 is the state).
  const char* p = std::strrchr(buf.data(), ')');
  if (!p) return false;
  char state = 0;
  unsigned long flags = 0;
  long exit_code = 0;
  for (int field = 3; field <= 52; ++field) {
    while (*p == ' ' || *p == ')') ++p;
    if (*p == 0) return false;  // an older kernel without field 52
    if (field == 3) state = *p;
    if (field == 9) flags = std::strtoul(p, nullptr, 10);
    if (field == 52) exit_code = std::strtol(p, nullptr, 10);
    while (*p && *p != ' ') ++p;
  }
  const bool exiting = state == 'Z' || state == 'X' || (flags & kPfExiting) != 0;
  return exiting && (exit_code & 0x7f) != 0;
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
    // Opened after the pidfd: if `pid` was reused in between, the pidfd
    // (of the earlier process) is readable already and decides.
    const std::string stat = "/proc/" + std::to_string(pids[i]) + "/stat";
    stat_fds_.push_back(::open(stat.c_str(), O_RDONLY | O_CLOEXEC));
  }
  dying_.assign(fds_.size(), 0);
}

PeerWatch::~PeerWatch() { close_all(); }

PeerWatch::PeerWatch(PeerWatch&& other) noexcept
    : fds_(std::move(other.fds_)),
      index_(std::move(other.index_)),
      stat_fds_(std::move(other.stat_fds_)),
      dying_(std::move(other.dying_)),
      pids_(std::move(other.pids_)),
      all_watched_(other.all_watched_) {
  other.fds_.clear();
  other.stat_fds_.clear();
}

PeerWatch& PeerWatch::operator=(PeerWatch&& other) noexcept {
  if (this != &other) {
    close_all();
    fds_ = std::move(other.fds_);
    index_ = std::move(other.index_);
    stat_fds_ = std::move(other.stat_fds_);
    dying_ = std::move(other.dying_);
    pids_ = std::move(other.pids_);
    all_watched_ = other.all_watched_;
    other.fds_.clear();
    other.stat_fds_.clear();
  }
  return *this;
}

void PeerWatch::close_all() {
  for (int fd : fds_) ::close(fd);
  for (int fd : stat_fds_)
    if (fd >= 0) ::close(fd);
  fds_.clear();
  stat_fds_.clear();
}

int PeerWatch::exited() const {
  if (fds_.empty()) return -1;
  // Polled from every idle shared-memory wait: no allocation here.
  constexpr std::size_t kOnStack = 64;
  std::array<pollfd, kOnStack> stack;
  std::vector<pollfd> heap(fds_.size() > kOnStack ? fds_.size() : 0);
  pollfd* p = fds_.size() > kOnStack ? heap.data() : stack.data();
  for (std::size_t i = 0; i < fds_.size(); ++i) p[i] = {fds_[i], POLLIN, 0};
  if (::poll(p, fds_.size(), 0) > 0)
    for (std::size_t i = 0; i < fds_.size(); ++i)
      if (p[i].revents) return index_[i];
  refresh_dying();
  for (std::size_t i = 0; i < fds_.size(); ++i)
    if (dying_[i]) return index_[i];
  return -1;
}

void PeerWatch::refresh_dying() const {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_dying_check_) return;
  next_dying_check_ = now + kDyingCheckPeriod;
  for (std::size_t i = 0; i < fds_.size(); ++i)
    if (!dying_[i] && stat_fds_[i] >= 0 && stat_says_killed(stat_fds_[i])) dying_[i] = 1;
}

bool PeerWatch::has_exited(int index) const {
  for (std::size_t i = 0; i < fds_.size(); ++i)
    if (index_[i] == index) {
      pollfd p{fds_[i], POLLIN, 0};
      if (::poll(&p, 1, 0) > 0 && p.revents != 0) return true;
      refresh_dying();
      return dying_[i] != 0;
    }
  return false;
}

std::string PeerWatch::describe_exit(int index) const {
  if (index < 0 || static_cast<std::size_t>(index) >= pids_.size()) return "no process exited";
  return "process " + std::to_string(pids_[static_cast<std::size_t>(index)]) + " exited";
}

}  // namespace ringmend::transport
