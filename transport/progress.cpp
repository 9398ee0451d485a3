#include "transport/progress.hpp"

#include <sched.h>

namespace ringmend::transport {
namespace {

// MPI's failure check costs far more than a UCX progress call: poll it once
// every this many spins.
constexpr int kSpinsPerCheck = 64;

OpState finished(Channel& ch, OpState s) {
  if (s == OpState::Failed) throw Interrupted("transport: " + ch.failure_reason());
  return s;
}

}  // namespace

OpState poll(Channel& ch, Channel::Op op, WaitContext& ctx, std::size_t* bytes) {
  for (int spin = 0; spin < kSpinsPerCheck; ++spin) {
    OpState s = ch.test(op, bytes);
    if (s != OpState::Pending) return finished(ch, s);
    if (ch.peer_failed()) throw Interrupted("transport: " + ch.failure_reason());
    ch.progress();
  }
  ctx.check();
  return OpState::Pending;
}

OpState wait_for(Channel& ch, Channel::Op op, WaitContext& ctx, std::size_t* bytes) {
  for (unsigned round = 0;; ++round) {
    OpState s = poll(ch, op, ctx, bytes);
    if (s != OpState::Pending) return s;
    // Ranks may outnumber cores: a rank spinning for long would then starve
    // the very peer it waits for.
    if (round >= ctx.spin_rounds()) sched_yield();
  }
}

}  // namespace ringmend::transport
