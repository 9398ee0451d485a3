#include "transport/ring_stream.hpp"

#include <sched.h>

#include <algorithm>
#include <string>

#include "transport/partition.hpp"
#include "transport/reduce_kernels.hpp"

namespace ringmend::transport {

RingStream::RingStream(Channel& ch, const std::vector<int>& ring, const AllreduceArgs& call,
                       std::size_t max_in_flight)
    : ch_(ch),
      n_(ring.size()),
      position_(static_cast<std::size_t>(std::find(ring.begin(), ring.end(), ch.rank()) - ring.begin())),
      left_(ring[(position_ + n_ - 1) % n_]),
      right_(ring[(position_ + 1) % n_]),
      type_(call.type),
      op_(call.op),
      max_in_flight_(std::max<std::size_t>(1, max_in_flight)) {
  if (n_ < 2) {
    header_checked_ = true;  // nobody to agree with
    return;
  }
  mine_.kind = CollectiveKind::Allreduce;
  mine_.type = call.type;
  mine_.op = call.op;
  mine_.seq = call.seq;
  mine_.count = call.count;
  Piece hs{&mine_, sizeof mine_}, hr{&theirs_, sizeof theirs_};
  header_send_ = ch_.send(right_, kTagHeader, {&hs, 1});
  header_recv_ = ch_.recv(left_, kTagHeader, {&hr, 1});
}

std::uint32_t RingStream::tag_of(const InFlight& piece) const {
  // Pieces in flight at once get distinct tags: a neighbour may interleave
  // their steps in any order. A tag is reused only by a later piece, whose
  // messages the neighbour sends after the earlier piece's.
  return kTagStream + static_cast<std::uint32_t>(piece.index % max_in_flight_);
}

// Segment s of the piece received at its step `step` (as in ring_allreduce):
// reduce-scatter steps 0..n-2, then allgather steps.
namespace {
std::size_t recv_segment(std::size_t n, std::size_t p, std::size_t step) {
  return step < n - 1 ? (p + 2 * n - step - 1) % n : (p + 2 * n - (step - (n - 1))) % n;
}
}  // namespace

void RingStream::post_recv(InFlight& piece) {
  const std::size_t esize = size_of(type_);
  const Range r = split(piece.count, n_, recv_segment(n_, position_, piece.step));
  Piece buf{piece.output + r.offset * esize, r.count * esize};
  piece.recv = ch_.recv(left_, tag_of(piece), {&buf, 1});
}

void RingStream::post_send(InFlight& piece, std::size_t segment, const std::byte* base) {
  const std::size_t esize = size_of(type_);
  const Range r = split(piece.count, n_, segment);
  Piece buf{const_cast<std::byte*>(base + r.offset * esize), r.count * esize};
  piece.sends.push_back(ch_.send(right_, tag_of(piece), {&buf, 1}));
}

void RingStream::start(const void* input, void* output, std::size_t count) {
  InFlight& piece = pieces_.emplace_back();
  piece.index = started_++;
  piece.input = static_cast<const std::byte*>(input);
  piece.output = static_cast<std::byte*>(output);
  piece.count = count;
  if (n_ < 2) {
    std::copy_n(piece.input, count * size_of(type_), piece.output);
    return;
  }
  // Step 0 sends this rank's own segment straight from the input.
  post_send(piece, position_, piece.input);
  post_recv(piece);
}

bool RingStream::advance_piece(InFlight& piece) {
  const std::size_t esize = size_of(type_);
  const std::size_t steps = 2 * (n_ - 1);
  bool moved = false;
  while (piece.recv) {
    std::size_t got = 0;
    const OpState st = ch_.test(piece.recv, &got);
    if (st == OpState::Pending) break;
    piece.recv = nullptr;
    if (st == OpState::Failed) throw Interrupted("transport: " + ch_.failure_reason());
    const std::size_t segment = recv_segment(n_, position_, piece.step);
    const Range r = split(piece.count, n_, segment);
    if (st != OpState::Done || got != r.count * esize)
      throw Mismatch("rank " + std::to_string(left_) + " sent a piece of " + std::to_string(got) +
                     " bytes instead of " + std::to_string(r.count * esize) + ": counts differ across ranks");
    if (piece.step < n_ - 1)
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
      throw Interrupted("transport: send to rank " + std::to_string(right_) + " failed (" +
                        ch_.failure_reason() + ")");
    piece.sends.pop_front();
    moved = true;
  }
  return moved;
}

bool RingStream::advance() {
  if (ch_.peer_failed()) throw Interrupted("transport: " + ch_.failure_reason());
  bool moved = n_ > 1 && ch_.progress();
  if (!header_checked_) {
    // Pieces are looked at only once the neighbour's call is known to
    // match: a mismatch is then reported as such, not as odd sizes.
    std::size_t got = 0;
    const OpState st = ch_.test(header_recv_, &got);
    if (st == OpState::Pending) return moved;
    header_recv_ = nullptr;
    if (st == OpState::Failed) throw Interrupted("transport: " + ch_.failure_reason());
    if (st != OpState::Done || got != sizeof theirs_)
      throw Mismatch("rank " + std::to_string(left_) + " sent a collective header of the wrong size");
    if (std::string why = describe_mismatch(mine_, theirs_, left_); !why.empty()) throw Mismatch(why);
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
  constexpr unsigned kSpinsPerCheck = 64;
  for (unsigned idle = 0; !pieces_.empty() || !header_checked_;) {
    if (advance()) {
      idle = 0;
      continue;
    }
    if (++idle % kSpinsPerCheck == 0) {
      ctx.check();
      if (idle / kSpinsPerCheck > ctx.spin_rounds()) sched_yield();
    }
  }
  if (header_send_) {
    Channel::Op op = header_send_;
    header_send_ = nullptr;
    if (wait_for(ch_, op, ctx) != OpState::Done)
      throw Interrupted("transport: header send to rank " + std::to_string(right_) + " failed");
  }
}

}  // namespace ringmend::transport
