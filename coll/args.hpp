// What a collective call hands its algorithm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ringmend/core/types.hpp"

namespace ringmend::coll {

enum class CollectiveKind : std::uint8_t { Allreduce = 1, Broadcast = 2 };

// A call whose buffers are copies of GPU memory in host memory
// (gpu/host_staging.hpp): the input arrives in pieces, the result leaves in
// parts. An algorithm that reads its input in parts (Algorithm::
// reads_staged_input) names them in the order it will read them (prefetch)
// and waits for each before reading it; every algorithm hands each part of
// the result over once it is final (retain_part). For the others the runtime
// waits for the whole input before the algorithm starts.
class Staging {
 public:
  virtual ~Staging() = default;
  // Starts copying [offset, offset + bytes) of the input in, after the parts named before.
  virtual void prefetch(std::size_t offset, std::size_t bytes) = 0;
  // Returns once that part of the input is in host memory (prefetching it if needed).
  virtual void wait_input(std::size_t offset, std::size_t bytes) = 0;
  // That part of the result is final in host memory: it may be copied out.
  virtual void output_final(std::size_t offset, std::size_t bytes) = 0;
};

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
  // Set when input and output are copies of GPU buffers (see Staging).
  Staging* staging = nullptr;
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

// [offset, offset + bytes) of the result is final: copied into args.retain,
// if set, and handed to the staging, if any.
inline void retain_part(const AllreduceArgs& args, std::size_t offset, std::size_t bytes) {
  if (args.retain)
    std::memcpy(static_cast<std::byte*>(args.retain) + offset,
                static_cast<const std::byte*>(args.output) + offset, bytes);
  if (args.staging) args.staging->output_final(offset, bytes);
}

// Waits until [offset, offset + bytes) of a staged input is in host memory.
inline void wait_input(const AllreduceArgs& args, std::size_t offset, std::size_t bytes) {
  if (args.staging) args.staging->wait_input(offset, bytes);
}

}  // namespace ringmend::coll
