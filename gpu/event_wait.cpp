#include "gpu/event_wait.hpp"

#include "transport/backoff.hpp"

namespace ringmend::gpu {

void wait_until(const std::function<bool()>& ready, transport::WaitContext& ctx) {
  transport::Backoff backoff(ctx.oversubscribed());
  for (;;) {
    if (ready()) return;
    if (backoff.idle()) ctx.check();
  }
}

void wait_event(const Event& event, transport::WaitContext& ctx) {
  if (event.done()) return;
  wait_until([&] { return event.done(); }, ctx);
}

}  // namespace ringmend::gpu
