#include "gpu/host_staging.hpp"

#include <algorithm>
#include <cstring>

#include "gpu/event_wait.hpp"
#include "ringmend/core/error.hpp"
#include "ringmend/core/sizes.hpp"

namespace ringmend::gpu {

std::size_t staging_piece_bytes(std::size_t bytes) {
  const std::size_t sixteenth = (bytes + 15) / 16;
  return std::clamp<std::size_t>((sixteenth + 4095) / 4096 * 4096, 256 * KiB, 16 * MiB);
}

void HostStaging::begin(const void* input, void* output, std::size_t bytes, cudaStream_t caller) {
  // The last call's copies out read out_: with another stream (or none
  // after one), nothing else orders them before this call writes it.
  if (copies_out_pending_) check(cudaEventSynchronize(done_.get()), "cudaEventSynchronize");  // local copies
  copies_out_pending_ = false;
  device_in_ = static_cast<const std::byte*>(input);
  device_out_ = static_cast<std::byte*>(output);
  bytes_ = bytes;
  finalized_ = 0;
  pending_bytes_ = 0;
  wrote_output_ = false;
  piece_bytes_ = staging_piece_bytes(bytes);
  const std::size_t n = (bytes + piece_bytes_ - 1) / piece_bytes_;
  pieces_.assign(n, Piece{});
  for (std::size_t i = 0; i < n; ++i)
    pieces_[i] = Piece{i * piece_bytes_, std::min(piece_bytes_, bytes - i * piece_bytes_)};
  while (events_.size() < n) events_.emplace_back();
  // Both directions wait for what the caller queued before the call: the
  // producer of the input, and any reader of the output.
  entry_.record(caller);
  check(cudaStreamWaitEvent(copy_in_.get(), entry_.get(), 0), "cudaStreamWaitEvent");
  check(cudaStreamWaitEvent(copy_out_.get(), entry_.get(), 0), "cudaStreamWaitEvent");
}

void HostStaging::reserve() {
  in_.reserve(bytes_);
  out_.reserve(bytes_);
}

std::byte* HostStaging::host_input() {
  reserve();
  return in_.data();
}

std::byte* HostStaging::host_output() {
  reserve();
  return out_.data();
}

void HostStaging::prefetch(std::size_t offset, std::size_t bytes) {
  if (bytes == 0) return;
  reserve();
  const std::size_t last = first_piece(offset + bytes - 1);
  for (std::size_t i = first_piece(offset); i <= last; ++i) {
    Piece& p = pieces_[i];
    if (p.issued) continue;
    check(cudaMemcpyAsync(in_.data() + p.offset, device_in_ + p.offset, p.bytes, cudaMemcpyDeviceToHost,
                          copy_in_.get()),
          "cudaMemcpyAsync (device to host)");
    events_[i].record(copy_in_.get());
    p.issued = true;
  }
}

void HostStaging::wait_input(std::size_t offset, std::size_t bytes) {
  if (bytes == 0) return;
  prefetch(offset, bytes);
  const std::size_t last = first_piece(offset + bytes - 1);
  for (std::size_t i = first_piece(offset); i <= last; ++i) {
    Piece& p = pieces_[i];
    if (p.arrived) continue;
    if (ctx_) {
      wait_event(events_[i], *ctx_);
    } else {
      check(cudaEventSynchronize(events_[i].get()), "cudaEventSynchronize");
    }
    p.arrived = true;
  }
}

void HostStaging::output_final(std::size_t offset, std::size_t bytes) {
  if (bytes == 0) return;
  // Parts next to each other join one run; a run goes out once it is worth
  // a copy of its own (a piece), the rest at the end. Every copy costs a
  // launch and its latency whatever its size: small parts one by one (many
  // ranks, or a small message) would cost more than they overlap.
  if (pending_bytes_ > 0 && offset == pending_offset_ + pending_bytes_) {
    pending_bytes_ += bytes;
  } else if (pending_bytes_ > 0 && offset + bytes == pending_offset_) {
    pending_offset_ = offset;
    pending_bytes_ += bytes;
  } else {
    copy_out_pending();
    pending_offset_ = offset;
    pending_bytes_ = bytes;
  }
  if (pending_bytes_ >= piece_bytes_) copy_out_pending();
}

void HostStaging::copy_out_pending() {
  if (pending_bytes_ == 0) return;
  wait_input(pending_offset_, pending_bytes_);  // in place, the input under it must be copied first
  check(cudaMemcpyAsync(device_out_ + pending_offset_, out_.data() + pending_offset_, pending_bytes_,
                        cudaMemcpyHostToDevice, copy_out_.get()),
        "cudaMemcpyAsync (host to device)");
  finalized_ += pending_bytes_;
  pending_bytes_ = 0;
  wrote_output_ = true;
}

void HostStaging::complete(cudaStream_t caller, bool caller_stream_given) {
  done_.record(copy_out_.get());
  copies_out_pending_ = caller_stream_given;
  if (caller_stream_given) {
    check(cudaStreamWaitEvent(caller, done_.get(), 0), "cudaStreamWaitEvent");
  } else {
    // A local copy: it cannot wait on a peer, so a plain wait is bounded.
    check(cudaEventSynchronize(done_.get()), "cudaEventSynchronize");
  }
}

void HostStaging::finish(cudaStream_t caller, bool caller_stream_given) {
  // The collective is over: what is left are local copies, waited for
  // plainly (a failure noticed now belongs to the next call).
  ctx_ = nullptr;
  if (finalized_ + pending_bytes_ == bytes_) copy_out_pending();
  if (finalized_ < bytes_) {
    // Parts were not handed over one by one (or not all): copy all of it.
    wait_input(0, bytes_);
    check(cudaMemcpyAsync(device_out_, out_.data(), bytes_, cudaMemcpyHostToDevice, copy_out_.get()),
          "cudaMemcpyAsync (host to device)");
    wrote_output_ = true;
  }
  complete(caller, caller_stream_given);
}

void HostStaging::finish_from(const void* host, cudaStream_t caller, bool caller_stream_given) {
  ctx_ = nullptr;
  // After the copies out of this call's earlier attempts (same stream), and
  // through out_, which they may still read: wait for them first.
  check(cudaStreamSynchronize(copy_out_.get()), "cudaStreamSynchronize");  // local copies
  check(cudaStreamSynchronize(copy_in_.get()), "cudaStreamSynchronize");   // in place: reads of the input
  reserve();
  std::memcpy(out_.data(), host, bytes_);
  check(cudaMemcpyAsync(device_out_, out_.data(), bytes_, cudaMemcpyHostToDevice, copy_out_.get()),
        "cudaMemcpyAsync (host to device)");
  wrote_output_ = true;
  complete(caller, caller_stream_given);
}

void HostStaging::order_after_copies_out(cudaStream_t stream) {
  copied_out_.record(copy_out_.get());
  check(cudaStreamWaitEvent(stream, copied_out_.get(), 0), "cudaStreamWaitEvent");
}

}  // namespace ringmend::gpu
