#include "ulfm/pmix_connection.hpp"

#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <string_view>

#include "ringmend/core/parse_whole.hpp"

namespace ringmend::ulfm {
namespace {

// The peer port of a connected TCP socket; nothing for anything else
// (getsockopt fails on what is not a socket).
std::optional<int> tcp_peer_port(int fd) {
  int type = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return std::nullopt;
  sockaddr_storage peer{};
  len = sizeof peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return std::nullopt;
  if (peer.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(peer).sin_port);
  if (peer.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(peer).sin6_port);
  return std::nullopt;  // a Unix socket: no Nagle there
}

}  // namespace

std::optional<int> pmix_server_port(const EnvLookup& env) {
  for (const char* name : {"PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3", "PMIX_SERVER_URI21",
                           "PMIX_SERVER_URI2"}) {
    const char* uri = env(name);
    if (!uri) continue;
    const std::string_view v(uri);
    const auto scheme = v.find("://");
    if (scheme == std::string_view::npos) return std::nullopt;
    const std::string_view before = v.substr(0, scheme);
    if (!before.ends_with("tcp4") && !before.ends_with("tcp6")) return std::nullopt;
    const auto colon = v.rfind(':');
    if (colon == std::string_view::npos || colon < scheme + 3) return std::nullopt;
    const auto port = parse_whole<int>(uri + colon + 1);
    if (!port || *port <= 0 || *port > 65535) return std::nullopt;
    return port;
  }
  return std::nullopt;
}

PmixConnection pmix_connection_state(int server_port) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return PmixConnection::NotFound;
  PmixConnection state = PmixConnection::NotFound;
  const int own = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    const auto fd = parse_whole<int>(entry->d_name);  // "." and ".." are not
    if (!fd || *fd == own || tcp_peer_port(*fd) != server_port) continue;
    int nodelay = 0;
    socklen_t len = sizeof nodelay;
    if (::getsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len) != 0) continue;
    state = nodelay ? PmixConnection::NoDelay : PmixConnection::Nagle;
    if (state == PmixConnection::Nagle) break;
  }
  ::closedir(dir);
  return state;
}

}  // namespace ringmend::ulfm
