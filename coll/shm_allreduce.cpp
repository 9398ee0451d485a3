#include "coll/shm_allreduce.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "coll/attempt.hpp"
#include "coll/pipeline_tuner.hpp"
#include "coll/recursive_doubling.hpp"
#include "coll/reduce_kernels.hpp"
#include "coll/ring.hpp"
#include "coll/ring_stream.hpp"
#include "ringmend/core/error.hpp"
#include "ringmend/core/sizes.hpp"
#include "transport/shm_node.hpp"

namespace ringmend::coll {
namespace {

using namespace transport;

WireHeader& descriptor(const ShmNode& node, int r, std::uint64_t call) {
  return *reinterpret_cast<WireHeader*>(node.small_slot(r, call));
}

// Beside the header in a descriptor: how a pipelined call cuts the
// buffers (local rank 0 chooses; every rank of the node follows it), and
// whether this rank has its buffers.
struct ShmCallPlan {
  PipelineGeometry shape;        // local rank 0's is the call's
  std::uint64_t no_buffers = 0;  // this rank could not reserve its pipeline buffers
};

ShmCallPlan& plan_in(const ShmNode& node, int r, std::uint64_t call) {
  return *reinterpret_cast<ShmCallPlan*>(node.small_slot(r, call) + sizeof(WireHeader));
}

// The last word of the header: the call whose descriptor (and inline data)
// the slot holds, written last. A peer waits on it and then reads the rest
// from the same lines.
constexpr std::size_t kPostedAt = ShmLayout::kSlotHeader - sizeof(std::uint64_t);
static_assert(sizeof(WireHeader) + sizeof(ShmCallPlan) <= kPostedAt);

std::atomic_ref<std::uint64_t> posted_in(const ShmNode& node, int r, std::uint64_t call) {
  return std::atomic_ref<std::uint64_t>(
      *reinterpret_cast<std::uint64_t*>(node.small_slot(r, call) + kPostedAt));
}

bool all_posted(const ShmNode& node, std::uint64_t call) {
  for (int r = 0; r < node.size(); ++r)
    if (posted_in(node, r, call).load(std::memory_order_acquire) < call) return false;
  return true;
}

// Posts this rank's descriptor (and, on the one-shot path, its data) for
// `call` and checks every node peer's against it. Returns local rank 0's
// plan (what this rank posted, on rank 0).
ShmCallPlan post_and_check(ShmNode& node, const Layout& h, const AllreduceArgs& a, AlgorithmId path,
                           const ShmCallPlan& proposal, const std::string& no_buffers_why, std::uint64_t call,
                           WaitContext& ctx) {
  const int me = node.local();
  // My slot of this parity was last read in call-2: every peer must be done
  // with that call. A peer that posted call-1 has left it:
  // seen in the last call, that costs nothing more to know.
  if (call > 2 && node.last_all_posted + 1 < call)
    shm_wait(node, ctx, [&] { return node.all_at_least(&ShmRankControl::done, call - 2); });
  WireHeader& mine = descriptor(node, me, call);
  mine = header_of(a, path);
  plan_in(node, me, call) = proposal;
  if (path == AlgorithmId::ShmOneShot)
    std::memcpy(node.small_data(me, call), a.input, a.count * size_of(a.type));
  posted_in(node, me, call).store(call, std::memory_order_release);
  shm_wait(node, ctx, [&] { return all_posted(node, call); });
  node.last_all_posted = call;
  for (int r = 0; r < node.size(); ++r) {
    if (r == me) continue;
    const WireHeader& theirs = descriptor(node, r, call);
    const int peer = h.local_ranks[static_cast<std::size_t>(r)];
    if (std::string why = describe_mismatch(mine, theirs, peer); !why.empty()) throw Mismatch(why);
  }
  // A rank without buffers fails the call on every rank alike, in step:
  // the call is done here, and the next one tries again.
  for (int r = 0; r < node.size(); ++r)
    if (plan_in(node, r, call).no_buffers) {
      node.control(me).done.publish(call);
      throw Error(Errc::Internal, "shared-memory allreduce: local rank " + std::to_string(r) + " (rank " +
                                      std::to_string(h.local_ranks[static_cast<std::size_t>(r)]) +
                                      ") could not allocate its pipeline buffers" +
                                      (r == me ? ": " + no_buffers_why : std::string()));
    }
  const ShmCallPlan plan = plan_in(node, 0, call);
  const PipelineGeometry& g = plan.shape;
  if (path == AlgorithmId::ShmPipelined && (g.chunk_bytes == 0 || g.depth == 0 || g.chunk_bytes % 64 != 0 ||
                                            g.chunk_bytes * g.depth > node.layout().buffer_bytes))
    throw std::logic_error("shared-memory allreduce: local rank 0 posted a pipeline that does not fit");
  return plan;
}

void one_shot(ShmNode& node, Channel* inter, const Layout& h, const AllreduceArgs& a, std::uint64_t call,
              WaitContext& ctx) {
  const int n = node.size();
  const std::size_t bytes = a.count * size_of(a.type);
  // No allocation on the latency path for nodes of up to kInline ranks.
  constexpr int kInline = 64;
  std::array<const void*, kInline> inline_srcs;
  std::vector<const void*> heap_srcs(n > kInline ? static_cast<std::size_t>(n) : 0);
  const void** srcs = n > kInline ? heap_srcs.data() : inline_srcs.data();
  for (int r = 0; r < n; ++r) srcs[r] = node.small_data(r, call);
  ctx.on_phase(Phase::ReduceScatter, 0);
  reduce_many(a.output, srcs, static_cast<std::size_t>(n), a.count, a.type, a.op);
  if (!h.multi_node()) {
    retain_part(a, 0, bytes);
    return;
  }
  ctx.on_phase(Phase::Allgather, 0);
  if (node.local() == 0) {
    AllreduceArgs across = a;
    across.input = a.output;
    across.retain = nullptr;
    across.staging = nullptr;  // the result is handed over below, whole
    recursive_doubling_allreduce(*inter, h.leaders, across, ctx, AlgorithmId::ShmOneShot);
    std::memcpy(node.result_slot(0, call), a.output, bytes);
    node.control(0).result.publish(call);
  } else {
    shm_wait(node, ctx, [&] { return node.control(0).result.load() >= call; });
    std::memcpy(a.output, node.result_slot(0, call), bytes);
  }
  retain_part(a, 0, bytes);
}

// The pipeline over a node's shared buffers: each rank copies its input in
// chunk by chunk, reduces its slice of each chunk (with several nodes, sends
// it around its rail first) and copies every reduced chunk out. The three
// move as far as their inputs allow, so copying, reducing and sending
// overlap.
class ShmPipeline {
 public:
  ShmPipeline(ShmNode& node, Channel* inter, const Layout& h, const AllreduceArgs& a, const ShmCallPlan& plan,
              WaitContext& ctx)
      : node_(node),
        a_(a),
        ctx_(ctx),
        esize_(size_of(a.type)),
        chunk_bytes_(plan.shape.chunk_bytes / esize_ * esize_),
        chunk_elems_(chunk_bytes_ / esize_),
        chunks_((a.count + chunk_elems_ - 1) / chunk_elems_),
        depth_(plan.shape.depth),
        me_(node.local()),
        n_(node.size()),
        multi_(h.multi_node()),
        slices_(multi_ ? h.rails : n_),
        owner_(me_ < slices_),
        g0_(node.chunks_used),
        in_(static_cast<const std::byte*>(a.input)),
        out_(static_cast<std::byte*>(a.output)),
        stage_bytes_((chunk_elems_ / static_cast<std::size_t>(slices_) + 1) * esize_),
        srcs_(static_cast<std::size_t>(n_)) {
    // With several nodes an owner's slices cross the nodes on its rail while
    // it goes on with the next chunks: one staging buffer per piece in flight.
    if (multi_ && owner_) {
      across_.emplace(*inter, h.rail_ring, a, depth_, AlgorithmId::ShmPipelined);
      stage_.resize(depth_ * stage_bytes_);
    }
  }

  void run() {
    // A staged input (a GPU buffer) is read chunk by chunk, in order: its
    // copy to the host is started whole and waited for chunk by chunk.
    if (a_.staging) a_.staging->prefetch(0, a_.bytes());
    ShmBackoff backoff(node_, ctx_);
    std::optional<Interrupted> failure;
    while (next_out_ < chunks_) {
      // Reducing first: peers wait for it.
      bool moved = reduce_next();
      if (across_) {
        moved |= across_->advance();
        while (next_across_ < across_->finished()) node_.control(me_).out_ready.publish(g0_ + ++next_across_);
      }
      moved |= copy_in_next();
      moved |= copy_out_next();
      // A failure noticed while idle ends the call only if nothing can move
      // any more (a peer may exit once it has done its part).
      if (moved) {
        backoff.reset();
        failure.reset();
      } else if (failure) {
        throw *failure;
      } else {
        try {
          backoff.idle();
        } catch (const Interrupted& e) {
          failure = e;
        }
      }
    }
    if (across_) across_->finish(ctx_);
    node_.chunks_used = g0_ + chunks_;
  }

 private:
  // Chunk g of rank r, in the buffers as this call cuts them. A call may cut
  // them differently from the last one: every rank had posted this call,
  // so had copied out every chunk of the last one, before any rank writes.
  std::byte* chunk(int r, std::uint64_t g) const { return node_.buffers(r) + (g % depth_) * chunk_bytes_; }
  Range chunk_of(std::size_t c) const {
    const std::size_t offset = c * chunk_elems_;
    return Range{offset, std::min(chunk_elems_, a_.count - offset)};
  }
  // Slice r of chunk c, relative to the chunk.
  Range slice_of(std::size_t c, int r) const {
    return split(chunk_of(c).count, static_cast<std::size_t>(slices_), static_cast<std::size_t>(r));
  }

  // Reduces my slice of the oldest chunk whose inputs are all there.
  bool reduce_next() {
    if (next_reduce_ >= next_in_) return false;
    const std::uint64_t g = g0_ + next_reduce_;
    if (!owner_) {
      // A rank that owns no slice (more ranks on its node than rails) is in
      // the reduce-scatter all the same: the same fault point as the owners'.
      ctx_.on_phase(Phase::ReduceScatter, static_cast<int>(next_reduce_));
      node_.control(me_).out_ready.publish(g + 1);
      ++next_reduce_;
      return true;
    }
    if ((across_ && across_->full()) || !node_.all_at_least(&ShmRankControl::in_ready, g + 1)) return false;
    ctx_.on_phase(Phase::ReduceScatter, static_cast<int>(next_reduce_));
    const Range s = slice_of(next_reduce_, me_);
    const std::size_t off = s.offset * esize_;
    const std::size_t at = (chunk_of(next_reduce_).offset + s.offset) * esize_;  // in the message
    // My own contribution straight from my input (it was never copied
    // in), the peers' from their buffers, in a fixed order.
    srcs_[0] = in_ + at;
    for (int r = 0, i = 1; r < n_; ++r)
      if (r != me_) srcs_[static_cast<std::size_t>(i++)] = chunk(r, g) + off;
    if (!multi_) {
      // Into my output, then (still in cache) into my buffer for the peers.
      reduce_many(out_ + at, srcs_.data(), srcs_.size(), s.count, a_.type, a_.op);
      std::memcpy(chunk(me_, g) + off, out_ + at, s.count * esize_);
    } else {
      // Reduce the node's part, then send it around the rail; the slice
      // is ready for the node once the stream has finished it.
      std::byte* staged = stage_.data() + (next_reduce_ % depth_) * stage_bytes_;
      reduce_many(staged, srcs_.data(), srcs_.size(), s.count, a_.type, a_.op);
      across_->start(staged, chunk(me_, g) + off, s.count);
    }
    if (!across_) node_.control(me_).out_ready.publish(g + 1);
    ++next_reduce_;
    return true;
  }

  // Copies the next input chunk in once every rank is done with the chunk
  // that last used this buffer.
  bool copy_in_next() {
    if (next_in_ >= chunks_ || next_in_ >= next_out_ + depth_) return false;
    const std::uint64_t g = g0_ + next_in_;
    if (g >= depth_ && !node_.all_at_least(&ShmRankControl::copied, g - depth_ + 1)) return false;
    const Range c = chunk_of(next_in_);
    wait_input(a_, c.offset * esize_, c.count * esize_);  // (my own slice is read from here too)
    // The peers need my input except the slice I reduce myself.
    const Range mine = owner_ ? slice_of(next_in_, me_) : Range{c.count, 0};
    std::memcpy(chunk(me_, g), in_ + c.offset * esize_, mine.offset * esize_);
    const std::size_t rest = mine.offset + mine.count;
    std::memcpy(chunk(me_, g) + rest * esize_, in_ + (c.offset + rest) * esize_, (c.count - rest) * esize_);
    node_.control(me_).in_ready.publish(g + 1);
    ++next_in_;
    return true;
  }

  // Copies the chunk out once every slice of it is reduced.
  bool copy_out_next() {
    if (next_out_ >= next_reduce_) return false;
    const std::uint64_t g = g0_ + next_out_;
    for (int r = 0; r < slices_; ++r)
      if (node_.control(r).out_ready.load() < g + 1) return false;
    ctx_.on_phase(Phase::Allgather, static_cast<int>(next_out_));
    const Range c = chunk_of(next_out_);
    for (int r = 0; r < slices_; ++r) {
      if (r == me_ && !multi_) continue;  // reduced straight into my output
      const Range s = slice_of(next_out_, r);
      std::memcpy(out_ + (c.offset + s.offset) * esize_, chunk(r, g) + s.offset * esize_, s.count * esize_);
    }
    retain_part(a_, c.offset * esize_, c.count * esize_);
    node_.control(me_).copied.publish(g + 1);
    ++next_out_;
    return true;
  }

  ShmNode& node_;
  const AllreduceArgs& a_;
  WaitContext& ctx_;
  const std::size_t esize_, chunk_bytes_, chunk_elems_, chunks_, depth_;
  const int me_, n_;
  const bool multi_;
  const int slices_;
  const bool owner_;
  const std::uint64_t g0_;
  const std::byte* const in_;
  std::byte* const out_;
  const std::size_t stage_bytes_;
  std::vector<const void*> srcs_;
  std::optional<RingStream> across_;
  std::vector<std::byte> stage_;
  std::size_t next_in_ = 0, next_reduce_ = 0, next_out_ = 0;
  std::uint64_t next_across_ = 0;  // pieces whose trip across the nodes is over
};

void pipelined(ShmNode& node, Channel* inter, const Layout& h, const AllreduceArgs& a,
               const ShmCallPlan& plan, WaitContext& ctx) {
  ShmPipeline(node, inter, h, a, plan, ctx).run();
}

// Waits, once this rank is done, until every local rank is done with `call`,
// and gives up only when one never will be (it gave up on the call, or its
// process exited before finishing it). Either condition, once true, stays
// true, and they exclude each other: so either every rank returns from the
// call or none does, and no survivor needs its result retained. A failure
// that MPI reports is judged by the same rule (it names a process of this
// node: the call runs on one node only); the deadline still applies.
void finish_together(const ShmNode& node, std::uint64_t call, WaitContext& ctx) {
  Backoff backoff(ctx.oversubscribed());
  while (!node.all_at_least(&ShmRankControl::done, call)) {
    if (!backoff.idle()) continue;
    for (int r = 0; r < node.size(); ++r)
      if (node.never_finishes(r, call))
        throw Interrupted("shared memory: local rank " + std::to_string(r) + " did not finish collective");
    try {
      ctx.check();
    } catch (const Interrupted&) {
      // Decided by the rule above, not by the notice.
    }
  }
}

}  // namespace

void shm_allreduce(AlgorithmId path, ShmNode& node, transport::Channel* inter, const Layout& layout,
                   const AllreduceArgs& a, const Tuning& tuning, WaitContext& ctx) {
  // Only the ranks that cross nodes need `inter` (a node leader on the
  // one-shot path, a rank on a rail on the pipelined path); the fabric opens
  // it for exactly those.
  const bool crosses = layout.multi_node() &&
                       (path == AlgorithmId::ShmOneShot ? node.local() == 0 : !layout.rail_ring.empty());
  if (crosses && inter == nullptr)
    throw std::logic_error("shared-memory allreduce across nodes without a channel");
  if (path == AlgorithmId::ShmOneShot && a.bytes() > node.layout().small_bytes)
    throw std::logic_error("one-shot allreduce larger than the node segment's small slots");
  // Local rank 0 shapes the pipeline; the others' proposals are not read.
  const bool pipelined_call = path == AlgorithmId::ShmPipelined;
  const bool shapes = pipelined_call && node.local() == 0;
  if (shapes && !tuning.pipeline) throw std::logic_error("shared-memory allreduce without a pipeline tuner");
  const PipelineGeometry proposal =
      shapes ? tuning.pipeline->propose(a.bytes(), node.size(), layout.multi_node()) : PipelineGeometry{};
  // The pipeline's buffers are allocated as calls need them.
  const std::string no_buffers_why = pipelined_call ? node.reserve_buffers(a.bytes()) : std::string();
  abandon_on_failure(inter, [&] {
    ctx.on_phase(Phase::Start, 0);
    const std::uint64_t call = ++node.calls;
    try {
      const ShmCallPlan plan = post_and_check(node, layout, a, path, {proposal, !no_buffers_why.empty()},
                                              no_buffers_why, call, ctx);
      if (path == AlgorithmId::ShmOneShot) {
        one_shot(node, inter, layout, a, call, ctx);
      } else {
        const auto start = std::chrono::steady_clock::now();
        pipelined(node, inter, layout, a, plan, ctx);
        if (shapes)
          tuning.pipeline->record(
              a.bytes(), node.size(), layout.multi_node(), proposal,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
    } catch (...) {
      // The peers waiting to finish together learn that this rank never will.
      node.control(node.local()).failed.publish(call);
      throw;
    }
    node.control(node.local()).done.publish(call);
    if (a.finish_together) {
      if (layout.multi_node())
        throw std::logic_error("shared-memory allreduce: finish together across nodes");
      finish_together(node, call, ctx);
    }
    ctx.on_phase(Phase::End, 0);
  });
}

std::vector<int> ShmOneShotAllreduce::peers(const Layout& layout, int rank) const {
  return recursive_doubling_peers(layout.leaders, rank);
}

void ShmOneShotAllreduce::run(const Call& call, const Channels& channels, const Layout& layout,
                              const Tuning& tuning, WaitContext& ctx) const {
  shm_allreduce(id(), *channels.node, channels.inter, layout, call.allreduce, tuning, ctx);
}

std::vector<int> ShmPipelinedAllreduce::peers(const Layout& layout, int rank) const {
  return ring_neighbours(layout.rail_ring, rank);
}

bool ShmPipelinedAllreduce::finishes_together(const Layout& layout, const Channels& channels) const {
  return !layout.multi_node() && channels.node != nullptr && channels.node->watches_every_peer();
}

void ShmPipelinedAllreduce::run(const Call& call, const Channels& channels, const Layout& layout,
                                const Tuning& tuning, WaitContext& ctx) const {
  shm_allreduce(id(), *channels.node, channels.inter, layout, call.allreduce, tuning, ctx);
}

}  // namespace ringmend::coll
