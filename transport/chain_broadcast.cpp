#include "transport/chain_broadcast.hpp"

#include <algorithm>
#include <deque>

#include "transport/partition.hpp"
#include "transport/wire_header.hpp"

namespace ringmend::transport {
namespace {

void chain_broadcast_impl(Channel& ch, const std::vector<int>& ring, const BroadcastArgs& a, WaitContext& ctx,
                          std::size_t chunk_bytes) {
  const std::size_t n = ring.size();
  ctx.on_phase(Phase::Start, 0);
  if (n == 1) return;
  const std::size_t p =
      static_cast<std::size_t>(std::find(ring.begin(), ring.end(), ch.rank()) - ring.begin());
  const int right = ring[(p + 1) % n];
  const int left = ring[(p + n - 1) % n];
  const bool is_root = ch.rank() == a.root;
  const bool forwards = right != a.root;
  const std::size_t k = std::max<std::size_t>(1, (a.bytes + chunk_bytes - 1) / chunk_bytes);
  auto* buf = static_cast<std::byte*>(a.buffer);

  WireHeader mine{};
  mine.kind = CollectiveKind::Broadcast;
  mine.seq = a.seq;
  mine.count = a.bytes;
  mine.root = a.root;
  WireHeader theirs{};
  Piece hs{&mine, sizeof mine}, hr{&theirs, sizeof theirs};
  Channel::Op header_send = forwards ? ch.send(right, kTagHeader, {&hs, 1}) : nullptr;
  std::deque<Channel::Op> sends;
  auto send_chunk = [&](std::size_t c) {
    const Range r = split(a.bytes, k, c);
    Piece piece{buf + r.offset, r.count};
    sends.push_back(ch.send(right, kTagData, {&piece, 1}));
  };

  ctx.on_phase(Phase::Broadcast, 0);
  if (is_root) {
    for (std::size_t c = 0; c < k; ++c) send_chunk(c);
  } else {
    std::deque<Channel::Op> recvs;
    for (std::size_t c = 0; c < k; ++c) {
      const Range r = split(a.bytes, k, c);
      Piece piece{buf + r.offset, r.count};
      recvs.push_back(ch.recv(left, kTagData, {&piece, 1}));
    }
    if (wait_for(ch, ch.recv(left, kTagHeader, {&hr, 1}), ctx) != OpState::Done)
      throw Mismatch("rank " + std::to_string(left) + " sent a collective header of the wrong size");
    if (std::string why = describe_mismatch(mine, theirs, left); !why.empty()) throw Mismatch(why);
    for (std::size_t c = 0; c < k; ++c) {
      std::size_t got = 0;
      OpState st = wait_for(ch, recvs.front(), ctx, &got);
      recvs.pop_front();
      if (st != OpState::Done || got != split(a.bytes, k, c).count)
        throw Mismatch("rank " + std::to_string(left) + " sent a chunk of " + std::to_string(got) +
                       " bytes instead of " + std::to_string(split(a.bytes, k, c).count) + " (state " +
                       std::to_string(int(st)) + "): byte counts differ across ranks");
      if (forwards) send_chunk(c);
    }
  }
  ctx.on_phase(Phase::End, 0);
  for (Channel::Op op : sends)
    if (wait_for(ch, op, ctx) != OpState::Done) throw Interrupted("transport: send failed");
  if (header_send && wait_for(ch, header_send, ctx) != OpState::Done)
    throw Interrupted("transport: send failed");
}

}  // namespace

void chain_broadcast(Channel& ch, const std::vector<int>& ring, const BroadcastArgs& args, WaitContext& ctx,
                     std::size_t chunk_bytes) {
  try {
    chain_broadcast_impl(ch, ring, args, ctx, chunk_bytes);
  } catch (...) {
    ch.abandon();
    throw;
  }
}

}  // namespace ringmend::transport
