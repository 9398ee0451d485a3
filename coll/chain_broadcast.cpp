#include "coll/chain_broadcast.hpp"

#include <algorithm>
#include <deque>

#include "coll/attempt.hpp"
#include "coll/ring.hpp"
#include "ringmend/core/sizes.hpp"

namespace ringmend::coll {
namespace {

using namespace transport;

void chain_broadcast_impl(Channel& ch, const std::vector<int>& ring, const BroadcastArgs& a, WaitContext& ctx,
                          std::size_t chunk_bytes) {
  ctx.on_phase(Phase::Start, 0);
  if (ring.size() == 1) return;
  const RingPosition pos = RingPosition::of(ring, ch.rank());
  const bool is_root = ch.rank() == a.root;
  const bool forwards = pos.right != a.root;
  const std::size_t k = std::max<std::size_t>(1, (a.bytes + chunk_bytes - 1) / chunk_bytes);
  auto* buf = static_cast<std::byte*>(a.buffer);

  // Every rank, the root too, sends its call's header right and checks the
  // one from its left: along the whole ring, so that two ranks that both
  // take themselves for the root (a root mismatch) meet a differing header
  // somewhere. Without the root's check, in the ring 0 -> 2 -> 1 -> 0 with
  // rank 1 wrongly the root, no header from rank 1 was ever compared and
  // every rank returned, rank 1 with its own data.
  const WireHeader mine = header_of(a, AlgorithmId::ChainBroadcast);
  WireHeader theirs{};
  Piece hs{const_cast<WireHeader*>(&mine), sizeof mine}, hr{&theirs, sizeof theirs};
  Channel::Op header_send = ch.send(pos.right, kTagHeader, {&hs, 1});
  auto check_left_header = [&] {
    std::size_t got = 0;
    const bool complete = wait_for(ch, ch.recv(pos.left, kTagHeader, {&hr, 1}), ctx, &got) == OpState::Done;
    check_header(mine, theirs, complete, got, pos.left);
  };
  std::deque<Channel::Op> sends;
  auto send_chunk = [&](std::size_t c) {
    const Range r = split(a.bytes, k, c);
    Piece piece{buf + r.offset, r.count};
    sends.push_back(ch.send(pos.right, kTagData, {&piece, 1}));
  };

  ctx.on_phase(Phase::Broadcast, 0);
  if (is_root) {
    for (std::size_t c = 0; c < k; ++c) send_chunk(c);
    check_left_header();
  } else {
    std::deque<Channel::Op> recvs;
    for (std::size_t c = 0; c < k; ++c) {
      const Range r = split(a.bytes, k, c);
      Piece piece{buf + r.offset, r.count};
      recvs.push_back(ch.recv(pos.left, kTagData, {&piece, 1}));
    }
    check_left_header();
    std::size_t got = 0;
    for (std::size_t c = 0; c < k; ++c) {
      OpState st = wait_for(ch, recvs.front(), ctx, &got);
      recvs.pop_front();
      if (st != OpState::Done || got != split(a.bytes, k, c).count)
        throw Mismatch("rank " + std::to_string(pos.left) + " sent a chunk of " + std::to_string(got) +
                       " bytes instead of " + std::to_string(split(a.bytes, k, c).count) + " (state " +
                       std::to_string(int(st)) + "): byte counts differ across ranks");
      if (forwards) send_chunk(c);
    }
  }
  ctx.on_phase(Phase::End, 0);
  for (Channel::Op op : sends)
    if (wait_for(ch, op, ctx) != OpState::Done) throw Interrupted("transport: send failed");
  if (wait_for(ch, header_send, ctx) != OpState::Done) throw Interrupted("transport: send failed");
}

}  // namespace

void chain_broadcast(Channel& ch, const std::vector<int>& ring, const BroadcastArgs& args, WaitContext& ctx,
                     std::size_t chunk_bytes) {
  abandon_on_failure(&ch, [&] { chain_broadcast_impl(ch, ring, args, ctx, chunk_bytes); });
}

std::vector<int> ChainBroadcast::peers(const Layout& layout, int rank) const {
  return ring_neighbours(layout.ring, rank);
}

void ChainBroadcast::run(const Call& call, const Channels& channels, const Layout& layout,
                         const Tuning& tuning, WaitContext& ctx) const {
  chain_broadcast(*channels.flat, layout.ring, call.broadcast, ctx, tuning.chunk_bytes);
}

}  // namespace ringmend::coll
