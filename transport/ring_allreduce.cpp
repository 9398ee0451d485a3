#include "transport/ring_allreduce.hpp"

#include <algorithm>
#include <cstring>
#include <deque>

#include "transport/partition.hpp"
#include "transport/reduce_kernels.hpp"
#include "transport/wire_header.hpp"

namespace ringmend::transport {
namespace {

std::size_t position_of(const std::vector<int>& ring, int rank) {
  return static_cast<std::size_t>(std::find(ring.begin(), ring.end(), rank) - ring.begin());
}

}  // namespace

namespace {

void ring_allreduce_impl(Channel& ch, const std::vector<int>& ring, const AllreduceArgs& a, WaitContext& ctx,
                         std::size_t chunk_bytes) {
  const std::size_t n = ring.size();
  const std::size_t esize = size_of(a.type);
  ctx.on_phase(Phase::Start, 0);
  if (n == 1) {
    std::memcpy(a.output, a.input, a.count * esize);
    retain_part(a, 0, a.count * esize);
    return;
  }
  const std::size_t p = position_of(ring, ch.rank());
  const int right = ring[(p + 1) % n];
  const int left = ring[(p + n - 1) % n];

  // Segment i of the buffer; each segment cut into k chunks.
  const std::size_t max_segment_bytes = split(a.count, n, 0).count * esize;
  const std::size_t k = std::max<std::size_t>(1, (max_segment_bytes + chunk_bytes - 1) / chunk_bytes);
  auto chunk = [&](std::size_t segment, std::size_t c) {
    const Range s = split(a.count, n, segment % n);
    const Range r = split(s.count, k, c);
    return Range{s.offset + r.offset, r.count};
  };
  auto* out = static_cast<std::byte*>(a.output);
  const auto* in = static_cast<const std::byte*>(a.input);

  // Step s < n-1 is reduce-scatter step s; step s >= n-1 is allgather step
  // s-(n-1). The segment received at each step (positions mod n):
  const std::size_t steps = 2 * (n - 1);
  auto recv_segment = [&](std::size_t s) {
    return s < n - 1 ? (p + 2 * n - s - 1) % n : (p + 2 * n - (s - (n - 1))) % n;
  };

  // Header first: it tells the receiver whether both sides agree on the call.
  WireHeader mine{};
  mine.kind = CollectiveKind::Allreduce;
  mine.type = a.type;
  mine.op = a.op;
  mine.seq = a.seq;
  mine.count = a.count;
  WireHeader theirs{};
  Piece hs{&mine, sizeof mine}, hr{&theirs, sizeof theirs};
  Channel::Op header_send = ch.send(right, kTagHeader, {&hs, 1});
  Channel::Op header_recv = ch.recv(left, kTagHeader, {&hr, 1});

  std::deque<Channel::Op> sends;
  auto post_send = [&](const std::byte* base, Range r) {
    Piece piece{const_cast<std::byte*>(base + r.offset * esize), r.count * esize};
    sends.push_back(ch.send(right, kTagData, {&piece, 1}));
  };
  auto reap_sends = [&] {
    while (!sends.empty()) {
      OpState st = ch.test(sends.front());
      if (st == OpState::Pending) break;
      if (st != OpState::Done)
        throw Interrupted("transport: send to rank " + std::to_string(right) + " failed");
      sends.pop_front();
    }
  };

  ctx.on_phase(Phase::ReduceScatter, 0);
  for (std::size_t c = 0; c < k; ++c) post_send(in, chunk(p, c));

  // Receives are posted a window ahead; each lands in its final place in
  // `out` (segments are disjoint, so no staging buffer is needed).
  const std::size_t blocks = steps * k;
  const std::size_t window = std::min(blocks, std::max<std::size_t>(2 * k, 8));
  std::deque<Channel::Op> recvs;
  std::size_t posted = 0;
  auto post_recv = [&] {
    const Range r = chunk(recv_segment(posted / k), posted % k);
    Piece piece{out + r.offset * esize, r.count * esize};
    recvs.push_back(ch.recv(left, kTagData, {&piece, 1}));
    ++posted;
  };
  while (posted < window) post_recv();

  if (wait_for(ch, header_recv, ctx) != OpState::Done)
    throw Mismatch("rank " + std::to_string(left) + " sent a collective header of the wrong size");
  if (std::string why = describe_mismatch(mine, theirs, left); !why.empty()) throw Mismatch(why);

  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t s = b / k, c = b % k;
    if (c == 0 && s > 0)
      ctx.on_phase(s < n - 1 ? Phase::ReduceScatter : Phase::Allgather,
                   static_cast<int>(s < n - 1 ? s : s - (n - 1)));
    const Range r = chunk(recv_segment(s), c);
    std::size_t got = 0;
    OpState st = wait_for(ch, recvs.front(), ctx, &got);
    recvs.pop_front();
    if (st != OpState::Done || got != r.count * esize)
      throw Mismatch("rank " + std::to_string(left) + " sent a chunk of " + std::to_string(got) +
                     " bytes instead of " + std::to_string(r.count * esize) + " (state " +
                     std::to_string(int(st)) + "): counts differ across ranks");
    if (posted < blocks) post_recv();
    if (s < n - 1) reduce(out + r.offset * esize, in + r.offset * esize, r.count, a.type, a.op);
    if (s + 1 < steps) post_send(out, r);
    // From the last reduce-scatter step on, what arrives is final.
    if (s >= n - 2) retain_part(a, r.offset * esize, r.count * esize);
    reap_sends();
  }
  ctx.on_phase(Phase::End, 0);
  while (!sends.empty()) {
    if (wait_for(ch, sends.front(), ctx) != OpState::Done)
      throw Interrupted("transport: send to rank " + std::to_string(right) + " failed");
    sends.pop_front();
  }
  if (wait_for(ch, header_send, ctx) != OpState::Done)
    throw Interrupted("transport: header send to rank " + std::to_string(right) + " failed");
}

}  // namespace

void ring_allreduce(Channel& ch, const std::vector<int>& ring, const AllreduceArgs& args, WaitContext& ctx,
                    std::size_t chunk_bytes) {
  try {
    ring_allreduce_impl(ch, ring, args, ctx, chunk_bytes);
  } catch (...) {
    ch.abandon();  // nothing may write into this frame's buffers any more
    throw;
  }
}

}  // namespace ringmend::transport
