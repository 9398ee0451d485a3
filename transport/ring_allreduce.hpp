// Ring allreduce: reduce-scatter then allgather around a ring, each step cut
// into chunks that are pipelined (a chunk is forwarded as soon as it is
// reduced, while the next chunks are still arriving).
//
// With n ranks every rank sends and receives 2(n-1)/n of the buffer: the
// bandwidth-optimal schedule, and the one the busbw figures are defined by.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ringmend/types.hpp"
#include "transport/channel.hpp"
#include "transport/progress.hpp"

namespace ringmend::transport {

struct AllreduceArgs {
  const void* input;  // this rank's contribution (never written)
  void* output;       // the reduction of all contributions (distinct from input)
  std::size_t count;  // elements, > 0
  DataType type;
  ReduceOp op;
  std::uint64_t seq;  // collective number, checked against the neighbours'
  // When set, the result is also written here (the runtime's retained copy
  // for survivors that miss the end of a call). Algorithms copy each part
  // when it is final and still in cache, overlapped with the communication,
  // rather than the whole message once at the end.
  void* retain = nullptr;
};

// Copies [offset, offset + bytes) of the result into args.retain, if set.
inline void retain_part(const AllreduceArgs& args, std::size_t offset, std::size_t bytes) {
  if (args.retain)
    std::memcpy(static_cast<std::byte*>(args.retain) + offset,
                static_cast<const std::byte*>(args.output) + offset, bytes);
}

// `ring` lists channel ranks in ring order (topo decides it).
void ring_allreduce(Channel& ch, const std::vector<int>& ring, const AllreduceArgs& args, WaitContext& ctx,
                    std::size_t chunk_bytes);

}  // namespace ringmend::transport
