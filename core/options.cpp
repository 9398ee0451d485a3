#include "ringmend/core/options.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <ostream>
#include <sstream>

#include "ringmend/core/error.hpp"

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

std::ostream& operator<<(std::ostream& out, LogLevel level) { return out << name_of(level); }
std::ostream& operator<<(std::ostream& out, SparePolicy policy) { return out << name_of(policy); }
std::ostream& operator<<(std::ostream& out, SubgroupRecovery recovery) { return out << name_of(recovery); }

const char* name_of(SparePolicy policy) { return policy == SparePolicy::Replace ? "replace" : "shrink"; }
const char* name_of(SubgroupRecovery recovery) {
  return recovery == SubgroupRecovery::Call ? "call" : "step";
}
std::ostream& operator<<(std::ostream& out, HangPolicy policy) { return out << name_of(policy); }
const char* name_of(HangPolicy policy) { return policy == HangPolicy::Exclude ? "exclude" : "fail"; }
std::ostream& operator<<(std::ostream& out, StragglerPolicy policy) { return out << name_of(policy); }
const char* name_of(StragglerPolicy policy) {
  return policy == StragglerPolicy::Off ? "off" : policy == StragglerPolicy::Report ? "report" : "release";
}
std::ostream& operator<<(std::ostream& out, MembershipBackend backend) { return out << name_of(backend); }
const char* name_of(MembershipBackend backend) {
  switch (backend) {
    case MembershipBackend::Auto:
      return "auto";
    case MembershipBackend::Native:
      return "native";
    case MembershipBackend::Mpi:
      return "mpi";
  }
  return "?";
}

namespace {

template <class T>
std::string text_of(const T& v) {
  std::ostringstream s;
  s << std::boolalpha << v;
  return s.str();
}
std::string text_of(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& item : v) s += (s.empty() ? "" : ",") + item;
  return s;
}

// One setting: the value set in code if any, else the variable's, else the
// default already in `out`; every source is checked by `valid`.
template <class T>
struct Source {
  bool read_environment;

  void take(T& out, const std::optional<T>& given, const char* field, const char* variable,
            const std::function<T(const std::string&, const std::string&)>& parse,
            const std::function<bool(const T&)>& valid, const std::string& expected) const {
    if (given) {
      if (!valid(*given))
        throw Error(Errc::InvalidArgument, std::string("Options::") + field + " = " + text_of(*given) +
                                               " is not valid: expected " + expected);
      out = *given;
      return;
    }
    if (!read_environment) return;
    if (auto v = env(variable)) {
      T parsed = parse(variable, *v);
      if (!valid(parsed)) bad(variable, *v, expected);
      out = parsed;
    }
  }
};

auto size_between(std::size_t lo, std::size_t hi) {
  return [lo, hi](const std::size_t& v) { return v >= lo && v <= hi; };
}
bool non_negative(const double& v) { return std::isfinite(v) && v >= 0; }
bool any_bool(const bool&) { return true; }

// The items of a comma-separated list, empty ones included ("a,,b" has 3).
std::vector<std::string> split_commas(const std::string& value) {
  std::vector<std::string> items;
  for (std::size_t start = 0; start <= value.size();) {
    const std::size_t end = std::min(value.find(',', start), value.size());
    items.push_back(value.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

// RINGMEND_DEBUG: a comma-separated list of subsystems.
bool parse_debug_topo(const std::string& name, const std::string& value) {
  bool topo = false;
  for (const std::string& item : split_commas(value)) {
    if (item == "topo")
      topo = true;
    else if (!item.empty())
      bad(name, value, "a comma-separated list of: topo");
  }
  return topo;
}

std::string parse_text(const std::string&, const std::string& value) { return value; }
bool any_text(const std::string&) { return true; }

// Device names travel in a Location's 24-byte NIC field (topo/location.hpp).
constexpr std::size_t kDeviceNameMax = 23;
constexpr std::size_t kDevicesMax = 16;

// An empty list (set in code) is the default: no rail devices.
bool valid_device_list(const std::vector<std::string>& devices) {
  if (devices.size() > kDevicesMax) return false;
  return std::all_of(devices.begin(), devices.end(), [](const std::string& d) {
    return !d.empty() && d.size() <= kDeviceNameMax && std::all_of(d.begin(), d.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':';
    });
  });
}

}  // namespace

std::vector<std::string> parse_device_list(const std::string& name, const std::string& value) {
  std::vector<std::string> devices = split_commas(value);
  if (!valid_device_list(devices))
    bad(name, value,
        "a comma-separated list of 1-16 network device names (letters, digits, _ - . :, at most 23 "
        "characters each), e.g. eth1,eth2 or mlx5_0:1,mlx5_1:1");
  return devices;
}

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

double parse_fraction(const std::string& name, const std::string& value) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v) || v < 0 || v > 1)
    bad(name, value, "a fraction between 0 and 1 (0.25: a quarter)");
  return v;
}

LogLevel parse_log_level(const std::string& name, const std::string& value) {
  for (LogLevel l : {LogLevel::Error, LogLevel::Warn, LogLevel::Info, LogLevel::Debug})
    if (value == name_of(l)) return l;
  bad(name, value, "error, warn, info or debug");
}

SparePolicy parse_spare_policy(const std::string& name, const std::string& value) {
  for (SparePolicy p : {SparePolicy::Replace, SparePolicy::Shrink})
    if (value == name_of(p)) return p;
  bad(name, value, "replace or shrink");
}

SubgroupRecovery parse_subgroup_recovery(const std::string& name, const std::string& value) {
  for (SubgroupRecovery r : {SubgroupRecovery::Call, SubgroupRecovery::Step})
    if (value == name_of(r)) return r;
  bad(name, value, "call or step");
}

HangPolicy parse_hang_policy(const std::string& name, const std::string& value) {
  for (HangPolicy p : {HangPolicy::Exclude, HangPolicy::Fail})
    if (value == name_of(p)) return p;
  bad(name, value, "exclude or fail");
}

StragglerPolicy parse_straggler_policy(const std::string& name, const std::string& value) {
  for (StragglerPolicy p : {StragglerPolicy::Off, StragglerPolicy::Report, StragglerPolicy::Release})
    if (value == name_of(p)) return p;
  bad(name, value, "off, report or release");
}

MembershipBackend parse_membership(const std::string& name, const std::string& value) {
  for (MembershipBackend b : {MembershipBackend::Auto, MembershipBackend::Native, MembershipBackend::Mpi})
    if (value == name_of(b)) return b;
  bad(name, value, "auto, native or mpi");
}

bool parse_bool(const std::string& name, const std::string& value) {
  if (value == "1" || value == "yes" || value == "true" || value == "on") return true;
  if (value == "0" || value == "no" || value == "false" || value == "off" || value.empty()) return false;
  bad(name, value, "1/0, yes/no, true/false or on/off");
}

namespace {

// A count written without a unit (RINGMEND_SHM_DEPTH=4).
std::size_t parse_count(const std::string& name, const std::string& value) {
  if (value.empty() || !std::all_of(value.begin(), value.end(), [](char c) { return std::isdigit(c); }) ||
      value.size() > 9)
    bad(name, value, "a whole number");
  return static_cast<std::size_t>(std::stoul(value));
}

// The collectives' sizes.
void resolve_collectives(const Options& o, Settings& s) {
  const Source<std::size_t> sizes{o.read_environment};
  sizes.take(s.chunk_bytes, o.chunk_bytes, "chunk_bytes", "RINGMEND_CHUNK_BYTES", parse_size,
             size_between(4 * KiB, 1024 * MiB), "a size between 4K and 1G");
  sizes.take(s.small_bytes, o.small_bytes, "small_bytes", "RINGMEND_SMALL_BYTES", parse_size,
             size_between(0, 1 * MiB), "a size up to 1M");
}

// The bounds on waits, and what a stuck member or a straggler costs.
void resolve_timeouts(const Options& o, Settings& s) {
  const Source<std::size_t> sizes{o.read_environment};
  const Source<double> seconds{o.read_environment};
  const char* const positive_seconds = "a non-negative number of seconds";
  seconds.take(s.timeout_seconds, o.timeout_seconds, "timeout_seconds", "RINGMEND_TIMEOUT", parse_seconds,
               non_negative, positive_seconds);
  seconds.take(s.hang_timeout_seconds, o.hang_timeout_seconds, "hang_timeout_seconds",
               "RINGMEND_HANG_TIMEOUT", parse_seconds, non_negative, positive_seconds);
  const Source<HangPolicy> hang_policies{o.read_environment};
  hang_policies.take(
      s.hang_policy, o.hang_policy, "hang_policy", "RINGMEND_HANG_POLICY", parse_hang_policy,
      [](const HangPolicy& p) { return p == HangPolicy::Exclude || p == HangPolicy::Fail; },
      "exclude or fail");
  const Source<StragglerPolicy> straggler_policies{o.read_environment};
  straggler_policies.take(
      s.straggler_policy, o.straggler_policy, "straggler_policy", "RINGMEND_STRAGGLER_POLICY",
      parse_straggler_policy,
      [](const StragglerPolicy& p) {
        return p == StragglerPolicy::Off || p == StragglerPolicy::Report || p == StragglerPolicy::Release;
      },
      "off, report or release");
  sizes.take(s.straggler_window, o.straggler_window, "straggler_window", "RINGMEND_STRAGGLER_WINDOW",
             parse_count, size_between(2, 1 << 24), "a number of calls, 2 or more");
  const Source<double> fractions{o.read_environment};
  fractions.take(
      s.straggler_fraction, o.straggler_fraction, "straggler_fraction", "RINGMEND_STRAGGLER_FRACTION",
      parse_fraction, [](const double& v) { return v >= 0.01 && v <= 1; }, "a fraction between 0.01 and 1");
  seconds.take(s.recovery_timeout_seconds, o.recovery_timeout_seconds, "recovery_timeout_seconds",
               "RINGMEND_RECOVERY_TIMEOUT", parse_seconds, non_negative, positive_seconds);
  seconds.take(
      s.heartbeat_timeout_seconds, o.heartbeat_timeout_seconds, "heartbeat_timeout_seconds",
      "RINGMEND_HEARTBEAT_TIMEOUT", parse_seconds, [](const double& v) { return v >= 0.01 && v <= 3600; },
      "between 0.01 and 3600 seconds");
  seconds.take(s.start_timeout_seconds, o.start_timeout_seconds, "start_timeout_seconds",
               "RINGMEND_START_TIMEOUT", parse_seconds, non_negative, positive_seconds);
  seconds.take(s.finalize_timeout_seconds, o.finalize_timeout_seconds, "finalize_timeout_seconds",
               "RINGMEND_FINALIZE_TIMEOUT", parse_seconds, non_negative, positive_seconds);
  seconds.take(s.mpi_finalize_timeout_seconds, o.mpi_finalize_timeout_seconds, "mpi_finalize_timeout_seconds",
               "RINGMEND_MPI_FINALIZE_TIMEOUT", parse_seconds, non_negative, positive_seconds);
}

// The membership: spares, joiners, the backend.
void resolve_membership(const Options& o, Settings& s) {
  const Source<std::size_t> sizes{o.read_environment};
  const Source<bool> flags{o.read_environment};
  const Source<std::string> texts{o.read_environment};
  sizes.take(s.spares, o.spares, "spares", "RINGMEND_SPARES", parse_count, size_between(0, 1 << 20),
             "a number of spare processes, 0 or more");
  flags.take(s.join, o.join, "join", "RINGMEND_JOIN", parse_bool, any_bool, "a boolean");
  const Source<SparePolicy> policies{o.read_environment};
  policies.take(
      s.spare_policy, o.spare_policy, "spare_policy", "RINGMEND_SPARE_POLICY", parse_spare_policy,
      [](const SparePolicy& p) { return p == SparePolicy::Replace || p == SparePolicy::Shrink; },
      "replace or shrink");
  const Source<SubgroupRecovery> recoveries{o.read_environment};
  recoveries.take(
      s.subgroup_recovery, o.subgroup_recovery, "subgroup_recovery", "RINGMEND_SUBGROUP_RECOVERY",
      parse_subgroup_recovery,
      [](const SubgroupRecovery& r) { return r == SubgroupRecovery::Call || r == SubgroupRecovery::Step; },
      "call or step");
  const Source<MembershipBackend> backends{o.read_environment};
  backends.take(
      s.membership, o.membership, "membership", "RINGMEND_MEMBERSHIP", parse_membership,
      [](const MembershipBackend& b) {
        return b == MembershipBackend::Auto || b == MembershipBackend::Native || b == MembershipBackend::Mpi;
      },
      "auto, native or mpi");
  texts.take(s.control_interface, o.control_interface, "control_interface", "RINGMEND_CONTROL_INTERFACE",
             parse_text, any_text, "a network interface name");
}

// Shared memory inside a node.
void resolve_shared_memory(const Options& o, Settings& s) {
  const Source<std::size_t> sizes{o.read_environment};
  const Source<bool> flags{o.read_environment};
  flags.take(s.shm, o.shm, "shm", "RINGMEND_SHM", parse_bool, any_bool, "a boolean");
  sizes.take(s.shm_chunk_bytes, o.shm_chunk_bytes, "shm_chunk_bytes", "RINGMEND_SHM_CHUNK_BYTES", parse_size,
             size_between(4 * KiB, 64 * MiB), "a size between 4K and 64M");
  sizes.take(s.shm_depth, o.shm_depth, "shm_depth", "RINGMEND_SHM_DEPTH", parse_count, size_between(1, 64),
             "a number of chunk buffers between 1 and 64");
  sizes.take(s.shm_buffer_bytes, o.shm_buffer_bytes, "shm_buffer_bytes", "RINGMEND_SHM_BUFFER_BYTES",
             parse_size, size_between(4 * KiB, 1024 * MiB), "a size between 4K and 1G");
  // A chunk or depth asked for is a geometry pinned: no measuring, unless
  // tuning is asked for too.
  const bool pinned = o.shm_chunk_bytes || o.shm_depth ||
                      (o.read_environment && (env("RINGMEND_SHM_CHUNK_BYTES") || env("RINGMEND_SHM_DEPTH")));
  s.shm_tune = !pinned;
  flags.take(s.shm_tune, o.shm_tune, "shm_tune", "RINGMEND_SHM_TUNE", parse_bool, any_bool, "a boolean");
  // The fixed geometry always fits.
  s.shm_buffer_bytes = std::max(s.shm_buffer_bytes, s.shm_chunk_bytes * s.shm_depth);
  sizes.take(s.shm_p2p_slot_bytes, o.shm_p2p_slot_bytes, "shm_p2p_slot_bytes", "RINGMEND_SHM_P2P_SLOT_BYTES",
             parse_size, size_between(4 * KiB, 64 * MiB), "a size between 4K and 64M");
  sizes.take(s.shm_p2p_slots, o.shm_p2p_slots, "shm_p2p_slots", "RINGMEND_SHM_P2P_SLOTS", parse_count,
             size_between(2, 1024), "a number of slots between 2 and 1024");
}

// Transports, GPU, the test bed's nodes, logging and fault injection.
void resolve_rest(const Options& o, Settings& s) {
  const Source<std::size_t> sizes{o.read_environment};
  const Source<bool> flags{o.read_environment};
  const Source<std::string> texts{o.read_environment};
  flags.take(s.ucx_workers_ahead, o.ucx_workers_ahead, "ucx_workers_ahead", "RINGMEND_UCX_WORKERS_AHEAD",
             parse_bool, any_bool, "a boolean");
  const Source<std::vector<std::string>> lists{o.read_environment};
  lists.take(s.rail_devices, o.rail_devices, "rail_devices", "RINGMEND_RAIL_DEVICES", parse_device_list,
             valid_device_list, "1-16 network device names of at most 23 characters");
  flags.take(s.nccl, o.nccl, "nccl", "RINGMEND_NCCL", parse_bool, any_bool, "a boolean");
  flags.take(s.nccl_shrink, o.nccl_shrink, "nccl_shrink", "RINGMEND_NCCL_SHRINK", parse_bool, any_bool,
             "a boolean");
  sizes.take(s.test_ranks_per_node, o.test_ranks_per_node, "test_ranks_per_node",
             "RINGMEND_TEST_RANKS_PER_NODE", parse_count, size_between(0, 1 << 20),
             "a number of ranks per node, 0 for the real nodes");
  flags.take(s.verbose, o.verbose, "verbose", "RINGMEND_VERBOSE", parse_bool, any_bool, "a boolean");
  // RINGMEND_VERBOSE=1 is the older spelling of debug; a level given wins.
  if (s.verbose) s.log_level = LogLevel::Debug;
  const Source<LogLevel> levels{o.read_environment};
  levels.take(
      s.log_level, o.log_level, "log_level", "RINGMEND_LOG", parse_log_level,
      [](const LogLevel& l) { return l >= LogLevel::Error && l <= LogLevel::Debug; },
      "error, warn, info or debug");
  flags.take(s.debug_topo, o.debug_topo, "debug_topo", "RINGMEND_DEBUG", parse_debug_topo, any_bool,
             "a comma-separated list of: topo");
  texts.take(s.fault_spec, o.fault_spec, "fault_spec", "RINGMEND_FAULT", parse_text, any_text, "a rule list");
  texts.take(s.fault_record, o.fault_record, "fault_record", "RINGMEND_FAULT_RECORD", parse_text, any_text,
             "a file name");
}

}  // namespace

Settings Options::resolve() const {
  Settings s;
  resolve_collectives(*this, s);
  resolve_timeouts(*this, s);
  resolve_membership(*this, s);
  resolve_shared_memory(*this, s);
  resolve_rest(*this, s);
  return s;
}

}  // namespace ringmend
