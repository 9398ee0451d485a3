// The ranks of one node, attached to one shared-memory segment per
// communicator epoch: the layout of that segment and how ranks wait on it.
//
// Every rank owns a control block of counters (each on its own cache-line
// pair, so that a rank spinning on one counter does not steal the line a
// peer is writing), two small slots (descriptor, posted flag and inline
// data, alternating by call parity) and the buffers of the pipelined path, which each call
// cuts into `depth` chunks of its own size (coll/pipeline_tuner.hpp). Counters
// only grow within an epoch; a new epoch gets a new, zeroed segment.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/backoff.hpp"
#include "transport/peer_watch.hpp"
#include "transport/progress.hpp"
#include "transport/shm_segment.hpp"

namespace ringmend::transport {

struct alignas(128) ShmCounter {
  std::atomic<std::uint64_t> value{0};
  std::uint64_t load() const { return value.load(std::memory_order_acquire); }
  void publish(std::uint64_t v) { value.store(v, std::memory_order_release); }
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "counters must be usable across processes");

// (Whether a rank has posted a call is in its small slot, beside the
// descriptor and the data: a peer waiting for it reads one place, not two.)
struct ShmRankControl {
  ShmCounter done;       // last call this rank finished
  ShmCounter in_ready;   // input chunks copied into this rank's chunk buffers (cumulative)
  ShmCounter out_ready;  // chunks whose slice this rank has reduced (cumulative)
  ShmCounter copied;     // chunks this rank has copied out (cumulative)
  ShmCounter result;     // leader: last call whose node-wide result is in its result slot
  ShmCounter failed;     // last call this rank gave up (an exception) before finishing it
};

struct ShmLayout {
  int ranks = 0;
  std::size_t buffer_bytes = 0;  // pipeline buffers per rank
  std::size_t small_bytes = 0;   // inline data capacity of a small slot
  // A small slot: a 64-byte header (descriptor and posted flag), then the
  // inline data; slots start on 128-byte boundaries, so that the header and
  // the first data line are one pair of lines, which cores fetch together.
  static constexpr std::size_t kSlotHeader = 64;
  static constexpr std::size_t kSlotAlign = 128;

  std::size_t control_offset = 0, small_offset = 0, result_offset = 0, buffer_offset = 0, total = 0;

  static ShmLayout make(int ranks, std::size_t buffer_bytes, std::size_t small_bytes);
};

class ShmNode {
 public:
  // `pids[i]` is the process of local rank i (watched for exits).
  ShmNode(ShmSegment segment, const ShmLayout& layout, int local, const std::vector<pid_t>& pids);

  // Opens the node's segment `name` (ShmSegment::open_shared: the first
  // local rank to get there creates it; nobody waits for anybody). Throws
  // std::runtime_error saying why it failed. The caller removes the name
  // (ShmSegment::unlink_name) once every local rank has opened it.
  static std::unique_ptr<ShmNode> open(const std::string& name, const ShmLayout& layout, int local,
                                       const std::vector<pid_t>& pids);

  int local() const { return local_; }
  int size() const { return layout_.ranks; }
  const ShmLayout& layout() const { return layout_; }

  // The accessors are inline: the one-shot path calls them a few times per
  // call, and a call takes a few hundred nanoseconds.
  ShmRankControl& control(int r) const {
    return reinterpret_cast<ShmRankControl*>(segment_.data() + layout_.control_offset)[r];
  }
  std::byte* small_slot(int r, std::uint64_t call) const {  // descriptor at offset 0
    const std::size_t slot = ShmLayout::kSlotHeader + layout_.small_bytes;
    return segment_.data() + layout_.small_offset + (static_cast<std::size_t>(r) * 2 + call % 2) * slot;
  }
  std::byte* small_data(int r, std::uint64_t call) const {
    return small_slot(r, call) + ShmLayout::kSlotHeader;
  }
  std::byte* result_slot(int r, std::uint64_t call) const {
    return segment_.data() + layout_.result_offset +
           (static_cast<std::size_t>(r) * 2 + call % 2) * layout_.small_bytes;
  }
  // Local rank r's pipeline buffers (layout().buffer_bytes).
  std::byte* buffers(int r) const {
    return segment_.data() + layout_.buffer_offset + static_cast<std::size_t>(r) * layout_.buffer_bytes;
  }
  // Reserves the first `bytes` of this rank's pipeline buffers (at most all
  // of them; ShmSegment::reserve), growing what earlier calls reserved: a
  // call of S bytes writes at most the first S bytes of them, so an epoch
  // allocates only what its messages use (a rebuild: nothing). Empty text
  // on success, otherwise why not (the caller tells its peers: see
  // coll/shm_allreduce).
  std::string reserve_buffers(std::size_t bytes);

  // True when `counter` of every local rank is at least `value`.
  bool all_at_least(ShmCounter ShmRankControl::*counter, std::uint64_t value) const {
    for (int r = 0; r < layout_.ranks; ++r)
      if ((control(r).*counter).load() < value) return false;
    return true;
  }

  // Throws Interrupted if a process of this node has exited.
  void check_peers() const;
  // Whether every local process is watched (PeerWatch::available): only then
  // can a rank tell, without MPI, which of its peers died.
  bool watches_every_peer() const { return watch_.available(); }
  // True when local rank r will never finish `call`: it gave up on it, or
  // its process exited before it had finished it.
  bool never_finishes(int r, std::uint64_t call) const;

  std::uint64_t calls = 0;            // shared-memory collectives started in this epoch
  std::uint64_t last_all_posted = 0;  // the last call this rank saw every local rank post
  std::uint64_t chunks_used = 0;      // pipeline chunks used so far in this epoch

 private:
  ShmSegment segment_;
  ShmLayout layout_;
  int local_;
  PeerWatch watch_;
  std::size_t buffers_reserved_ = 0;  // bytes of this rank's buffers, from their start
};

// Backoff (backoff.hpp) for shared-memory waits: polling for failures
// also checks the node peers' processes, so that no wait outlives a dead
// peer or a revoked membership.
class ShmBackoff {
 public:
  ShmBackoff(const ShmNode& node, WaitContext& ctx)
      : node_(node), ctx_(ctx), backoff_(ctx.oversubscribed()) {}
  void idle();
  void reset() { backoff_.reset(); }

 private:
  const ShmNode& node_;
  WaitContext& ctx_;
  Backoff backoff_;
};

// Waits until ready() holds. A peer that exits once it has done its part is
// not a failure of this wait: the condition is tested again before giving up.
template <class Ready>
void shm_wait(const ShmNode& node, WaitContext& ctx, Ready ready) {
  if (ready()) return;
  ShmBackoff backoff(node, ctx);
  while (!ready()) {
    try {
      backoff.idle();
    } catch (const Interrupted&) {
      if (ready()) return;
      throw;
    }
  }
}

}  // namespace ringmend::transport
