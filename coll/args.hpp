// What a collective call hands its algorithm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ringmend/core/types.hpp"

namespace ringmend::coll {

enum class CollectiveKind : std::uint8_t {
  Allreduce = 1,
  Broadcast = 2,
  Allgather = 3,
  ReduceScatter = 4,
  AllgatherV = 5,  // an allgather whose blocks differ in size
  Alltoall = 6,
};

inline const char* name_of(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::Allreduce:
      return "allreduce";
    case CollectiveKind::Broadcast:
      return "broadcast";
    case CollectiveKind::Allgather:
      return "allgather";
    case CollectiveKind::ReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::AllgatherV:
      return "allgatherv";
    case CollectiveKind::Alltoall:
      return "alltoall";
  }
  return "?";
}

// A call whose buffers are copies of GPU memory in host memory
// (gpu/host_staging.hpp): the input arrives in pieces, the result leaves in
// parts. An algorithm that reads its input in parts (Algorithm::
// reads_staged_input) names them in the order it will read them (prefetch)
// and waits for each before reading it; every algorithm hands each part of
// the result over once it is final (retain_part). For the others the runtime
// waits for the whole input before the algorithm starts.
class Staging {
 public:
  virtual ~Staging() = default;
  // Starts copying [offset, offset + bytes) of the input in, after the parts named before.
  virtual void prefetch(std::size_t offset, std::size_t bytes) = 0;
  // Returns once that part of the input is in host memory (prefetching it if needed).
  virtual void wait_input(std::size_t offset, std::size_t bytes) = 0;
  // That part of the result is final in host memory: it may be copied out.
  virtual void output_final(std::size_t offset, std::size_t bytes) = 0;
};

struct AllreduceArgs {
  const void* input;  // this rank's contribution (never written)
  void* output;       // the reduction of all contributions
  std::size_t count;  // elements, > 0
  DataType type;
  ReduceOp op;
  std::uint64_t seq;  // collective number, checked against the peers'
  // When set, the result is also written here (the runtime's retained copy
  // for survivors that miss the end of a call). Algorithms copy each part
  // when it is final and still in cache, overlapped with the communication,
  // rather than the whole message once at the end.
  void* retain = nullptr;
  // Asked by the runtime where the algorithm can finish together
  // (Algorithm::finishes_together): no rank returns before every rank has
  // finished, so no survivor can need a result retained for a catch-up.
  bool finish_together = false;
  // Set when input and output are copies of GPU buffers (see Staging).
  Staging* staging = nullptr;
  std::size_t bytes() const { return count * size_of(type); }
};

struct BroadcastArgs {
  void* buffer;       // root: the data; others: where it lands
  std::size_t bytes;  // > 0
  int root;           // channel rank of the root
  std::uint64_t seq;  // collective number, checked against the peers'
};

struct AllgatherArgs {
  const void* input;  // this rank's block (never written)
  void* output;       // one block per rank, in slot order
  std::size_t count;  // elements per block, > 0 (with `counts`: of all blocks together)
  DataType type;      // carried for the header check only: blocks move as bytes
  std::uint64_t seq;  // collective number, checked against the peers'
  // The block of channel rank r goes to output slot slots[r] (the ranks the
  // application sees can differ from the channel's, see membership::Epoch);
  // null: slot r.
  const int* slots = nullptr;
  // An uneven allgather (CollectiveKind::AllgatherV): slot s's block holds
  // counts[s] elements (0 allowed) and starts offsets[s] elements into the
  // output. Null: every block holds `count`, end to end.
  const std::size_t* counts = nullptr;
  const std::size_t* offsets = nullptr;
  std::size_t block_bytes() const { return count * size_of(type); }
  int slot_of(int rank) const { return slots ? slots[rank] : rank; }
  std::size_t bytes_of_slot(int slot) const { return counts ? counts[slot] * size_of(type) : block_bytes(); }
  std::size_t offset_of_slot(int slot) const {
    return (offsets ? offsets[slot] : static_cast<std::size_t>(slot) * count) * size_of(type);
  }
};

struct ReduceScatterArgs {
  const void* input;  // one block per slot (never written)
  void* output;       // this rank's block of the reduction (must not overlap the input)
  std::size_t count;  // elements per block, > 0
  DataType type;
  ReduceOp op;
  std::uint64_t seq;  // collective number, checked against the peers'
  // The block channel rank r receives is that of slot slots[r]; null: slot r.
  const int* slots = nullptr;
  // Room for (ranks - 1) blocks: the partial reductions in flight.
  void* work = nullptr;
  std::size_t block_bytes() const { return count * size_of(type); }
  int slot_of(int rank) const { return slots ? slots[rank] : rank; }
};

struct AlltoallArgs {
  const void* input;  // the blocks for every slot (never written)
  void* output;       // the blocks from every slot (must not overlap the input)
  DataType type;      // blocks move as bytes; the type sizes them
  std::uint64_t seq;  // collective number, checked against the peers'
  // Per slot, in elements: what this rank sends to it (send_counts, from
  // send_offsets of the input) and receives from it (recv_counts, at
  // recv_offsets of the output). What r sends to s is what s expects from
  // r: each pair checks it before any data moves.
  const std::size_t* send_counts = nullptr;
  const std::size_t* send_offsets = nullptr;
  const std::size_t* recv_counts = nullptr;
  const std::size_t* recv_offsets = nullptr;
  // As AllgatherArgs::slots.
  const int* slots = nullptr;
  int slot_of(int rank) const { return slots ? slots[rank] : rank; }
};

// One call, of any kind. Only the member of `kind` is meant to be read,
// and whoever makes a Call assigns that one whole: the others are left as
// default-initialised (zeroing all five cost a small call 6 % of its time).
struct Call {
  CollectiveKind kind = CollectiveKind::Allreduce;
  AllreduceArgs allreduce;           // kind == Allreduce
  BroadcastArgs broadcast;           // kind == Broadcast
  AllgatherArgs allgather;           // kind == Allgather (bytes(): this rank's block)
  ReduceScatterArgs reduce_scatter;  // kind == ReduceScatter (bytes(): this rank's block)
  AlltoallArgs alltoall;             // kind == Alltoall (bytes(): 0, the sizes are per pair)
  std::size_t bytes() const {
    switch (kind) {
      case CollectiveKind::Allreduce:
        return allreduce.bytes();
      case CollectiveKind::Broadcast:
        return broadcast.bytes;
      case CollectiveKind::Allgather:
        return allgather.block_bytes();
      case CollectiveKind::ReduceScatter:
        return reduce_scatter.block_bytes();
      case CollectiveKind::AllgatherV:
        return allgather.block_bytes();  // the whole output
      case CollectiveKind::Alltoall:
        return 0;
    }
    return 0;
  }
};

// [offset, offset + bytes) of the result is final: copied into args.retain,
// if set, and handed to the staging, if any.
inline void retain_part(const AllreduceArgs& args, std::size_t offset, std::size_t bytes) {
  if (args.retain)
    std::memcpy(static_cast<std::byte*>(args.retain) + offset,
                static_cast<const std::byte*>(args.output) + offset, bytes);
  if (args.staging) args.staging->output_final(offset, bytes);
}

// Waits until [offset, offset + bytes) of a staged input is in host memory.
inline void wait_input(const AllreduceArgs& args, std::size_t offset, std::size_t bytes) {
  if (args.staging) args.staging->wait_input(offset, bytes);
}

}  // namespace ringmend::coll
