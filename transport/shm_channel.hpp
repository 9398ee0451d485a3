// Channel over POSIX shared memory between the ranks of one node.
//
// One segment per communicator epoch holds, for every ordered pair of local
// ranks (i -> j), a single-producer/single-consumer ring of fixed-size slots.
// A message is cut into fragments of at most one slot's payload; the sender
// fills free slots while the receiver copies full ones out, so a large
// message streams through a ring much smaller than itself. A send is done
// once its last fragment is in the ring (the data are then buffered). A
// fragment that arrives for no posted receive goes to a heap "unexpected"
// buffer, so that the ring keeps moving and later messages can be matched.
//
// Lifecycle (the bench and the tests do this; MPI or fork shares name and pids):
//   auto layout = ShmChannelLayout::make(ranks, slot_bytes, slots);
//   rank 0: segment = ShmSegment::create(name, layout.total);
//   others: segment = *ShmSegment::attach(name, layout.total);
//   (or every rank: segment = ShmSegment::open_shared(name, layout.total))
//   barrier (every rank has mapped it); segment.unlink();  // nothing left in /dev/shm
//   ShmChannel ch(std::move(segment), layout, local_rank, pids);
// Peer failures are seen through the pids (PeerWatch): progress() notices an
// exited peer, first delivers what it had put in the rings, then fails what
// is left to or from it, and peer_failed() turns true.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "transport/channel.hpp"
#include "transport/peer_watch.hpp"
#include "transport/request_pool.hpp"
#include "transport/shm_node.hpp"
#include "transport/shm_segment.hpp"

namespace ringmend::transport {

// The two counters of one ring, each on its own cache-line pair: the
// producer advances head (slots filled), the consumer tail (slots emptied).
struct ShmRingControl {
  ShmCounter head;
  ShmCounter tail;
};

// Where everything lies in the segment. Counters first (each ring's head and
// tail on their own 128-byte line, as ShmCounter), then the slot arrays,
// page aligned. The diagonal (i -> i) has no ring.
struct ShmChannelLayout {
  // A small message shares one cache line with its header: one line for the
  // receiver to fetch.
  static constexpr std::size_t kSlotHeader = 32;
  // Slots start half-way into a page. Application buffers are mostly page
  // aligned (or 16 bytes past), and a copy whose target lies a little above
  // its source modulo 4 KiB stalls on false store-to-load dependencies
  // ("4K aliasing"): such copies measured 20-30 % slower.
  static constexpr std::size_t kSlotPhase = 2048;

  int ranks = 0;
  int slots = 0;
  std::size_t slot_bytes = 0;   // payload per slot
  std::size_t slot_stride = 0;  // whole pages, so every payload has the same phase
  std::size_t slot_offset = 0;  // of the first slot's header in its ring
  std::size_t control_offset = 0, ring_offset = 0, ring_bytes = 0, total = 0;

  // Slot size and count: Settings::shm_p2p_slot_bytes and shm_p2p_slots
  // (core/options.hpp) give the defaults everyone uses.
  static ShmChannelLayout make(int ranks, std::size_t slot_bytes, std::size_t slots);

  // Index of the ring from -> to (from != to), 0 .. ranks*(ranks-1)-1.
  std::size_t ring_index(int from, int to) const;
};

class ShmChannel final : public Channel {
 public:
  // `rank` is this process's local rank (0 .. layout.ranks-1); `pids[r]` the
  // process of local rank r, watched for exits. Every rank constructs its
  // channel on the same zeroed segment (a new segment is zeroed).
  ShmChannel(ShmSegment segment, ShmChannelLayout layout, int rank, std::vector<pid_t> pids);
  // The rings of `previous` (a channel of the node's last epoch) for the
  // ranks that remain of it, after a Shrink: `previous_rank[r]` is local
  // rank r's rank in `previous`. No new segment and no new pages: a pair
  // that talked before keeps its rings, emptied (each side zeroes the
  // counters it owns; the epoch's agreement orders that before any use).
  // Only for a membership whose every member has left `previous`'s
  // collectives (ULFM's shrink guarantees it): nobody may touch the old
  // rings again.
  static std::unique_ptr<ShmChannel> for_survivors(const ShmChannel& previous, std::vector<int> previous_rank,
                                                   int rank, std::vector<pid_t> pids);
  ~ShmChannel() override;
  ShmChannel(const ShmChannel&) = delete;
  ShmChannel& operator=(const ShmChannel&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(slot_.size()); }
  const ShmChannelLayout& layout() const { return layout_; }

  // Reserves and maps the two rings shared with `peer` (ShmSegment::reserve),
  // which the first message to or from it otherwise does: call it at set-up
  // for the peers known to be used, so that a full /dev/shm is a set-up
  // error. Throws std::runtime_error saying why.
  void prepare(int peer);

  Op send(int peer, std::uint32_t tag, std::span<const Piece> pieces) override;
  Op recv(int peer, std::uint32_t tag, std::span<const Piece> pieces) override;
  // Truncated: the message was longer than the receive; `bytes` then gets
  // how much of it was stored (the receive's capacity).
  OpState test(Op op, std::size_t* bytes) override;
  bool progress() override;
  // Reports what progress() found (waits drive it through wait_for); stays
  // true after the first death, whose reason failure_reason() gives.
  bool peer_failed() const override { return failed_peer_ >= 0; }
  void abandon() override;
  std::string failure_reason() const override { return failure_reason_; }

 private:
  struct Request;  // one outstanding operation (pooled)
  struct Unexpected {
    std::uint32_t tag = 0;
    std::size_t length = 0;
    std::unique_ptr<std::byte[]> data;  // the whole message, filled as it arrives
    std::size_t received = 0;
    bool complete = false;
  };
  // A message being drained from a peer's ring into a receive or a buffer.
  struct Incoming {
    Request* request = nullptr;
    Unexpected* unexpected = nullptr;
    std::size_t length = 0, received = 0;
  };
  // Queues threaded through Request::next: no allocation per message.
  struct Queue {
    Request* head = nullptr;
    Request* tail = nullptr;
    void push(Request* r);
    void remove(Request* r, Request* prev);
  };
  struct Peer {
    // ring this rank -> peer (producer side)
    ShmRingControl* out = nullptr;
    std::byte* out_slots = nullptr;
    std::uint64_t out_head = 0, out_seen_tail = 0;
    Queue sends;
    // ring peer -> this rank (consumer side)
    ShmRingControl* in = nullptr;
    std::byte* in_slots = nullptr;
    std::uint64_t in_tail = 0, in_seen_head = 0;
    Queue receives;                    // posted, not yet matched
    std::list<Unexpected> unexpected;  // arrived, not yet received (oldest first)
    Incoming incoming;
    bool dead = false;
    bool mapped = false;  // the two rings' pages reserved (prepare, or on first use)
  };

  Request* acquire(std::uint32_t tag, std::span<const Piece> pieces);
  Peer& peer_at(int peer);
  bool push_sends(Peer& p);
  bool drain(Peer& p);
  void start_message(Peer& p, std::uint32_t tag, std::size_t length);
  void finish(Request* r, OpState state);
  void check_peers();
  void fail_peer(int peer, const std::string& why);

  ShmChannel(std::shared_ptr<const ShmSegment> segment, ShmChannelLayout layout, std::vector<int> slot,
             int rank, std::vector<pid_t> pids);

  std::shared_ptr<const ShmSegment> segment_;  // shared with the epochs that reuse its rings
  ShmChannelLayout layout_;                    // of the segment (its ranks: the first epoch's)
  std::vector<int> slot_;                      // by local rank: its rank in the segment's layout
  int rank_;
  PeerWatch watch_;
  std::vector<Peer> peers_;  // by local rank; this rank's entry is unused
  RequestPool<Request> requests_;
  unsigned progress_calls_ = 0;
  std::chrono::steady_clock::time_point last_peer_check_{};
  bool abandoned_ = false;
  int failed_peer_ = -1;
  std::string failure_reason_;
};

}  // namespace ringmend::transport
