// The step both block rings share (ring_allgather.hpp,
// ring_reduce_scatter.hpp): n-1 blocks passed to the right
// along the ring, each rank receiving from its left. Every receive is
// posted up front (messages between a pair arrive in the order they were
// sent, so each lands where it belongs as soon as it comes); the block a
// rank sends at a step is the one it received at the step before, once the
// algorithm has made it ready (its own block, or the reduction so far).
#pragma once

#include <cstddef>
#include <deque>
#include <string>

#include "coll/ring.hpp"
#include "coll/wire_header.hpp"
#include "transport/channel.hpp"
#include "transport/progress.hpp"

namespace ringmend::coll {

// `receive_into(step)`: where the block of `step` lands, `bytes_at(step)`
// its size (blocks of an uneven allgather differ; 0 allowed). `arrived(step,
// block)`: that block has come; returns the block to send at the next step
// (null after the last). `first`: the block sent at step 0, of `first_bytes`.
template <class ReceiveInto, class BytesAt, class Arrived>
void pass_sized_blocks(transport::Channel& ch, const RingPosition& pos, const WireHeader& mine,
                       transport::Phase phase, transport::WaitContext& ctx, const std::byte* first,
                       std::size_t first_bytes, ReceiveInto&& receive_into, BytesAt&& bytes_at,
                       Arrived&& arrived) {
  using namespace transport;
  const std::size_t steps = pos.n - 1;
  WireHeader theirs{};
  Piece hs{const_cast<WireHeader*>(&mine), sizeof mine}, hr{&theirs, sizeof theirs};
  const Channel::Op header_send = ch.send(pos.right, kTagHeader, {&hs, 1});
  std::deque<Channel::Op> recvs, sends;
  for (std::size_t s = 0; s < steps; ++s) {
    Piece piece{receive_into(s), bytes_at(s)};
    recvs.push_back(ch.recv(pos.left, kTagData, {&piece, 1}));
  }
  auto send = [&](const std::byte* block, std::size_t bytes) {
    Piece piece{const_cast<std::byte*>(block), bytes};
    sends.push_back(ch.send(pos.right, kTagData, {&piece, 1}));
  };
  send(first, first_bytes);
  std::size_t got = 0;
  const bool complete = wait_for(ch, ch.recv(pos.left, kTagHeader, {&hr, 1}), ctx, &got) == OpState::Done;
  check_header(mine, theirs, complete, got, pos.left);
  for (std::size_t s = 0; s < steps; ++s) {
    ctx.on_phase(phase, static_cast<int>(s));
    const OpState st = wait_for(ch, recvs.front(), ctx, &got);
    recvs.pop_front();
    if (st != OpState::Done || got != bytes_at(s))
      throw Mismatch("rank " + std::to_string(pos.left) + " sent a block of " + std::to_string(got) +
                     " bytes instead of " + std::to_string(bytes_at(s)) + " (state " +
                     std::to_string(int(st)) + "): block sizes differ across ranks");
    if (const std::byte* next = arrived(s, receive_into(s))) send(next, bytes_at(s));
  }
  ctx.on_phase(Phase::End, 0);
  for (Channel::Op op : sends)
    if (wait_for(ch, op, ctx) != OpState::Done) throw Interrupted("transport: send failed");
  if (wait_for(ch, header_send, ctx) != OpState::Done) throw Interrupted("transport: send failed");
}

// Every block of one size, `bytes`.
template <class ReceiveInto, class Arrived>
void pass_blocks(transport::Channel& ch, const RingPosition& pos, const WireHeader& mine, std::size_t bytes,
                 transport::Phase phase, transport::WaitContext& ctx, const std::byte* first,
                 ReceiveInto&& receive_into, Arrived&& arrived) {
  pass_sized_blocks(
      ch, pos, mine, phase, ctx, first, bytes, receive_into, [bytes](std::size_t) { return bytes; }, arrived);
}

}  // namespace ringmend::coll
