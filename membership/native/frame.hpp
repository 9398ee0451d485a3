// The native membership's wire format: every message between two processes
// of the control network is one frame, tagged with the view (epoch) it
// belongs to and the member that sent it. Little-endian, length-prefixed:
//
//   u32 length of the rest | u8 kind | u64 epoch | i32 from | body
//
// Bodies: Hello u64 job key (first frame of a connection: who is calling,
// for which job); Heartbeat and Bye nothing; Protocol one view change
// message (view_change.hpp); Gather and Exchange u64 round | u32 n | n bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "membership/native/view_change.hpp"

namespace ringmend::membership::native {

enum class FrameKind : std::uint8_t {
  Hello = 1,      // a connection's first frame
  Heartbeat = 2,  // a node leader is alive (detector)
  Protocol = 3,   // a view change message
  Gather = 4,     // one member's contribution to an all-gather of its view
  Bye = 5,        // the sender leaves the job normally: its connections close, it did not fail
  Exchange = 6,   // bytes for one peer (a point-to-point exchange of the view)
  // A process started after the job (a joiner) asks to be admitted; the
  // payload is its record (group.hpp, PeerRecord).
  Join = 7,
  // To a joiner: the records of view `epoch`, one per line. It is admitted
  // once it finds itself in one.
  Welcome = 8,
  // One joiner's record, sent before a protocol message that names it to a
  // member that may not have heard of it yet (same connection: it arrives
  // first).
  Record = 9,
};
const char* to_string(FrameKind kind);

struct Frame {
  FrameKind kind = FrameKind::Heartbeat;
  std::uint64_t epoch = 0;
  MemberId from = 0;
  std::uint64_t job_key = 0;  // Hello
  Message protocol;           // Protocol
  std::uint64_t round = 0;    // Gather, Exchange
  // Gather: which all-gather of the round this is (a hash of its
  // participants), so that two different ones never mix (group.hpp).
  std::uint64_t tag = 0;
  std::string payload;  // Gather, Exchange, Join, Welcome, Record
};

// The bytes of `frame`, length prefix included.
std::string encode(const Frame& frame);

// Frames from a byte stream, in pieces as they arrive.
class FrameReader {
 public:
  // Frames larger than this are refused (a stray connection speaking
  // another protocol), not allocated.
  static constexpr std::uint32_t kMaxFrameBytes = 64u << 20;

  void append(const char* data, std::size_t n) { buffer_.append(data, n); }
  // The next whole frame, or nothing yet. Throws std::runtime_error for a
  // frame that cannot be one of ours (the caller closes the connection).
  std::optional<Frame> next();

 private:
  std::string buffer_;
  std::size_t offset_ = 0;
};

}  // namespace ringmend::membership::native
