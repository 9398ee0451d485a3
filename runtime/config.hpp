// Runtime settings read from RINGMEND_* environment variables, validated:
// a bad value is an Error(Errc::BadEnvironment) naming the variable.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace ringmend {

struct Config {
  std::size_t chunk_bytes = 256 * 1024;      // RINGMEND_CHUNK_BYTES: pipeline chunk
  double timeout_seconds = 300;              // RINGMEND_TIMEOUT: one collective, 0 = none
  double finalize_timeout_seconds = 10;      // RINGMEND_FINALIZE_TIMEOUT
  double recovery_timeout_seconds = 120;     // RINGMEND_RECOVERY_TIMEOUT
  bool verbose = false;                      // RINGMEND_VERBOSE=1: log recovery steps
  std::string fault_spec;                    // RINGMEND_FAULT (see fault_injection.hpp)
  std::string fault_record;                  // RINGMEND_FAULT_RECORD: file for kill times
  bool shm = true;                           // RINGMEND_SHM=0: UCX even inside a node
  std::size_t shm_chunk_bytes = 256 * 1024;  // RINGMEND_SHM_CHUNK_BYTES: shared-memory pipeline chunk
  std::size_t small_bytes = 16 * 1024;       // RINGMEND_SMALL_BYTES: one-shot (latency) path up to this size
  bool debug_topo = false;                   // RINGMEND_DEBUG=topo: print the plan of every epoch

  static Config from_environment();
};

// Parsers, exposed for the unit tests. Throw Error(BadEnvironment).
std::size_t parse_size(const std::string& name, const std::string& value);  // 64K, 1M, 1048576
double parse_seconds(const std::string& name, const std::string& value);
bool parse_bool(const std::string& name, const std::string& value);

}  // namespace ringmend
