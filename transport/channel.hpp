// The small point-to-point interface every ringmend algorithm runs on.
//
// A Channel connects the members of one communicator epoch. Messages are
// matched by (source, tag) and arrive in the order they were sent between a
// pair of ranks. All operations are non-blocking; completion is observed with
// test() while the caller drives progress(). Implementations: UCX (this
// issue); shared memory inside a node slots in beside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ringmend::transport {

// One piece of a message (a header and a payload are sent as two pieces of
// one message, without copying them together).
struct Piece {
  void* data;
  std::size_t bytes;
};

enum class OpState : std::uint8_t { Pending, Done, Truncated, Failed };

class Channel {
 public:
  using Op = void*;  // opaque handle of an outstanding operation

  virtual ~Channel() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Posts a send of `pieces` (concatenated) to `peer` / a receive from `peer`
  // into `pieces`. The memory must stay valid until test() returns non-Pending.
  virtual Op send(int peer, std::uint32_t tag, std::span<const Piece> pieces) = 0;
  virtual Op recv(int peer, std::uint32_t tag, std::span<const Piece> pieces) = 0;

  // State of an operation; once it is not Pending, the handle is released
  // and must not be tested again. `bytes` receives the received length.
  virtual OpState test(Op op, std::size_t* bytes = nullptr) = 0;

  // Drives communication. Returns true when something happened.
  virtual bool progress() = 0;

  // True once a peer of this channel was reported dead (the transport's own
  // failure detection; MPI's is polled separately by the runtime).
  virtual bool peer_failed() const = 0;

  // Cancels everything outstanding and closes the connections; after it no
  // posted buffer is touched again. Algorithms call it before unwinding.
  virtual void abandon() = 0;
  virtual std::string failure_reason() const = 0;
};

}  // namespace ringmend::transport
