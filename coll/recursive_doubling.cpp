#include "coll/recursive_doubling.hpp"

#include <algorithm>
#include <cstring>

#include "coll/attempt.hpp"
#include "coll/reduce_kernels.hpp"
#include "coll/ring.hpp"

namespace ringmend::coll {
namespace {

using namespace transport;

class Exchange {
 public:
  Exchange(Channel& ch, const AllreduceArgs& a, WaitContext& ctx, AlgorithmId as)
      : ch_(ch), a_(a), ctx_(ctx), mine_(header_of(a, as)) {}

  void send(int peer, const void* data) {
    Piece p[2] = {{&mine_, sizeof mine_}, {const_cast<void*>(data), bytes()}};
    Channel::Op op = ch_.send(peer, kTagHeader, p);
    if (wait_for(ch_, op, ctx_) != OpState::Done)
      throw Interrupted("transport: send to rank " + std::to_string(peer) + " failed");
  }

  // Receives `peer`'s buffer into `into`, checking its header.
  void recv(int peer, void* into) {
    WireHeader theirs{};
    Piece p[2] = {{&theirs, sizeof theirs}, {into, bytes()}};
    std::size_t got = 0;
    Channel::Op op = ch_.recv(peer, kTagHeader, p);
    OpState st = wait_for(ch_, op, ctx_, &got);
    if (std::string why = describe_mismatch(mine_, theirs, peer); !why.empty()) throw Mismatch(why);
    if (st != OpState::Done || got != sizeof theirs + bytes())
      throw Mismatch("rank " + std::to_string(peer) + " sent " + std::to_string(got) +
                     " bytes: counts differ across ranks");
  }

  // Sends to and receives from `peer` at once (both post before waiting, so
  // neither side's send waits for the other's receive).
  void swap(int peer, const void* data, void* into) {
    WireHeader theirs{};
    Piece s[2] = {{&mine_, sizeof mine_}, {const_cast<void*>(data), bytes()}};
    Piece r[2] = {{&theirs, sizeof theirs}, {into, bytes()}};
    Channel::Op send_op = ch_.send(peer, kTagHeader, s);
    Channel::Op recv_op = ch_.recv(peer, kTagHeader, r);
    std::size_t got = 0;
    OpState st = wait_for(ch_, recv_op, ctx_, &got);
    if (std::string why = describe_mismatch(mine_, theirs, peer); !why.empty()) throw Mismatch(why);
    if (st != OpState::Done || got != sizeof theirs + bytes())
      throw Mismatch("rank " + std::to_string(peer) + " sent " + std::to_string(got) +
                     " bytes: counts differ across ranks");
    if (wait_for(ch_, send_op, ctx_) != OpState::Done)
      throw Interrupted("transport: send to rank " + std::to_string(peer) + " failed");
  }

  std::size_t bytes() const { return a_.count * size_of(a_.type); }

 private:
  Channel& ch_;
  const AllreduceArgs& a_;
  WaitContext& ctx_;
  WireHeader mine_;
};

// The schedule: a non-power-of-two group folds its first 2*extra ranks in
// pairs, then the pow2 remaining "virtual" ranks exchange across each bit.
struct Schedule {
  std::size_t n, me, pow2, extra;
  explicit Schedule(std::size_t size, std::size_t index) : n(size), me(index), pow2(1) {
    while (pow2 * 2 <= n) pow2 *= 2;
    extra = n - pow2;
  }
  bool folded_away() const { return me < 2 * extra && me % 2 == 0; }  // hands its data to me+1
  bool folds_in() const { return me < 2 * extra && me % 2 == 1; }     // takes me-1's data
  std::size_t virt() const { return me < 2 * extra ? me / 2 : me - extra; }
  std::size_t real(std::size_t v) const { return v < extra ? 2 * v + 1 : v + extra; }
};

void run(Channel& ch, const std::vector<int>& group, const AllreduceArgs& a, WaitContext& ctx,
         AlgorithmId as) {
  const std::size_t n = group.size();
  const std::size_t bytes = a.count * size_of(a.type);
  auto* out = static_cast<std::byte*>(a.output);
  if (out != a.input) std::memcpy(out, a.input, bytes);
  if (n == 1) {
    retain_part(a, 0, bytes);
    return;
  }
  // Fault points as the other allreduces have them (runtime/fault_injection
  // .hpp): start, each exchange a step of the reduction, end.
  ctx.on_phase(Phase::Start, 0);
  const std::size_t me = position_in(group, ch.rank());
  const Schedule sched(n, me);
  Exchange x(ch, a, ctx, as);
  std::vector<std::byte> theirs(bytes);

  // out = lower (op) higher, whichever of the two this rank holds.
  auto combine = [&](bool mine_is_lower) {
    if (mine_is_lower) {
      reduce(out, theirs.data(), a.count, a.type, a.op);
    } else {
      reduce(theirs.data(), out, a.count, a.type, a.op);
      std::memcpy(out, theirs.data(), bytes);
    }
  };

  // Fold: among the first 2*extra ranks, even ones hand their data to the
  // next odd one and wait for the result.
  if (sched.folded_away()) {
    x.send(group[me + 1], out);
    x.recv(group[me + 1], out);
    retain_part(a, 0, bytes);
    return;
  }
  if (sched.folds_in()) {
    x.recv(group[me - 1], theirs.data());
    combine(false);
  }
  const std::size_t virt = sched.virt();
  int step = 0;
  for (std::size_t mask = 1; mask < sched.pow2; mask <<= 1) {
    ctx.on_phase(Phase::ReduceScatter, step++);
    const std::size_t partner = virt ^ mask;
    x.swap(group[sched.real(partner)], out, theirs.data());
    combine(virt < partner);
  }
  ctx.on_phase(Phase::End, 0);
  if (sched.folds_in()) x.send(group[me - 1], out);
  retain_part(a, 0, bytes);
}

}  // namespace

std::vector<int> recursive_doubling_peers(const std::vector<int>& group, int me) {
  const auto it = std::find(group.begin(), group.end(), me);
  if (it == group.end() || group.size() < 2) return {};
  const Schedule sched(group.size(), static_cast<std::size_t>(it - group.begin()));
  if (sched.folded_away()) return {group[sched.me + 1]};
  std::vector<int> peers;
  if (sched.folds_in()) peers.push_back(group[sched.me - 1]);
  for (std::size_t mask = 1; mask < sched.pow2; mask <<= 1)
    peers.push_back(group[sched.real(sched.virt() ^ mask)]);
  return peers;
}

void recursive_doubling_allreduce(Channel& ch, const std::vector<int>& group, const AllreduceArgs& args,
                                  WaitContext& ctx, AlgorithmId as) {
  abandon_on_failure(&ch, [&] { run(ch, group, args, ctx, as); });
}

void RecursiveDoublingAllreduce::run(const Call& call, const Channels& channels, const Layout& layout,
                                     const Tuning&, WaitContext& ctx) const {
  recursive_doubling_allreduce(*channels.inter, layout.ring, call.allreduce, ctx);
}

}  // namespace ringmend::coll
