// The header that opens every collective between ring neighbours. The
// receiver compares it with its own call, which is how ringmend notices
// that ranks called a collective with different arguments.
#pragma once

#include <cstdint>
#include <string>

#include "ringmend/types.hpp"

namespace ringmend::transport {

enum class CollectiveKind : std::uint8_t { Allreduce = 1, Broadcast = 2 };

struct WireHeader {
  std::uint32_t magic = kMagic;
  CollectiveKind kind{};
  DataType type{};
  ReduceOp op{};
  std::uint8_t reserved = 0;
  std::uint64_t seq = 0;    // collective number on this communicator
  std::uint64_t count = 0;  // elements (allreduce) or bytes (broadcast)
  std::int64_t root = -1;   // broadcast root (communicator rank), -1 otherwise

  static constexpr std::uint32_t kMagic = 0x52474d44;  // "RGMD"
};
static_assert(sizeof(WireHeader) == 32);

// Algorithm tags (the channel adds epoch and source). The latency paths send
// header and data as one message under kTagHeader, so that a rank taking
// another path for the same call (counts differ) receives a message of the
// wrong size and reports the mismatch instead of waiting.
inline constexpr std::uint32_t kTagHeader = 1;
inline constexpr std::uint32_t kTagData = 2;
// RingStream: one tag per piece in flight, from here up.
inline constexpr std::uint32_t kTagStream = 0x100;

// Empty when `theirs` matches `mine`; otherwise what differs, for the error.
std::string describe_mismatch(const WireHeader& mine, const WireHeader& theirs, int peer);

}  // namespace ringmend::transport
