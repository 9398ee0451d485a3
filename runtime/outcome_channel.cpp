#include "runtime/outcome_channel.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

#include "ringmend/core/outcome.hpp"

namespace ringmend {

int outcome_fd_from_environment() {
  const char* v = std::getenv(outcome::kFdVariable);
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long fd = std::strtol(v, &end, 10);
  if (*end || fd < 3 || fd > 1 << 20 || ::fcntl(static_cast<int>(fd), F_GETFD) < 0) return -1;
  // The application's own children must not hold the launcher's pipe.
  ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
  return static_cast<int>(fd);
}

void tell_launcher(int fd, const std::string& words) {
  if (fd < 0) return;
  const std::string line = words + "\n";
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
}

}  // namespace ringmend
