// Recursive-doubling allreduce over a group of channel ranks: log2(n)
// exchanges of the whole (small) buffer, the latency-optimal schedule for
// messages too small for a ring to pay off. Non-power-of-two groups fold the
// extra ranks into a partner first and hand them the result at the end.
//
// Every rank combines lower-group-first, so all ranks get bit-identical
// results even for floating point.
#pragma once

#include <vector>

#include "transport/channel.hpp"
#include "transport/progress.hpp"
#include "transport/ring_allreduce.hpp"

namespace ringmend::transport {

// `group` lists the channel ranks taking part (this rank among them);
// args.output receives the result (args.input may equal args.output).
void recursive_doubling_allreduce(Channel& ch, const std::vector<int>& group, const AllreduceArgs& args,
                                  WaitContext& ctx);

// The channel ranks `me` exchanges with in a recursive doubling over
// `group` (to create endpoints to exactly those).
std::vector<int> recursive_doubling_peers(const std::vector<int>& group, int me);

}  // namespace ringmend::transport
