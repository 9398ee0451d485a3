// The one wrapper every algorithm runs in: when it ends by an exception (a
// peer failed, the call is inconsistent, a deadline passed), the channel is
// abandoned before the exception leaves, so that nothing is written into the
// caller's buffers any more once its frame unwinds.
#pragma once

#include "transport/channel.hpp"

namespace ringmend::coll {

template <class Body>
void abandon_on_failure(transport::Channel* channel, Body&& body) {
  try {
    body();
  } catch (...) {
    if (channel) channel->abandon();
    throw;
  }
}

}  // namespace ringmend::coll
