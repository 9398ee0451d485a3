// A stream of small ring allreduces in flight at once on one ring: the
// inter-node stage of the hierarchical path.
//
// Each piece (one rank's slice of one shared-memory chunk) goes around the
// ring on its own: 2(n-1) steps, reduce-scatter then allgather, like
// ring_allreduce. Nothing here blocks: start() posts a piece's first
// messages and advance() moves every piece in flight as far as the messages
// that have arrived allow. So while the network carries piece c, the caller
// keeps copying and reducing chunk c+1 in shared memory, and a rank's
// intra-node and inter-node stages overlap. Pieces finish in the order they
// were started.
//
// The call is checked once, by a wire header exchanged with the ring
// neighbours when the stream opens (not once per piece).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "coll/args.hpp"
#include "coll/ring.hpp"
#include "coll/wire_header.hpp"
#include "transport/channel.hpp"
#include "transport/progress.hpp"

namespace ringmend::coll {

class RingStream {
 public:
  // `call` describes the whole collective (type, op, seq, count); its
  // input/output are not used; `as` is the algorithm the stream is part of
  // (its header names it). At most `max_in_flight` pieces run at once.
  RingStream(transport::Channel& ch, const std::vector<int>& ring, const AllreduceArgs& call,
             std::size_t max_in_flight, AlgorithmId as = AlgorithmId::ShmPipelined);
  RingStream(const RingStream&) = delete;
  RingStream& operator=(const RingStream&) = delete;

  bool full() const { return pieces_.size() >= max_in_flight_; }

  // Starts the allreduce of `count` elements of `input` into `output`. Both
  // must stay valid, and `input` unchanged, until the piece has finished.
  // Requires !full().
  void start(const void* input, void* output, std::size_t count);

  // Moves every piece in flight without waiting; true if anything moved.
  // Throws Interrupted (a peer failed) or Mismatch (the call differs).
  bool advance();

  // Pieces finished so far, counted in start order.
  std::uint64_t finished() const { return finished_; }

  // Waits until every started piece and the header have completed.
  void finish(transport::WaitContext& ctx);

 private:
  struct InFlight {
    std::uint64_t index = 0;
    const std::byte* input = nullptr;
    std::byte* output = nullptr;
    std::size_t count = 0;
    std::size_t step = 0;                      // the step whose message `recv` receives
    transport::Channel::Op recv = nullptr;     // null once every step has been received
    std::deque<transport::Channel::Op> sends;  // posted, not yet completed
    bool done() const { return recv == nullptr && sends.empty(); }
  };
  bool advance_piece(InFlight& piece);
  void post_recv(InFlight& piece);
  void post_send(InFlight& piece, std::size_t segment, const std::byte* base);
  std::uint32_t tag_of(const InFlight& piece) const;

  transport::Channel& ch_;
  RingPosition pos_;
  DataType type_;
  ReduceOp op_;
  std::size_t max_in_flight_;
  WireHeader mine_{}, theirs_{};
  transport::Channel::Op header_send_ = nullptr, header_recv_ = nullptr;
  bool header_checked_ = false;
  std::deque<InFlight> pieces_;  // in flight, oldest first
  std::uint64_t started_ = 0, finished_ = 0;
};

}  // namespace ringmend::coll
