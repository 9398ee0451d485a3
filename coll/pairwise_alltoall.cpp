#include "coll/pairwise_alltoall.hpp"

#include <cstring>
#include <string>

#include "coll/attempt.hpp"
#include "coll/wire_header.hpp"

namespace ringmend::coll {
namespace {

using namespace transport;

void pairwise_alltoall_impl(Channel& ch, const AlltoallArgs& a, WaitContext& ctx) {
  ctx.on_phase(Phase::Start, 0);
  const int n = ch.size(), me = ch.rank();
  const std::size_t unit = size_of(a.type);
  const auto* in = static_cast<const std::byte*>(a.input);
  auto* out = static_cast<std::byte*>(a.output);
  auto send_block = [&](int peer) { return in + a.send_offsets[a.slot_of(peer)] * unit; };
  auto recv_block = [&](int peer) { return out + a.recv_offsets[a.slot_of(peer)] * unit; };
  auto send_count = [&](int peer) { return a.send_counts[a.slot_of(peer)]; };
  auto recv_count = [&](int peer) { return a.recv_counts[a.slot_of(peer)]; };
  // This rank's own block (the runtime checked that both counts agree).
  if (const std::size_t own = send_count(me) * unit; own > 0)
    std::memcpy(recv_block(me), send_block(me), own);
  if (n == 1) return;

  const auto steps = static_cast<std::size_t>(n - 1);
  auto to_of = [&](std::size_t s) { return (me + static_cast<int>(s) + 1) % n; };
  auto from_of = [&](std::size_t s) { return (me + n - static_cast<int>(s) - 1) % n; };
  std::vector<WireHeader> sent(steps), expected(steps), got(steps);
  std::vector<Piece> header_out(steps), header_in(steps);
  std::vector<Channel::Op> header_sends(steps), header_recvs(steps);
  for (std::size_t s = 0; s < steps; ++s) {
    sent[s] = header_of(a, AlgorithmId::PairwiseAlltoall, send_count(to_of(s)));
    expected[s] = header_of(a, AlgorithmId::PairwiseAlltoall, recv_count(from_of(s)));
    header_in[s] = {&got[s], sizeof(WireHeader)};
    header_recvs[s] = ch.recv(from_of(s), kTagHeader, {&header_in[s], 1});
  }
  for (std::size_t s = 0; s < steps; ++s) {
    header_out[s] = {&sent[s], sizeof(WireHeader)};
    header_sends[s] = ch.send(to_of(s), kTagHeader, {&header_out[s], 1});
  }
  // Data moves only once both ends of the pair agree on its size, and only
  // where there is some (a zero count sends nothing).
  std::vector<Channel::Op> data_recvs(steps), data_sends;
  std::vector<Piece> data_in(steps), data_out(steps);
  for (std::size_t s = 0; s < steps; ++s) {
    const int from = from_of(s);
    std::size_t bytes = 0;
    const bool complete = wait_for(ch, header_recvs[s], ctx, &bytes) == OpState::Done;
    if (complete && bytes == sizeof(WireHeader) && got[s].magic == WireHeader::kMagic &&
        got[s].seq == expected[s].seq && got[s].kind == expected[s].kind && got[s].count != expected[s].count)
      throw Mismatch("rank " + std::to_string(from) + " sends " + std::to_string(got[s].count) +
                     " elements to this rank, which expects " + std::to_string(expected[s].count) +
                     " from it: what a rank sends to a peer must be what that peer receives from it");
    check_header(expected[s], got[s], complete, bytes, from);
    if (expected[s].count > 0) {
      data_in[s] = {recv_block(from), expected[s].count * unit};
      data_recvs[s] = ch.recv(from, kTagData, {&data_in[s], 1});
    }
  }
  for (std::size_t s = 0; s < steps; ++s) {
    const int to = to_of(s);
    if (send_count(to) == 0) continue;
    data_out[s] = {const_cast<std::byte*>(send_block(to)), send_count(to) * unit};
    data_sends.push_back(ch.send(to, kTagData, {&data_out[s], 1}));
  }
  for (std::size_t s = 0; s < steps; ++s) {
    ctx.on_phase(Phase::Alltoall, static_cast<int>(s));
    if (expected[s].count == 0) continue;
    std::size_t bytes = 0;
    const OpState st = wait_for(ch, data_recvs[s], ctx, &bytes);
    if (st != OpState::Done || bytes != data_in[s].bytes)
      throw Mismatch("rank " + std::to_string(from_of(s)) + " sent a block of " + std::to_string(bytes) +
                     " bytes instead of " + std::to_string(data_in[s].bytes));
  }
  ctx.on_phase(Phase::End, 0);
  for (Channel::Op op : data_sends)
    if (wait_for(ch, op, ctx) != OpState::Done) throw Interrupted("transport: send failed");
  for (Channel::Op op : header_sends)
    if (wait_for(ch, op, ctx) != OpState::Done) throw Interrupted("transport: send failed");
}

}  // namespace

void pairwise_alltoall(Channel& ch, const AlltoallArgs& args, WaitContext& ctx) {
  abandon_on_failure(&ch, [&] { pairwise_alltoall_impl(ch, args, ctx); });
}

std::vector<int> PairwiseAlltoall::peers(const Layout& layout, int rank) const {
  std::vector<int> all;
  for (int r : layout.ring)
    if (r != rank) all.push_back(r);
  return all;
}

void PairwiseAlltoall::run(const Call& call, const Channels& channels, const Layout&, const Tuning&,
                           WaitContext& ctx) const {
  pairwise_alltoall(*channels.flat, call.alltoall, ctx);
}

}  // namespace ringmend::coll
