// Pipelined chain broadcast along the ring: the root sends chunks to its
// right neighbour, every other rank forwards each chunk as soon as it has
// arrived. Time ~ bytes/bandwidth + (n-1) * chunk latency.
#pragma once

#include <cstdint>
#include <vector>

#include "transport/channel.hpp"
#include "transport/progress.hpp"

namespace ringmend::transport {

struct BroadcastArgs {
  void* buffer;       // root: the data; others: where it lands
  std::size_t bytes;  // > 0
  int root;           // channel rank of the root
  std::uint64_t seq;  // collective number, checked against the neighbours'
};

void chain_broadcast(Channel& ch, const std::vector<int>& ring, const BroadcastArgs& args, WaitContext& ctx,
                     std::size_t chunk_bytes);

}  // namespace ringmend::transport
