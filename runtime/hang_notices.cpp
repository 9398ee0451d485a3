#include "runtime/hang_notices.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "ringmend/core/log.hpp"
#include "ringmend/core/progress_record.hpp"

namespace ringmend {
namespace {

// One datagram. The receiver checks that it names it (member id and pid):
// a notice meant for another process, or a stale one that reached a reused
// port, is dropped.
struct Notice {
  std::uint32_t magic = kMagic;
  std::int32_t from = -1;  // the member that waits
  std::int32_t to = -1;    // the member it tells
  std::int32_t pid = 0;    // ... and its process, as the epoch knows it
  std::uint64_t seq = 0;   // the collective it waits in
  std::uint32_t waited_ms = 0;
  static constexpr std::uint32_t kMagic = 0x524d484e;  // "RMHN"
};

}  // namespace

HangNotices::HangNotices(const std::string& ip, double hang_timeout_seconds)
    : hang_timeout_(hang_timeout_seconds) {
  if (hang_timeout_ <= 0) return;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (::inet_pton(AF_INET, ip.c_str(), &sa.sin_addr) != 1) {
    log(LogLevel::Warn, "hang notices: '" + ip +
                            "' is not an IPv4 address; a stuck member alone on its node "
                            "is not found");
    return;
  }
  socket_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  stop_ = ::eventfd(0, EFD_CLOEXEC);
  socklen_t len = sizeof sa;
  if (socket_ < 0 || stop_ < 0 || ::bind(socket_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      ::getsockname(socket_, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    log(LogLevel::Warn, std::string("hang notices: no socket on ") + ip + " (" + std::strerror(errno) +
                            "); a stuck member alone on its node is not found");
    if (socket_ >= 0) ::close(socket_);
    if (stop_ >= 0) ::close(stop_);
    socket_ = stop_ = -1;
    return;
  }
  ip_ = sa.sin_addr.s_addr;
  port_ = sa.sin_port;
  thread_ = std::thread([this] { listen(); });
}

HangNotices::~HangNotices() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(stop_, &one, sizeof one);
    thread_.join();
  }
  if (socket_ >= 0) ::close(socket_);
  if (stop_ >= 0) ::close(stop_);
}

void HangNotices::tell_others(const membership::Epoch& e, std::uint64_t seq, double waited,
                              const std::vector<bool>& same_node) const {
  if (socket_ < 0) return;
  for (int r = 0; r < e.size; ++r) {
    const membership::MemberInfo& m = e.infos.at(static_cast<std::size_t>(r));
    if (r == e.rank || same_node.at(static_cast<std::size_t>(r)) || m.notice_port == 0) continue;
    Notice n;
    n.from = e.my_id();
    n.to = e.members.at(static_cast<std::size_t>(r));
    n.pid = m.pid;
    n.seq = seq;
    n.waited_ms = static_cast<std::uint32_t>(waited * 1000);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = m.notice_ip;
    to.sin_port = m.notice_port;
    // Best effort: a lost datagram is sent again at the next look.
    (void)::sendto(socket_, &n, sizeof n, MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  }
}

void HangNotices::listen() {
  pollfd fds[2] = {{socket_, POLLIN, 0}, {stop_, POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    Notice n;
    const ssize_t got = ::recv(socket_, &n, sizeof n, 0);
    if (got != static_cast<ssize_t>(sizeof n) || n.magic != Notice::kMagic) continue;
    if (n.to != member_.load(std::memory_order_relaxed) || n.pid != static_cast<std::int32_t>(::getpid()))
      continue;
    judge_self(n.from, n.seq, n.waited_ms / 1000.0);
  }
}

void HangNotices::judge_self(int from, std::uint64_t seq, double waited) const {
  const pid_t self = ::getpid();
  const auto seen = progress::observe(self);
  if (!seen || !progress::is_stuck(*seen, seq, waited, hang_timeout_)) return;
  log(LogLevel::Warn, "member " + std::to_string(seen->member) + " has not come to collective #" +
                          std::to_string(seq) + " for " + seconds_text(seen->idle_seconds) +
                          " while member " + std::to_string(from) + " waited " + seconds_text(waited) +
                          " (RINGMEND_HANG_TIMEOUT " + seconds_text(hang_timeout_) +
                          "): excluded as stuck (it kills itself)");
  std::string why;
  if (!progress::exclude(self, from, seen->idle_seconds, why))
    log(LogLevel::Error, "hang notices: could not exclude this process (" + why + ")");
}

}  // namespace ringmend
