#include "runtime/config.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "ringmend/error.hpp"

namespace ringmend {
namespace {

[[noreturn]] void bad(const std::string& name, const std::string& value, const std::string& expected) {
  throw Error(Errc::BadEnvironment, name + "='" + value + "' is not valid: expected " + expected);
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  return std::string(v);
}

}  // namespace

std::size_t parse_size(const std::string& name, const std::string& value) {
  const std::string expected = "a positive byte count such as 65536, 64K or 1M";
  std::size_t i = 0;
  unsigned long long n = 0;
  if (value.empty() || !std::isdigit(static_cast<unsigned char>(value[0]))) bad(name, value, expected);
  while (i < value.size() && std::isdigit(static_cast<unsigned char>(value[i]))) {
    if (n > (1ULL << 50)) bad(name, value, expected);
    n = n * 10 + static_cast<unsigned>(value[i++] - '0');
  }
  std::string suffix = value.substr(i);
  if (suffix == "K" || suffix == "k" || suffix == "KiB")
    n <<= 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB")
    n <<= 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB")
    n <<= 30;
  else if (!suffix.empty())
    bad(name, value, expected);
  if (n == 0) bad(name, value, expected);
  return static_cast<std::size_t>(n);
}

double parse_seconds(const std::string& name, const std::string& value) {
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v) || v < 0)
    bad(name, value, "a non-negative number of seconds");
  return v;
}

bool parse_bool(const std::string& name, const std::string& value) {
  if (value == "1" || value == "yes" || value == "true" || value == "on") return true;
  if (value == "0" || value == "no" || value == "false" || value == "off" || value.empty()) return false;
  bad(name, value, "1/0, yes/no, true/false or on/off");
}

Config Config::from_environment() {
  Config c;
  if (auto v = env("RINGMEND_CHUNK_BYTES")) {
    c.chunk_bytes = parse_size("RINGMEND_CHUNK_BYTES", *v);
    if (c.chunk_bytes < 4096 || c.chunk_bytes > (std::size_t{1} << 30))
      bad("RINGMEND_CHUNK_BYTES", *v, "a size between 4K and 1G");
  }
  if (auto v = env("RINGMEND_TIMEOUT")) c.timeout_seconds = parse_seconds("RINGMEND_TIMEOUT", *v);
  if (auto v = env("RINGMEND_FINALIZE_TIMEOUT"))
    c.finalize_timeout_seconds = parse_seconds("RINGMEND_FINALIZE_TIMEOUT", *v);
  if (auto v = env("RINGMEND_RECOVERY_TIMEOUT"))
    c.recovery_timeout_seconds = parse_seconds("RINGMEND_RECOVERY_TIMEOUT", *v);
  if (auto v = env("RINGMEND_VERBOSE")) c.verbose = parse_bool("RINGMEND_VERBOSE", *v);
  if (auto v = env("RINGMEND_FAULT")) c.fault_spec = *v;
  if (auto v = env("RINGMEND_FAULT_RECORD")) c.fault_record = *v;
  if (auto v = env("RINGMEND_SHM")) c.shm = parse_bool("RINGMEND_SHM", *v);
  if (auto v = env("RINGMEND_SHM_CHUNK_BYTES")) {
    c.shm_chunk_bytes = parse_size("RINGMEND_SHM_CHUNK_BYTES", *v);
    if (c.shm_chunk_bytes < 4096 || c.shm_chunk_bytes > (std::size_t{64} << 20))
      bad("RINGMEND_SHM_CHUNK_BYTES", *v, "a size between 4K and 64M");
  }
  if (auto v = env("RINGMEND_SMALL_BYTES")) {
    c.small_bytes = parse_size("RINGMEND_SMALL_BYTES", *v);
    if (c.small_bytes > (std::size_t{1} << 20)) bad("RINGMEND_SMALL_BYTES", *v, "a size up to 1M");
  }
  if (auto v = env("RINGMEND_DEBUG")) {
    // A comma-separated list of subsystems.
    std::size_t start = 0;
    while (start <= v->size()) {
      const std::size_t end = std::min(v->find(',', start), v->size());
      const std::string item = v->substr(start, end - start);
      if (item == "topo")
        c.debug_topo = true;
      else if (!item.empty())
        bad("RINGMEND_DEBUG", *v, "a comma-separated list of: topo");
      start = end + 1;
    }
  }
  return c;
}

}  // namespace ringmend
