// What a collective call hands its algorithm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ringmend/core/types.hpp"

namespace ringmend::coll {

enum class CollectiveKind : std::uint8_t { Allreduce = 1, Broadcast = 2 };

struct AllreduceArgs {
  const void* input;  // this rank's contribution (never written)
  void* output;       // the reduction of all contributions
  std::size_t count;  // elements, > 0
  DataType type;
  ReduceOp op;
  std::uint64_t seq;  // collective number, checked against the peers'
  // When set, the result is also written here (the runtime's retained copy
  // for survivors that miss the end of a call). Algorithms copy each part
  // when it is final and still in cache, overlapped with the communication,
  // rather than the whole message once at the end.
  void* retain = nullptr;
  // Asked by the runtime where the algorithm can finish together
  // (Algorithm::finishes_together): no rank returns before every rank has
  // finished, so no survivor can need a result retained for a catch-up.
  bool finish_together = false;
  std::size_t bytes() const { return count * size_of(type); }
};

struct BroadcastArgs {
  void* buffer;       // root: the data; others: where it lands
  std::size_t bytes;  // > 0
  int root;           // channel rank of the root
  std::uint64_t seq;  // collective number, checked against the peers'
};

// One call, of either kind.
struct Call {
  CollectiveKind kind = CollectiveKind::Allreduce;
  AllreduceArgs allreduce{};  // kind == Allreduce
  BroadcastArgs broadcast{};  // kind == Broadcast
  std::size_t bytes() const {
    return kind == CollectiveKind::Allreduce ? allreduce.bytes() : broadcast.bytes;
  }
};

// Copies [offset, offset + bytes) of the result into args.retain, if set.
inline void retain_part(const AllreduceArgs& args, std::size_t offset, std::size_t bytes) {
  if (args.retain)
    std::memcpy(static_cast<std::byte*>(args.retain) + offset,
                static_cast<const std::byte*>(args.output) + offset, bytes);
}

}  // namespace ringmend::coll
