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
  // Only rounds in which nothing moved count towards yielding and sleeping:
  // a long message streams through a ring much smaller than itself, and a
  // wait that counted its busy rounds too went on to sleep between slots
  // (one 64 MiB transfer over shared memory at half the link's rate).
  // Failures are still polled every so many rounds, moving or not.
  Backoff backoff(ctx.oversubscribed());
  for (unsigned round = 1;; ++round) {
    OpState s = ch.test(op, bytes);
    if (s != OpState::Pending) return finished(ch, s);
    if (ch.peer_failed()) throw Interrupted("transport: " + ch.failure_reason());
    if (ch.progress()) {
      backoff.reset();
      if (round % Backoff::kPollEverySpins == 0) ctx.check();
    } else if (backoff.idle()) {
      ctx.check();
    }
  }
}

}  // namespace ringmend::transport
