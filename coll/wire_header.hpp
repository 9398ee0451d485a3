// The header that opens every collective between peers (over a channel, or
// as a rank's descriptor in shared memory). The receiver compares it with
// its own call, which is how ringmend notices that ranks called a collective
// with different arguments, or chose different algorithms for it (their
// settings differ).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "coll/args.hpp"
#include "ringmend/core/types.hpp"

namespace ringmend::coll {

// Every algorithm, by the id its wire header carries.
enum class AlgorithmId : std::uint8_t {
  None = 0,
  RingAllreduce = 1,
  RecursiveDoubling = 2,
  ShmOneShot = 3,
  ShmPipelined = 4,
  ChainBroadcast = 5,
  RingAllgather = 6,
  RingReduceScatter = 7,
  PairwiseAlltoall = 8,
};
const char* name_of(AlgorithmId id);

struct WireHeader {
  std::uint32_t magic = kMagic;
  CollectiveKind kind{};
  DataType type{};
  ReduceOp op{};
  AlgorithmId algorithm = AlgorithmId::None;
  std::uint64_t seq = 0;    // collective number on this communicator
  std::uint64_t count =
      0;  // elements (allreduce; allgather, reduce_scatter: per block; see header_of) or bytes (broadcast)
  std::int64_t root = -1;   // broadcast root (communicator rank), -1 otherwise

  static constexpr std::uint32_t kMagic = 0x52474d44;  // "RGMD"
};
static_assert(sizeof(WireHeader) == 32);

// The header of this rank's call, as `algorithm` runs it: the one place
// where headers are filled in.
WireHeader header_of(const AllreduceArgs& args, AlgorithmId algorithm);
WireHeader header_of(const BroadcastArgs& args, AlgorithmId algorithm);
WireHeader header_of(const AllgatherArgs& args, AlgorithmId algorithm);
WireHeader header_of(const ReduceScatterArgs& args, AlgorithmId algorithm);
// An uneven allgather's: count is the elements of all blocks together (each
// block's own size is checked as it arrives).
WireHeader header_of_uneven(const AllgatherArgs& args, AlgorithmId algorithm);
// An alltoall's, between this rank and one peer: count is what the sender
// sends to that peer, in elements (the receiver's copy: what it expects).
WireHeader header_of(const AlltoallArgs& args, AlgorithmId algorithm, std::size_t count);

// Algorithm tags (the channel adds epoch and source). The latency paths send
// header and data as one message under kTagHeader, so that a rank taking
// another path for the same call (counts differ) receives a message of the
// wrong size and reports the mismatch instead of waiting.
inline constexpr std::uint32_t kTagHeader = 1;
inline constexpr std::uint32_t kTagData = 2;
// Direct transfers (direct_transfer.hpp), apart from every collective's.
inline constexpr std::uint32_t kTagDirect = 3;
// RingStream: one tag per piece in flight, from here up.
inline constexpr std::uint32_t kTagStream = 0x100;

// Empty when `theirs` matches `mine`; otherwise what differs, for the error.
std::string describe_mismatch(const WireHeader& mine, const WireHeader& theirs, int peer);

// Throws transport::Mismatch unless a header of `got` bytes, `theirs`,
// arrived complete (`complete`) from `peer` and matches `mine`.
void check_header(const WireHeader& mine, const WireHeader& theirs, bool complete, std::size_t got, int peer);

}  // namespace ringmend::coll
