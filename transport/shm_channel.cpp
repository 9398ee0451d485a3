#include "transport/shm_channel.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "ringmend/core/sizes.hpp"
#include "transport/progress.hpp"

namespace ringmend::transport {
namespace {

// Checking the pidfds is a system call (~1 us in a VM) and progress() runs
// every few nanoseconds in a spinning wait: checking every 256 calls took a
// third of a ping-pong's time. The clock is read every 64 calls and the
// pidfds checked once a millisecond: a death is still seen within about 1 ms.
constexpr unsigned kCallsPerClockRead = 64;
constexpr std::chrono::steady_clock::duration kPeerCheckInterval = std::chrono::milliseconds(1);

constexpr std::uint32_t kFirst = 1, kLast = 2;
constexpr std::size_t kLine = 64;

// At the start of every slot; plain memory, published by the ring's head.
struct SlotHeader {
  std::uint32_t tag;
  std::uint32_t flags;     // kFirst / kLast fragment of its message
  std::uint64_t length;    // the whole message
  std::uint64_t fragment;  // payload bytes in this slot
};
static_assert(sizeof(SlotHeader) <= ShmChannelLayout::kSlotHeader);

// Calls copy(piece address, bytes) for the `n` bytes at `offset` of the
// concatenated `pieces`, in order.
template <typename Copy>
void for_range(std::span<const Piece> pieces, std::size_t offset, std::size_t n, Copy copy) {
  for (const Piece& p : pieces) {
    if (n == 0) return;
    if (offset >= p.bytes) {
      offset -= p.bytes;
      continue;
    }
    const std::size_t k = std::min(n, p.bytes - offset);
    copy(static_cast<std::byte*>(p.data) + offset, k);
    n -= k;
    offset = 0;
  }
}

// Copies `n` bytes from `offset` of the concatenated `pieces` to `dst`.
void gather(std::span<const Piece> pieces, std::size_t offset, std::byte* dst, std::size_t n) {
  for_range(pieces, offset, n, [&](const std::byte* p, std::size_t k) {
    std::memcpy(dst, p, k);
    dst += k;
  });
}

// Copies `n` bytes from `src` to `offset` of the concatenated `pieces`.
void scatter(const std::byte* src, std::size_t n, std::span<const Piece> pieces, std::size_t offset) {
  for_range(pieces, offset, n, [&](std::byte* p, std::size_t k) {
    std::memcpy(p, src, k);
    src += k;
  });
}

}  // namespace

ShmChannelLayout ShmChannelLayout::make(int ranks, std::size_t slot_bytes, std::size_t slots) {
  if (ranks < 1 || slots < 1 || slots > (1u << 20) || slot_bytes == 0)
    throw std::invalid_argument("shared-memory channel: bad layout parameters");
  ShmChannelLayout l;
  l.ranks = ranks;
  l.slots = static_cast<int>(slots);
  l.slot_bytes = align_up(slot_bytes, 64);
  l.slot_stride = align_up(kSlotPhase + kSlotHeader + l.slot_bytes, 4096);
  l.slot_offset = kSlotPhase;
  const auto rings = static_cast<std::size_t>(ranks) * static_cast<std::size_t>(ranks - 1);
  l.control_offset = 0;
  l.ring_offset = align_up(rings * sizeof(ShmRingControl), 4096);
  l.ring_bytes = align_up(static_cast<std::size_t>(slots) * l.slot_stride, 4096);
  l.total = std::max<std::size_t>(l.ring_offset + rings * l.ring_bytes, 4096);
  return l;
}

std::size_t ShmChannelLayout::ring_index(int from, int to) const {
  return static_cast<std::size_t>(from) * static_cast<std::size_t>(ranks - 1) +
         static_cast<std::size_t>(to < from ? to : to - 1);
}

struct ShmChannel::Request {
  std::vector<Piece> pieces;  // keeps its capacity across reuse
  std::size_t capacity = 0;   // sum of the pieces
  std::size_t offset = 0;     // send: bytes put in the ring so far
  std::size_t bytes = 0;      // reported by test()
  Request* next = nullptr;    // in a Queue
  std::uint32_t tag = 0;
  OpState state = OpState::Pending;
  bool in_use = false;
};

void ShmChannel::Queue::push(Request* r) {
  r->next = nullptr;
  (tail ? tail->next : head) = r;
  tail = r;
}

void ShmChannel::Queue::remove(Request* r, Request* prev) {
  (prev ? prev->next : head) = r->next;
  if (tail == r) tail = prev;
  r->next = nullptr;
}

namespace {
// Local rank r is rank r of the segment: a channel on a segment of its own.
std::vector<int> identity(int n) {
  std::vector<int> v(static_cast<std::size_t>(std::max(n, 0)));
  std::iota(v.begin(), v.end(), 0);
  return v;
}
}  // namespace

ShmChannel::ShmChannel(ShmSegment segment, ShmChannelLayout layout, int rank, std::vector<pid_t> pids)
    : ShmChannel(std::make_shared<const ShmSegment>(std::move(segment)), layout, identity(layout.ranks), rank,
                 std::move(pids)) {}

ShmChannel::ShmChannel(std::shared_ptr<const ShmSegment> segment, ShmChannelLayout layout,
                       std::vector<int> slot, int rank, std::vector<pid_t> pids)
    : segment_(std::move(segment)), layout_(layout), slot_(std::move(slot)), rank_(rank), watch_(pids) {
  const int ranks = size();
  if (rank < 0 || rank >= ranks || pids.size() != slot_.size())
    throw std::invalid_argument("shared-memory channel: rank or pid list does not fit the layout");
  for (int s : slot_)
    if (s < 0 || s >= layout_.ranks)
      throw std::invalid_argument("shared-memory channel: a rank outside the segment's layout");
  if (segment_->size() < layout_.total)
    throw std::logic_error("shared-memory segment smaller than its channel layout");
  peers_.resize(slot_.size());
  auto* controls = reinterpret_cast<ShmRingControl*>(segment_->data() + layout_.control_offset);
  auto slots_of = [&](std::size_t ring) {
    return segment_->data() + layout_.ring_offset + ring * layout_.ring_bytes + layout_.slot_offset;
  };
  const int me = slot_[static_cast<std::size_t>(rank_)];
  for (int q = 0; q < ranks; ++q) {
    if (q == rank_) continue;
    Peer& p = peers_[static_cast<std::size_t>(q)];
    const int them = slot_[static_cast<std::size_t>(q)];
    const std::size_t out = layout_.ring_index(me, them), in = layout_.ring_index(them, me);
    p.out = &controls[out];
    p.out_slots = slots_of(out);
    p.in = &controls[in];
    p.in_slots = slots_of(in);
  }
}

std::unique_ptr<ShmChannel> ShmChannel::for_survivors(const ShmChannel& previous,
                                                      std::vector<int> previous_rank, int rank,
                                                      std::vector<pid_t> pids) {
  std::vector<int> slot(previous_rank.size());
  for (std::size_t r = 0; r < previous_rank.size(); ++r) {
    const int was = previous_rank[r];
    if (was < 0 || was >= previous.size())
      throw std::invalid_argument("shared-memory channel: a survivor that was not in the previous epoch");
    slot[r] = previous.slot_[static_cast<std::size_t>(was)];
  }
  if (rank < 0 || rank >= static_cast<int>(slot.size()) ||
      previous_rank[static_cast<std::size_t>(rank)] != previous.rank_)
    throw std::invalid_argument("shared-memory channel: this rank is not the previous channel's");
  std::unique_ptr<ShmChannel> next(
      new ShmChannel(previous.segment_, previous.layout_, std::move(slot), rank, std::move(pids)));
  for (std::size_t q = 0; q < next->peers_.size(); ++q) {
    if (static_cast<int>(q) == rank) continue;
    const Peer& before = previous.peers_[static_cast<std::size_t>(previous_rank[q])];
    if (!before.mapped) continue;
    // Reserved and mapped already; empty the ring: this side owns the head
    // of its outgoing ring and the tail of its incoming one.
    Peer& p = next->peers_[q];
    p.out->head.publish(0);
    p.in->tail.publish(0);
    p.mapped = true;
  }
  return next;
}

ShmChannel::~ShmChannel() = default;

ShmChannel::Peer& ShmChannel::peer_at(int peer) {
  if (peer < 0 || peer >= size() || peer == rank_)
    throw std::invalid_argument("shared-memory channel: no peer " + std::to_string(peer));
  Peer& p = peers_[static_cast<std::size_t>(peer)];
  if (p.mapped) return p;
  // The rings of one pair, not every pair's: a node of n ranks has n(n-1)
  // rings, and most pairs never talk (an epoch's algorithms use the ring
  // neighbours). Each side reserves what it writes: the slots of its
  // outgoing ring and the counters of both (head out, tail in).
  const int me = slot_[static_cast<std::size_t>(rank_)], them = slot_[static_cast<std::size_t>(peer)];
  const std::size_t out = layout_.ring_index(me, them), in = layout_.ring_index(them, me);
  for (std::size_t ring : {out, in})
    segment_->reserve(layout_.control_offset + ring * sizeof(ShmRingControl), sizeof(ShmRingControl));
  segment_->reserve(layout_.ring_offset + out * layout_.ring_bytes, layout_.ring_bytes);
  p.mapped = true;
  return p;
}

void ShmChannel::prepare(int peer) { peer_at(peer); }

ShmChannel::Request* ShmChannel::acquire(std::uint32_t tag, std::span<const Piece> pieces) {
  Request* r = requests_.acquire();
  r->pieces.assign(pieces.begin(), pieces.end());
  r->capacity = 0;
  for (const Piece& p : pieces) r->capacity += p.bytes;
  r->offset = 0;
  r->bytes = 0;
  r->next = nullptr;
  r->tag = tag;
  r->state = OpState::Pending;
  r->in_use = true;
  return r;
}

void ShmChannel::finish(Request* r, OpState state) {
  r->state = state;
  r->next = nullptr;
}

Channel::Op ShmChannel::send(int peer, std::uint32_t tag, std::span<const Piece> pieces) {
  if (abandoned_) throw Interrupted("transport: channel abandoned after a failure");
  Peer& p = peer_at(peer);
  Request* r = acquire(tag, pieces);
  r->bytes = r->capacity;
  if (p.dead) {
    finish(r, OpState::Failed);
    return r;
  }
  const bool idle = p.sends.head == nullptr;
  p.sends.push(r);
  // Nothing queued before it: most messages go into the ring right here.
  if (idle) push_sends(p);
  return r;
}

Channel::Op ShmChannel::recv(int peer, std::uint32_t tag, std::span<const Piece> pieces) {
  if (abandoned_) throw Interrupted("transport: channel abandoned after a failure");
  Peer& p = peer_at(peer);
  Request* r = acquire(tag, pieces);
  // A message that arrived first matches before anything still in the ring.
  for (auto it = p.unexpected.begin(); it != p.unexpected.end(); ++it) {
    if (it->tag != tag) continue;
    scatter(it->data.get(), std::min(it->received, r->capacity), r->pieces, 0);
    if (it->complete) {
      r->bytes = std::min(it->length, r->capacity);
      finish(r, it->length > r->capacity ? OpState::Truncated : OpState::Done);
    } else {
      // Still arriving (it is the peer's current message): the rest is
      // copied straight into the receive.
      p.incoming.unexpected = nullptr;
      p.incoming.request = r;
    }
    p.unexpected.erase(it);
    return r;
  }
  if (p.dead)
    finish(r, OpState::Failed);
  else
    p.receives.push(r);
  return r;
}

OpState ShmChannel::test(Op op, std::size_t* bytes) {
  auto* r = static_cast<Request*>(op);
  const OpState s = r->state;
  if (s == OpState::Pending) return s;
  if (bytes) *bytes = r->bytes;
  r->in_use = false;
  requests_.release(r);
  return s;
}

bool ShmChannel::push_sends(Peer& p) {
  const auto slots = static_cast<std::uint64_t>(layout_.slots);
  bool moved = false;
  while (Request* r = p.sends.head) {
    // One fragment per slot; a zero-byte message still takes one.
    do {
      if (p.out_head - p.out_seen_tail == slots) {
        p.out_seen_tail = p.out->tail.load();
        if (p.out_head - p.out_seen_tail == slots) return moved;
      }
      std::byte* slot = p.out_slots + (p.out_head % slots) * layout_.slot_stride;
      const std::size_t n = std::min(layout_.slot_bytes, r->capacity - r->offset);
      const SlotHeader h{r->tag, (r->offset == 0 ? kFirst : 0) | (r->offset + n == r->capacity ? kLast : 0),
                         r->capacity, n};
      // The first line (header and the payload's start) last: the receiver
      // prefetches it while waiting, and one steal costs more than the copy.
      const std::size_t inline_bytes = std::min(n, kLine - ShmChannelLayout::kSlotHeader);
      gather(r->pieces, r->offset + inline_bytes, slot + kLine, n - inline_bytes);
      gather(r->pieces, r->offset, slot + ShmChannelLayout::kSlotHeader, inline_bytes);
      std::memcpy(slot, &h, sizeof h);
      r->offset += n;
      p.out->head.publish(++p.out_head);
      moved = true;
    } while (r->offset < r->capacity);
    p.sends.remove(r, nullptr);
    finish(r, OpState::Done);
  }
  return moved;
}

void ShmChannel::start_message(Peer& p, std::uint32_t tag, std::size_t length) {
  p.incoming = Incoming{};
  p.incoming.length = length;
  Request* prev = nullptr;
  for (Request* r = p.receives.head; r; prev = r, r = r->next) {
    if (r->tag != tag) continue;
    p.receives.remove(r, prev);
    p.incoming.request = r;
    return;
  }
  // Not posted yet: buffer it, so that the ring keeps moving.
  Unexpected& u = p.unexpected.emplace_back();
  u.tag = tag;
  u.length = length;
  u.data = std::make_unique_for_overwrite<std::byte[]>(length);
  p.incoming.unexpected = &u;
}

bool ShmChannel::drain(Peer& p) {
  const auto slots = static_cast<std::uint64_t>(layout_.slots);
  bool moved = false;
  // At most one ring's worth per call, so that a fast sender cannot keep
  // this rank from its other peers (or its wait from its checks).
  for (std::uint64_t n = 0; n < slots; ++n) {
    if (p.in_tail == p.in_seen_head) {
      // Fetch the next slot's first line along with the head: a small
      // message then costs one cache-line transfer instead of two in a row.
      __builtin_prefetch(p.in_slots + (p.in_tail % slots) * layout_.slot_stride);
      p.in_seen_head = p.in->head.load();
      if (p.in_tail == p.in_seen_head) break;
    }
    const std::byte* slot = p.in_slots + (p.in_tail % slots) * layout_.slot_stride;
    SlotHeader h;
    std::memcpy(&h, slot, sizeof h);
    if (h.flags & kFirst) start_message(p, h.tag, h.length);
    Incoming& in = p.incoming;
    const std::byte* data = slot + ShmChannelLayout::kSlotHeader;
    if (Request* r = in.request) {
      if (in.received < r->capacity)
        scatter(data, std::min(h.fragment, r->capacity - in.received), r->pieces, in.received);
    } else {
      std::memcpy(in.unexpected->data.get() + in.received, data, h.fragment);
      in.unexpected->received += h.fragment;
    }
    in.received += h.fragment;
    // The slot is free as soon as it is copied: the sender refills it while
    // this rank copies the next one.
    p.in->tail.publish(++p.in_tail);
    moved = true;
    if (h.flags & kLast) {
      if (Request* r = in.request) {
        r->bytes = std::min(in.length, r->capacity);
        finish(r, in.length > r->capacity ? OpState::Truncated : OpState::Done);
      } else {
        in.unexpected->complete = true;
      }
      in = Incoming{};
    }
  }
  return moved;
}

bool ShmChannel::progress() {
  if (abandoned_) return false;
  bool moved = false;
  for (int q = 0; q < size(); ++q) {
    if (q == rank_) continue;
    Peer& p = peers_[static_cast<std::size_t>(q)];
    if (p.dead) continue;
    if (p.sends.head) moved |= push_sends(p);
    moved |= drain(p);
  }
  if (++progress_calls_ % kCallsPerClockRead == 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_peer_check_ >= kPeerCheckInterval) {
      last_peer_check_ = now;
      check_peers();
    }
  }
  return moved;
}

void ShmChannel::check_peers() {
  // After the first death every wait ends anyway (peer_failed()); the
  // runtime then abandons this channel.
  if (failed_peer_ >= 0) return;
  if (const int i = watch_.exited(); i >= 0) fail_peer(i, watch_.describe_exit(i));
}

void ShmChannel::fail_peer(int peer, const std::string& why) {
  Peer& p = peers_[static_cast<std::size_t>(peer)];
  // What it published before dying is whole: deliver it first, so that a
  // peer that finished its part and exited fails nothing.
  while (drain(p)) {
  }
  p.dead = true;
  for (Queue* q : {&p.sends, &p.receives}) {
    while (Request* r = q->head) {
      q->remove(r, nullptr);
      finish(r, OpState::Failed);
    }
  }
  if (p.incoming.request) finish(p.incoming.request, OpState::Failed);
  if (p.incoming.unexpected) p.unexpected.pop_back();  // the partial one is the newest
  p.incoming = Incoming{};
  failed_peer_ = peer;
  failure_reason_ = "shared memory: local rank " + std::to_string(peer) + " (" + why + ")";
}

void ShmChannel::abandon() {
  if (abandoned_) return;
  abandoned_ = true;
  for (auto& r : requests_)
    if (r->in_use && r->state == OpState::Pending) finish(r.get(), OpState::Failed);
  for (Peer& p : peers_) {
    p.sends = Queue{};
    p.receives = Queue{};
    p.unexpected.clear();
    p.incoming = Incoming{};
  }
  if (failure_reason_.empty()) failure_reason_ = "shared-memory channel abandoned";
  // An abandoned channel watches nobody. Its pidfds go now, not with the
  // channel (kept for a Shrink's epoch to take its rings over): while a
  // pidfd of the dead peer stayed open, every survivor's pidfd_open for
  // the next epoch took 5-10 ms (measured at 16 ranks on one node).
  watch_ = PeerWatch(std::vector<pid_t>{});
}

}  // namespace ringmend::transport
