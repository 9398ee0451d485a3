#include "coll/ring_stream.hpp"

#include <algorithm>
#include <string>

#include "coll/reduce_kernels.hpp"
#include "ringmend/core/sizes.hpp"
#include "transport/backoff.hpp"

namespace ringmend::coll {

using namespace transport;

RingStream::RingStream(Channel& ch, const std::vector<int>& ring, const AllreduceArgs& call,
                       std::size_t max_in_flight, AlgorithmId as)
    : ch_(ch),
      pos_(RingPosition::of(ring, ch.rank())),
      type_(call.type),
      op_(call.op),
      max_in_flight_(std::max<std::size_t>(1, max_in_flight)),
      mine_(header_of(call, as)) {
  if (pos_.n < 2) {
    header_checked_ = true;  // nobody to agree with
    return;
  }
  Piece hs{&mine_, sizeof mine_}, hr{&theirs_, sizeof theirs_};
  header_send_ = ch_.send(pos_.right, kTagHeader, {&hs, 1});
  header_recv_ = ch_.recv(pos_.left, kTagHeader, {&hr, 1});
}

std::uint32_t RingStream::tag_of(const InFlight& piece) const {
  // Pieces in flight at once get distinct tags: a neighbour may interleave
  // their steps in any order. A tag is reused only by a later piece, whose
  // messages the neighbour sends after the earlier piece's.
  return kTagStream + static_cast<std::uint32_t>(piece.index % max_in_flight_);
}

void RingStream::post_recv(InFlight& piece) {
  const std::size_t esize = size_of(type_);
  const Range r = split(piece.count, pos_.n, pos_.recv_segment(piece.step));
  Piece buf{piece.output + r.offset * esize, r.count * esize};
  piece.recv = ch_.recv(pos_.left, tag_of(piece), {&buf, 1});
}

void RingStream::post_send(InFlight& piece, std::size_t segment, const std::byte* base) {
  const std::size_t esize = size_of(type_);
  const Range r = split(piece.count, pos_.n, segment);
  Piece buf{const_cast<std::byte*>(base + r.offset * esize), r.count * esize};
  piece.sends.push_back(ch_.send(pos_.right, tag_of(piece), {&buf, 1}));
}

void RingStream::start(const void* input, void* output, std::size_t count) {
  InFlight& piece = pieces_.emplace_back();
  piece.index = started_++;
  piece.input = static_cast<const std::byte*>(input);
  piece.output = static_cast<std::byte*>(output);
  piece.count = count;
  if (pos_.n < 2) {
    std::copy_n(piece.input, count * size_of(type_), piece.output);
    return;
  }
  // Step 0 sends this rank's own segment straight from the input.
  post_send(piece, pos_.p, piece.input);
  post_recv(piece);
}

bool RingStream::advance_piece(InFlight& piece) {
  const std::size_t esize = size_of(type_);
  const std::size_t steps = 2 * (pos_.n - 1);
  bool moved = false;
  while (piece.recv) {
    std::size_t got = 0;
    const OpState st = ch_.test(piece.recv, &got);
    if (st == OpState::Pending) break;
    piece.recv = nullptr;
    if (st == OpState::Failed) throw Interrupted("transport: " + ch_.failure_reason());
    const std::size_t segment = pos_.recv_segment(piece.step);
    const Range r = split(piece.count, pos_.n, segment);
    if (st != OpState::Done || got != r.count * esize)
      throw Mismatch("rank " + std::to_string(pos_.left) + " sent a piece of " + std::to_string(got) +
                     " bytes instead of " + std::to_string(r.count * esize) + ": counts differ across ranks");
    if (piece.step < pos_.n - 1)
      reduce(piece.output + r.offset * esize, piece.input + r.offset * esize, r.count, type_, op_);
    moved = true;
    if (++piece.step == steps) break;
    // Forward what was just received (reduced, during reduce-scatter).
    post_send(piece, segment, piece.output);
    post_recv(piece);
  }
  while (!piece.sends.empty()) {
    const OpState st = ch_.test(piece.sends.front());
    if (st == OpState::Pending) break;
    if (st != OpState::Done)
      throw Interrupted("transport: send to rank " + std::to_string(pos_.right) + " failed (" +
                        ch_.failure_reason() + ")");
    piece.sends.pop_front();
    moved = true;
  }
  return moved;
}

bool RingStream::advance() {
  if (ch_.peer_failed()) throw Interrupted("transport: " + ch_.failure_reason());
  bool moved = pos_.n > 1 && ch_.progress();
  if (!header_checked_) {
    // Pieces are looked at only once the neighbour's call is known to
    // match: a mismatch is then reported as such, not as odd sizes.
    std::size_t got = 0;
    const OpState st = ch_.test(header_recv_, &got);
    if (st == OpState::Pending) return moved;
    header_recv_ = nullptr;
    if (st == OpState::Failed) throw Interrupted("transport: " + ch_.failure_reason());
    check_header(mine_, theirs_, st == OpState::Done, got, pos_.left);
    header_checked_ = moved = true;
  }
  for (InFlight& piece : pieces_) moved |= advance_piece(piece);
  while (!pieces_.empty() && pieces_.front().done()) {
    pieces_.pop_front();
    ++finished_;
    moved = true;
  }
  return moved;
}

void RingStream::finish(WaitContext& ctx) {
  // Bounded like every wait: ctx.check() throws once the deadline passes
  // or a failure is known.
  Backoff backoff(ctx.oversubscribed());
  while (!pieces_.empty() || !header_checked_) {
    if (advance())
      backoff.reset();
    else if (backoff.idle())
      ctx.check();
  }
  if (header_send_) {
    Channel::Op op = header_send_;
    header_send_ = nullptr;
    if (wait_for(ch_, op, ctx) != OpState::Done)
      throw Interrupted("transport: header send to rank " + std::to_string(pos_.right) + " failed");
  }
}

}  // namespace ringmend::coll
