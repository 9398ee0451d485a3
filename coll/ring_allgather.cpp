#include "coll/ring_allgather.hpp"

#include <cstring>

#include "coll/attempt.hpp"
#include "coll/ring.hpp"
#include "coll/ring_pass.hpp"

namespace ringmend::coll {
namespace {

using namespace transport;

void ring_allgather_impl(Channel& ch, const std::vector<int>& ring, const AllgatherArgs& a,
                         WaitContext& ctx) {
  ctx.on_phase(Phase::Start, 0);
  auto* out = static_cast<std::byte*>(a.output);
  auto block = [&](int rank) { return out + a.offset_of_slot(a.slot_of(rank)); };
  auto bytes = [&](int rank) { return a.bytes_of_slot(a.slot_of(rank)); };
  if (block(ch.rank()) != a.input && bytes(ch.rank()) > 0)
    std::memcpy(block(ch.rank()), a.input, bytes(ch.rank()));
  if (ring.size() == 1) return;
  const RingPosition pos = RingPosition::of(ring, ch.rank());
  const std::size_t n = pos.n;
  // The block received at `step` (and passed on at step + 1) is that of the
  // rank step + 1 places to the left.
  auto owner_at = [&](std::size_t step) { return ring[(pos.p + n - step - 1) % n]; };
  const AlgorithmId id = AlgorithmId::RingAllgather;
  const WireHeader mine = a.counts ? header_of_uneven(a, id) : header_of(a, id);
  pass_sized_blocks(
      ch, pos, mine, Phase::Allgather, ctx, block(ch.rank()), bytes(ch.rank()),
      [&](std::size_t step) { return block(owner_at(step)); },
      [&](std::size_t step) { return bytes(owner_at(step)); },
      [&](std::size_t step, std::byte* received) { return step + 2 < n ? received : nullptr; });
}

}  // namespace

void ring_allgather(Channel& ch, const std::vector<int>& ring, const AllgatherArgs& args, WaitContext& ctx) {
  abandon_on_failure(&ch, [&] { ring_allgather_impl(ch, ring, args, ctx); });
}

std::vector<int> RingAllgather::peers(const Layout& layout, int rank) const {
  return ring_neighbours(layout.ring, rank);
}

void RingAllgather::run(const Call& call, const Channels& channels, const Layout& layout, const Tuning&,
                        WaitContext& ctx) const {
  ring_allgather(*channels.flat, layout.ring, call.allgather, ctx);
}

}  // namespace ringmend::coll
