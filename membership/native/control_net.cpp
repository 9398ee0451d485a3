#include "membership/native/control_net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace ringmend::membership::native {

struct ControlNet::Connection {
  int fd = -1;
  MemberId peer = -1;  // outgoing: known; incoming: from its Hello
  bool outgoing = false;
  bool connecting = false;
  std::string out;
  std::size_t out_offset = 0;
  FrameReader in;
};

namespace {

[[noreturn]] void fail_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), "control network: " + what);
}

void tune(int fd) {
  const int one = 1;
  // Control frames are small and each one is awaited: never hold one back
  // for the acknowledgement of the previous (Nagle).
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool parse_address(const std::string& address, sockaddr_in& sa) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  sa = {};
  sa.sin_family = AF_INET;
  if (::inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr) != 1) return false;
  try {
    const int port = std::stoi(address.substr(colon + 1));
    if (port <= 0 || port > 65535) return false;
    sa.sin_port = htons(static_cast<std::uint16_t>(port));
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

std::string ipv4_text(const sockaddr* sa) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof text);
  return text;
}

}  // namespace

std::string control_ip(const std::string& interface) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "127.0.0.1";
  std::string found;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!interface.empty()) {
      if (interface == i->ifa_name) {
        found = ipv4_text(i->ifa_addr);
        break;
      }
      continue;
    }
    if ((i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK)) {
      found = ipv4_text(i->ifa_addr);
      break;
    }
  }
  ::freeifaddrs(list);
  if (found.empty() && !interface.empty())
    throw std::runtime_error("RINGMEND_CONTROL_INTERFACE=" + interface +
                             ": no such interface with an IPv4 address");
  return found.empty() ? "127.0.0.1" : found;
}

ControlNet::ControlNet(std::uint64_t job_key, MemberId self, const std::string& bind_ip)
    : job_key_(job_key), self_(self) {
  sockaddr_in sa{};
  if (!parse_address(bind_ip + ":1", sa))
    throw std::invalid_argument("control network: '" + bind_ip + "' is not an IPv4 address");
  sa.sin_port = 0;
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listener_ < 0) fail_errno("socket");
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    const int e = errno;
    ::close(listener_);
    errno = e;
    fail_errno("bind to " + bind_ip);
  }
  if (::listen(listener_, 1024) != 0) fail_errno("listen");
  socklen_t len = sizeof sa;
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&sa), &len);
  address_ = bind_ip + ":" + std::to_string(ntohs(sa.sin_port));
}

ControlNet::~ControlNet() {
  for (auto& [fd, c] : connections_) ::close(fd);
  if (listener_ >= 0) ::close(listener_);
}

void ControlNet::add_peer(MemberId id, const std::string& address) {
  sockaddr_in sa{};
  if (!parse_address(address, sa))
    throw std::invalid_argument("control network: member " + std::to_string(id) + "'s address '" + address +
                                "' is not IPv4:PORT");
  peers_[id] = address;
}

void ControlNet::send(MemberId to, const Frame& frame) {
  if (to == self_ || forgotten_.count(to) || reported_.count(to)) return;
  const auto peer = peers_.find(to);
  if (peer == peers_.end()) return;
  auto out = outgoing_.find(to);
  if (out == outgoing_.end()) {
    sockaddr_in sa{};
    parse_address(peer->second, sa);
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail_errno("socket");
    tune(fd);
    const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    if (rc != 0 && errno != EINPROGRESS) {
      ::close(fd);
      failed_connects_.push_back(to);  // refused: nobody listens there any more
      return;
    }
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->peer = to;
    c->outgoing = true;
    c->connecting = rc != 0;
    Frame hello;
    hello.kind = FrameKind::Hello;
    hello.epoch = frame.epoch;
    hello.from = self_;
    hello.job_key = job_key_;
    c->out = encode(hello);
    out = outgoing_.emplace(to, fd).first;
    connections_.emplace(fd, std::move(c));
  }
  Connection& c = *connections_.at(out->second);
  c.out += encode(frame);
  if (!c.connecting) flush(c);
}

void ControlNet::flush(Connection& c) {
  while (c.out_offset < c.out.size()) {
    const ssize_t n =
        ::send(c.fd, c.out.data() + c.out_offset, c.out.size() - c.out_offset, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) return;  // EAGAIN: later; an error: the next poll reports it
    c.out_offset += static_cast<std::size_t>(n);
  }
  c.out.clear();
  c.out_offset = 0;
}

void ControlNet::forget(MemberId id) {
  forgotten_.insert(id);
  std::vector<int> close;
  for (auto& [fd, c] : connections_)
    if (c->peer == id) close.push_back(fd);
  for (int fd : close) {
    ::close(fd);
    connections_.erase(fd);
  }
  outgoing_.erase(id);
}

void ControlNet::close_gracefully(std::uint64_t epoch, int timeout_ms) {
  Frame bye;
  bye.kind = FrameKind::Bye;
  bye.epoch = epoch;
  bye.from = self_;
  std::vector<MemberId> to;
  for (auto& [id, fd] : outgoing_) to.push_back(id);
  for (MemberId id : to) send(id, bye);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (queued_bytes() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> fds;
    pollfds(fds);
    ::poll(fds.data(), fds.size(), 10);
    Events ignored;
    handle(fds, ignored);
  }
  for (auto& [fd, c] : connections_) ::close(fd);
  connections_.clear();
  outgoing_.clear();
}

void ControlNet::pollfds(std::vector<pollfd>& fds) const {
  fds.push_back({listener_, POLLIN, 0});
  for (const auto& [fd, c] : connections_) {
    short events = POLLIN;
    if (c->connecting || c->out_offset < c->out.size()) events |= POLLOUT;
    fds.push_back({fd, events, 0});
  }
}

std::size_t ControlNet::queued_bytes() const {
  std::size_t n = 0;
  for (const auto& [fd, c] : connections_) n += c->out.size() - c->out_offset;
  return n;
}

void ControlNet::accept_all() {
  for (;;) {
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    tune(fd);
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    connections_.emplace(fd, std::move(c));
  }
}

void ControlNet::report_lost(MemberId peer, Events& out) {
  if (peer < 0 || forgotten_.count(peer) || said_bye_.count(peer)) return;
  if (reported_.insert(peer).second) out.lost.push_back(peer);
}

bool ControlNet::drain(Connection& c, Events& out) {
  char buffer[16384];
  bool ended = false;
  for (;;) {
    const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n > 0) {
      c.in.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    ended = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);  // closed or reset
    break;
  }
  // Frames first: a peer's last words (Bye) come before its close.
  try {
    while (auto f = c.in.next()) {
      if (f->kind == FrameKind::Hello) {
        if (f->job_key != job_key_ || c.outgoing) return true;  // another job's process, or nonsense
        c.peer = f->from;
        continue;
      }
      if (c.peer < 0 || f->from != c.peer) return true;
      if (f->kind == FrameKind::Bye) said_bye_.insert(c.peer);
      if (!forgotten_.count(c.peer)) out.frames.push_back(std::move(*f));
    }
  } catch (const std::runtime_error&) {
    return true;
  }
  return ended;
}

void ControlNet::close_connection(int fd, bool failed, Events& out) {
  const auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  const MemberId peer = it->second->peer;
  const bool outgoing = it->second->outgoing;
  ::close(fd);
  connections_.erase(it);
  if (outgoing) outgoing_.erase(peer);
  if (!failed) return;
  // A peer that leaves writes Bye on its own connection to us, then closes
  // both: the close of ours may be seen first. Its Bye, already here,
  // decides whether it failed.
  std::vector<int> theirs;
  for (auto& [other, c] : connections_)
    if (c->peer == peer && !c->outgoing) theirs.push_back(other);
  for (int other : theirs)
    if (drain(*connections_.at(other), out)) close_connection(other, false, out);
  report_lost(peer, out);
}

void ControlNet::handle(const std::vector<pollfd>& fds, Events& out) {
  for (MemberId id : failed_connects_) report_lost(id, out);
  failed_connects_.clear();
  for (const pollfd& p : fds) {
    if (p.revents == 0) continue;
    if (p.fd == listener_) {
      accept_all();
      continue;
    }
    const auto it = connections_.find(p.fd);
    if (it == connections_.end()) continue;  // closed meanwhile
    Connection& c = *it->second;
    if (c.connecting && (p.revents & (POLLOUT | POLLERR | POLLHUP))) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        close_connection(p.fd, true, out);
        continue;
      }
      c.connecting = false;
    }
    if (!c.connecting && (p.revents & POLLOUT)) flush(c);
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) && (drain(c, out) || (p.revents & POLLERR)))
      close_connection(p.fd, c.peer >= 0, out);
  }
}

}  // namespace ringmend::membership::native
