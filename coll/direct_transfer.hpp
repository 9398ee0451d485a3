// One buffer from one rank straight to a few others, in pipelined chunks
// over the flat channel (shared memory inside a node, UCX across). Not a
// collective: only the sender and its receivers take part, and the
// receivers know the size beforehand. The runtime hands the registered
// state to the spares it admits with it (runtime/admission.cpp), so that a
// joiner's state crosses one link instead of passing through every member.
// The epoch builder connects the pairs (membership::Epoch::state_source_of).
// Both ends enter Phase::Broadcast (a fault-injection point) per transfer.
#pragma once

#include <cstddef>
#include <vector>

#include "transport/channel.hpp"
#include "transport/progress.hpp"

namespace ringmend::coll {

// Sends `bytes` at `data` to every rank of `receivers`, all at once: each
// receiver's chunks go out as the channel takes them. Returns when every
// chunk has gone; throws Interrupted when a receiver or the channel fails.
void send_direct(transport::Channel& ch, const std::vector<int>& receivers, const void* data,
                 std::size_t bytes, transport::WaitContext& ctx, std::size_t chunk_bytes);

// Receives the `bytes` that `sender` sends with send_direct (same
// chunk_bytes). Throws Mismatch when a chunk of another size arrives.
void receive_direct(transport::Channel& ch, int sender, void* data, std::size_t bytes,
                    transport::WaitContext& ctx, std::size_t chunk_bytes);

}  // namespace ringmend::coll
