#include "coll/ring_reduce_scatter.hpp"

#include <cstring>

#include "coll/attempt.hpp"
#include "coll/reduce_kernels.hpp"
#include "coll/ring.hpp"
#include "coll/ring_pass.hpp"

namespace ringmend::coll {
namespace {

using namespace transport;

void ring_reduce_scatter_impl(Channel& ch, const std::vector<int>& ring, const ReduceScatterArgs& a,
                              WaitContext& ctx) {
  ctx.on_phase(Phase::Start, 0);
  const std::size_t b = a.block_bytes();
  const auto* in = static_cast<const std::byte*>(a.input);
  auto input_block = [&](int rank) { return in + static_cast<std::size_t>(a.slot_of(rank)) * b; };
  if (ring.size() == 1) {
    std::memcpy(a.output, input_block(ch.rank()), b);
    return;
  }
  const RingPosition pos = RingPosition::of(ring, ch.rank());
  const std::size_t n = pos.n;
  // At `step` this rank sends the partial reduction of the block of the
  // rank step + 1 places to its left, and receives that of the rank
  // step + 2 places to its left (its own, at the last step).
  auto sent_at = [&](std::size_t step) { return ring[(pos.p + 2 * n - step - 1) % n]; };
  auto* work = static_cast<std::byte*>(a.work);

  pass_blocks(
      ch, pos, header_of(a, AlgorithmId::RingReduceScatter), b, Phase::ReduceScatter, ctx,
      input_block(sent_at(0)), [&](std::size_t step) { return work + step * b; },
      [&](std::size_t step, std::byte* partial) -> const std::byte* {
        // The block received now is the one this rank sends at the next step.
        const bool last = step + 2 == n;
        reduce(partial, input_block(last ? ch.rank() : sent_at(step + 1)), a.count, a.type, a.op);
        if (!last) return partial;
        std::memcpy(a.output, partial, b);
        return nullptr;
      });
}

}  // namespace

void ring_reduce_scatter(Channel& ch, const std::vector<int>& ring, const ReduceScatterArgs& args,
                         WaitContext& ctx) {
  abandon_on_failure(&ch, [&] { ring_reduce_scatter_impl(ch, ring, args, ctx); });
}

std::vector<int> RingReduceScatter::peers(const Layout& layout, int rank) const {
  return ring_neighbours(layout.ring, rank);
}

void RingReduceScatter::run(const Call& call, const Channels& channels, const Layout& layout, const Tuning&,
                            WaitContext& ctx) const {
  ring_reduce_scatter(*channels.flat, layout.ring, call.reduce_scatter, ctx);
}

}  // namespace ringmend::coll
