// ulfm::pmix_server_port and pmix_connection_state, the latter on real
// loopback TCP connections made here.
#include "ulfm/pmix_connection.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <string>

using ringmend::ulfm::pmix_connection_state;
using ringmend::ulfm::pmix_server_port;
using ringmend::ulfm::PmixConnection;

namespace {

ringmend::ulfm::EnvLookup lookup(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

// A socket closed when the test ends.
struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// A listener on 127.0.0.1 at a port the kernel picks.
int listening_port(const Fd& listener) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return -1;
  if (::listen(listener.fd, 4) != 0) return -1;
  socklen_t len = sizeof addr;
  if (::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  return ntohs(addr.sin_port);
}

bool connect_to(const Fd& client, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  return ::connect(client.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

}  // namespace

TEST(PmixConnection, ServerPortFromTheUri) {
  EXPECT_EQ(pmix_server_port(lookup({{"PMIX_SERVER_URI41", "prterun-vm-2429@0.0;tcp4://192.0.2.2:54319"}})),
            54319);
  // An older variable when the newest is missing; IPv6.
  EXPECT_EQ(pmix_server_port(lookup({{"PMIX_SERVER_URI3", "job@0.0;tcp6://[fe80::1]:1234"}})), 1234);
  EXPECT_FALSE(pmix_server_port(lookup({})));
  EXPECT_FALSE(pmix_server_port(lookup({{"PMIX_SERVER_URI41", "job@0.0;usock:/tmp/x"}})));
  EXPECT_FALSE(pmix_server_port(lookup({{"PMIX_SERVER_URI41", "job@0.0;tcp4://192.0.2.2:port"}})));
  EXPECT_FALSE(pmix_server_port(lookup({{"PMIX_SERVER_URI41", "job@0.0;tcp4://192.0.2.2:70000"}})));
}

TEST(PmixConnection, SeesWhetherTheConnectionToThePortSendsWithoutDelay) {
  Fd listener(::socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_GE(listener.fd, 0);
  const int port = listening_port(listener);
  ASSERT_GT(port, 0);
  EXPECT_EQ(pmix_connection_state(port), PmixConnection::NotFound);  // listening is not connected

  Fd client(::socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(connect_to(client, port));
  Fd accepted(::accept(listener.fd, nullptr, nullptr));
  ASSERT_GE(accepted.fd, 0);
  EXPECT_EQ(pmix_connection_state(port), PmixConnection::Nagle);

  const int one = 1;
  ASSERT_EQ(::setsockopt(client.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), 0);
  EXPECT_EQ(pmix_connection_state(port), PmixConnection::NoDelay);
  EXPECT_EQ(pmix_connection_state(port == 65535 ? 1 : port + 1), PmixConnection::NotFound);
}
