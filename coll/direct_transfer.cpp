#include "coll/direct_transfer.hpp"

#include <algorithm>
#include <deque>
#include <string>

#include "coll/attempt.hpp"
#include "coll/wire_header.hpp"
#include "ringmend/core/sizes.hpp"

namespace ringmend::coll {
namespace {

using namespace transport;

std::size_t chunks_of(std::size_t bytes, std::size_t chunk_bytes) {
  return std::max<std::size_t>(1, (bytes + chunk_bytes - 1) / std::max<std::size_t>(1, chunk_bytes));
}

}  // namespace

void send_direct(Channel& ch, const std::vector<int>& receivers, const void* data, std::size_t bytes,
                 WaitContext& ctx, std::size_t chunk_bytes) {
  abandon_on_failure(&ch, [&] {
    ctx.on_phase(Phase::Broadcast, 0);
    const std::size_t k = chunks_of(bytes, chunk_bytes);
    auto* buf = static_cast<std::byte*>(const_cast<void*>(data));
    std::deque<Channel::Op> sends;
    // Chunk by chunk across the receivers, so that each link has work as
    // soon as the first chunk is posted.
    for (std::size_t c = 0; c < k; ++c) {
      const Range r = split(bytes, k, c);
      Piece piece{buf + r.offset, r.count};
      for (int peer : receivers) sends.push_back(ch.send(peer, kTagDirect, {&piece, 1}));
    }
    for (Channel::Op op : sends)
      if (wait_for(ch, op, ctx) != OpState::Done) throw Interrupted("transport: send failed");
  });
}

void receive_direct(Channel& ch, int sender, void* data, std::size_t bytes, WaitContext& ctx,
                    std::size_t chunk_bytes) {
  abandon_on_failure(&ch, [&] {
    ctx.on_phase(Phase::Broadcast, 0);
    const std::size_t k = chunks_of(bytes, chunk_bytes);
    auto* buf = static_cast<std::byte*>(data);
    std::deque<Channel::Op> recvs;
    for (std::size_t c = 0; c < k; ++c) {
      const Range r = split(bytes, k, c);
      Piece piece{buf + r.offset, r.count};
      recvs.push_back(ch.recv(sender, kTagDirect, {&piece, 1}));
    }
    for (std::size_t c = 0; c < k; ++c) {
      std::size_t got = 0;
      const OpState st = wait_for(ch, recvs.front(), ctx, &got);
      recvs.pop_front();
      if (st != OpState::Done || got != split(bytes, k, c).count)
        throw Mismatch("rank " + std::to_string(sender) + " sent a chunk of " + std::to_string(got) +
                       " bytes instead of " + std::to_string(split(bytes, k, c).count) +
                       ": the sizes of a direct transfer differ");
    }
  });
}

}  // namespace ringmend::coll
