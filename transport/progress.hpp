// How algorithms wait: drive the channel, watch for failures, never hang.
#pragma once

#include <stdexcept>
#include <string>

#include "transport/channel.hpp"

namespace ringmend::transport {

// A wait was cut short because a peer failed or the membership is being
// changed; the runtime recovers and re-executes the collective.
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A peer's message disagrees with this rank's call (sequence number, count,
// type, operation or root): the application called the collective
// inconsistently. The runtime turns this into an error on every rank.
class Mismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where an algorithm is, for fault injection and diagnostics.
enum class Phase { Start, ReduceScatter, Allgather, Broadcast, End, Alltoall };

// Supplied by the runtime to every algorithm.
class WaitContext {
 public:
  virtual ~WaitContext() = default;
  // Polled often while waiting; throws Interrupted (failure noticed) or
  // another ringmend error (deadline passed).
  virtual void check() = 0;
  // Called when an algorithm enters a phase/step (fault injection point).
  virtual void on_phase(Phase phase, int step) = 0;
  // More ranks on this machine than CPUs: waits yield almost at once
  // (backoff.hpp).
  virtual bool oversubscribed() const { return false; }
};

// Waits for `op` to finish, driving `ch` and polling `ctx`. Returns the
// final state (Done or Truncated); throws Interrupted on transport failure.
OpState wait_for(Channel& ch, Channel::Op op, WaitContext& ctx, std::size_t* bytes = nullptr);

// Progresses until `op` is finished or returns Pending after a short while
// (so callers can interleave several operations).
OpState poll(Channel& ch, Channel::Op op, WaitContext& ctx, std::size_t* bytes = nullptr);

}  // namespace ringmend::transport
