#include "transport/shm_node.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "ringmend/core/sizes.hpp"

namespace ringmend::transport {
ShmLayout ShmLayout::make(int ranks, std::size_t buffer_bytes, std::size_t small_bytes) {
  ShmLayout l;
  l.ranks = ranks;
  l.buffer_bytes = align_up(buffer_bytes, 4096);
  l.small_bytes = align_up(small_bytes + kSlotHeader, kSlotAlign) - kSlotHeader;  // whole slots aligned
  const auto n = static_cast<std::size_t>(ranks);
  l.control_offset = 0;
  l.small_offset = align_up(n * sizeof(ShmRankControl), 4096);
  l.result_offset = align_up(l.small_offset + n * 2 * (kSlotHeader + l.small_bytes), 4096);
  l.buffer_offset = align_up(l.result_offset + n * 2 * l.small_bytes, 4096);
  l.total = l.buffer_offset + n * l.buffer_bytes;
  return l;
}

ShmNode::ShmNode(ShmSegment segment, const ShmLayout& layout, int local, const std::vector<pid_t>& pids)
    : segment_(std::move(segment)), layout_(layout), local_(local), watch_(pids) {
  if (segment_.size() < layout_.total)
    throw std::logic_error("shared-memory segment smaller than its layout");
  // Each rank allocates what it writes (its counters and slots), all ranks
  // at once: opening costs the same at any node size. The pipeline buffers
  // wait for the first call that needs them (reserve_buffers).
  const auto r = static_cast<std::size_t>(local);
  const std::size_t small_pair = 2 * (ShmLayout::kSlotHeader + layout_.small_bytes);
  segment_.reserve(layout_.control_offset + r * sizeof(ShmRankControl), sizeof(ShmRankControl));
  segment_.reserve(layout_.small_offset + r * small_pair, small_pair);
  segment_.reserve(layout_.result_offset + r * 2 * layout_.small_bytes, 2 * layout_.small_bytes);
}

std::string ShmNode::reserve_buffers(std::size_t bytes) {
  const std::size_t want = std::min(bytes, layout_.buffer_bytes);
  if (want <= buffers_reserved_) return {};
  try {
    const std::size_t mine = layout_.buffer_offset + static_cast<std::size_t>(local_) * layout_.buffer_bytes;
    segment_.reserve(mine + buffers_reserved_, want - buffers_reserved_);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  buffers_reserved_ = want;
  return {};
}

std::unique_ptr<ShmNode> ShmNode::open(const std::string& name, const ShmLayout& layout, int local,
                                       const std::vector<pid_t>& pids) {
  return std::make_unique<ShmNode>(ShmSegment::open_shared(name, layout.total), layout, local, pids);
}

bool ShmNode::never_finishes(int r, std::uint64_t call) const {
  const ShmRankControl& c = control(r);
  if (c.done.load() >= call) return false;
  if (c.failed.load() >= call) return true;
  // Read `done` again after seeing the exit: a rank may finish and then die.
  return watch_.has_exited(r) && c.done.load() < call;
}

void ShmNode::check_peers() const {
  if (int i = watch_.exited(); i >= 0)
    throw Interrupted("shared memory: local rank " + std::to_string(i) + " (" + watch_.describe_exit(i) +
                      ")");
}

void ShmBackoff::idle() {
  if (backoff_.idle()) {
    node_.check_peers();
    ctx_.check();
  }
}

}  // namespace ringmend::transport
