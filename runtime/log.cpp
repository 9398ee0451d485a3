#include "runtime/log.hpp"

#include <cstdio>

namespace ringmend {

void log(const Settings& settings, const membership::Epoch& epoch, const std::string& message) {
  if (!settings.verbose) return;
  std::fprintf(stderr, "[ringmend %d/%d e%llu] %s\n", epoch.rank, epoch.size,
               static_cast<unsigned long long>(epoch.number), message.c_str());
}

}  // namespace ringmend
