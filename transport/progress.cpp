#include "transport/progress.hpp"

#include "transport/backoff.hpp"

namespace ringmend::transport {
namespace {

OpState finished(Channel& ch, OpState s) {
  if (s == OpState::Failed) throw Interrupted("transport: " + ch.failure_reason());
  return s;
}

}  // namespace

OpState poll(Channel& ch, Channel::Op op, WaitContext& ctx, std::size_t* bytes) {
  for (unsigned round = 0; round < Backoff::kPollEverySpins; ++round) {
    OpState s = ch.test(op, bytes);
    if (s != OpState::Pending) return finished(ch, s);
    if (ch.peer_failed()) throw Interrupted("transport: " + ch.failure_reason());
    ch.progress();
  }
  ctx.check();
  return OpState::Pending;
}

OpState wait_for(Channel& ch, Channel::Op op, WaitContext& ctx, std::size_t* bytes) {
  Backoff backoff(ctx.oversubscribed());
  for (;;) {
    OpState s = ch.test(op, bytes);
    if (s != OpState::Pending) return finished(ch, s);
    if (ch.peer_failed()) throw Interrupted("transport: " + ch.failure_reason());
    ch.progress();
    if (backoff.idle()) ctx.check();
  }
}

}  // namespace ringmend::transport
