// A GPU buffer's allreduce through host memory: the input is copied to a
// pinned buffer in pieces, on a stream of its own, in the order the
// algorithm names them (so the first pieces travel while the later ones are
// still being copied), and the result goes back to the device as the
// algorithm reports its parts final, in runs of at least a piece. Ordering with the caller's
// stream goes through events: copies start after the work the caller queued
// before the call, and the caller's stream waits for the last copy out.
//
// The pieces copied in survive a failure: the call re-executed over the
// survivors reads the same host copy (a result part already copied out over
// the device input of an in-place call never hides an input: a part goes out
// only once the input under it is in host memory).
#pragma once

#include <cstddef>
#include <vector>

#include "coll/args.hpp"
#include "gpu/cuda_runtime.hpp"
#include "transport/progress.hpp"

namespace ringmend::gpu {

class HostStaging final : public coll::Staging {
 public:
  HostStaging() = default;

  // A new call on the current device: `input` and `output` are device
  // pointers (equal for an in-place call), `caller` the stream whose earlier
  // work they follow (nullptr: the default stream).
  void begin(const void* input, void* output, std::size_t bytes, cudaStream_t caller);
  // The pinned copies (allocated at first use: a call that takes another
  // path never needs them).
  std::byte* host_input();
  std::byte* host_output();
  std::size_t bytes() const { return bytes_; }
  // Whether a part of the result went to the GPU in this call (in place,
  // the device input under it is gone: a later attempt must read the host
  // copy, host_input(), after wait_input of the whole).
  bool wrote_output() const { return wrote_output_; }

  // Waits use this context (the runtime: failures, the deadline).
  void set_context(transport::WaitContext* ctx) { ctx_ = ctx; }
  // Before each attempt of the call: nothing of its result handed over yet.
  void begin_attempt() { finalized_ = pending_bytes_ = 0; }

  void prefetch(std::size_t offset, std::size_t bytes) override;
  void wait_input(std::size_t offset, std::size_t bytes) override;
  void output_final(std::size_t offset, std::size_t bytes) override;

  // After a successful attempt: copies out what the algorithm did not hand
  // over part by part, then makes `caller` wait for the copies (or, without
  // a stream, waits for them here).
  void finish(cudaStream_t caller, bool caller_stream_given);
  // The result came from elsewhere (a survivor that finished the call): it
  // is `host` (pageable, reusable once this returns), copied out whole
  // after every copy out of this call's earlier attempts.
  void finish_from(const void* host, cudaStream_t caller, bool caller_stream_given);
  // Work queued on `stream` from now on waits for every copy out queued so
  // far (a later attempt of the call that writes the output another way
  // must land after an earlier attempt's parts).
  void order_after_copies_out(cudaStream_t stream);

 private:
  struct Piece {
    std::size_t offset = 0, bytes = 0;
    bool issued = false, arrived = false;
  };
  void complete(cudaStream_t caller, bool caller_stream_given);
  void copy_out_pending();  // the run of final parts not yet copied out
  void reserve();
  std::size_t first_piece(std::size_t offset) const { return offset / piece_bytes_; }

  Stream copy_in_, copy_out_;
  Event entry_, done_, copied_out_;
  std::vector<Event> events_;  // one per piece, reused across calls
  std::vector<Piece> pieces_;
  Buffer in_{Buffer::Kind::Pinned}, out_{Buffer::Kind::Pinned};
  const std::byte* device_in_ = nullptr;
  std::byte* device_out_ = nullptr;
  std::size_t bytes_ = 0, piece_bytes_ = 1, finalized_ = 0;
  std::size_t pending_offset_ = 0, pending_bytes_ = 0;  // final parts not yet copied out
  bool wrote_output_ = false;
  bool copies_out_pending_ = false;  // the last call's copies out may still read out_
  transport::WaitContext* ctx_ = nullptr;
};

// The size of the pieces a staged input is copied in: a sixteenth of the
// message, between 256 KiB and 16 MiB (each piece costs an event and a copy
// launch, a few microseconds; sixteen of them let the first travel after
// 1/16 of the copy).
std::size_t staging_piece_bytes(std::size_t bytes);

}  // namespace ringmend::gpu
