#include "transport/recursive_doubling.hpp"

#include <algorithm>
#include <cstring>

#include "transport/reduce_kernels.hpp"
#include "transport/wire_header.hpp"

namespace ringmend::transport {
namespace {

class Exchange {
 public:
  Exchange(Channel& ch, const AllreduceArgs& a, WaitContext& ctx) : ch_(ch), a_(a), ctx_(ctx) {
    mine_.kind = CollectiveKind::Allreduce;
    mine_.type = a.type;
    mine_.op = a.op;
    mine_.seq = a.seq;
    mine_.count = a.count;
  }

  void send(int peer, const void* data) {
    Piece p[2] = {{&mine_, sizeof mine_}, {const_cast<void*>(data), bytes()}};
    Channel::Op op = ch_.send(peer, kTagSmall, p);
    if (wait_for(ch_, op, ctx_) != OpState::Done)
      throw Interrupted("transport: send to rank " + std::to_string(peer) + " failed");
  }

  // Receives `peer`'s buffer into `into`, checking its header.
  void recv(int peer, void* into) {
    WireHeader theirs{};
    Piece p[2] = {{&theirs, sizeof theirs}, {into, bytes()}};
    std::size_t got = 0;
    Channel::Op op = ch_.recv(peer, kTagSmall, p);
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
    Channel::Op send_op = ch_.send(peer, kTagSmall, s);
    Channel::Op recv_op = ch_.recv(peer, kTagSmall, r);
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
  WireHeader mine_{};
};

void run(Channel& ch, const std::vector<int>& group, const AllreduceArgs& a, WaitContext& ctx) {
  const std::size_t n = group.size();
  const std::size_t bytes = a.count * size_of(a.type);
  auto* out = static_cast<std::byte*>(a.output);
  if (out != a.input) std::memcpy(out, a.input, bytes);
  if (n == 1) return;
  const std::size_t me = static_cast<std::size_t>(std::find(group.begin(), group.end(), ch.rank()) - group.begin());
  std::size_t pow2 = 1;
  while (pow2 * 2 <= n) pow2 *= 2;
  const std::size_t extra = n - pow2;
  Exchange x(ch, a, ctx);
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
  if (me < 2 * extra && me % 2 == 0) {
    x.send(group[me + 1], out);
    x.recv(group[me + 1], out);
    return;
  }
  if (me < 2 * extra) {
    x.recv(group[me - 1], theirs.data());
    combine(false);
  }
  const std::size_t virt = me < 2 * extra ? me / 2 : me - extra;
  auto real = [&](std::size_t v) { return v < extra ? 2 * v + 1 : v + extra; };
  for (std::size_t mask = 1; mask < pow2; mask <<= 1) {
    const std::size_t partner = virt ^ mask;
    x.swap(group[real(partner)], out, theirs.data());
    combine(virt < partner);
  }
  if (me < 2 * extra) x.send(group[me - 1], out);
}

}  // namespace

void recursive_doubling_allreduce(Channel& ch, const std::vector<int>& group, const AllreduceArgs& args,
                                  WaitContext& ctx) {
  try {
    run(ch, group, args, ctx);
  } catch (...) {
    ch.abandon();
    throw;
  }
}

}  // namespace ringmend::transport
