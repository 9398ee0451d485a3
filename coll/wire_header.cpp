#include "coll/wire_header.hpp"

#include "transport/progress.hpp"

namespace ringmend::coll {

const char* name_of(AlgorithmId id) {
  switch (id) {
    case AlgorithmId::None:
      return "none";
    case AlgorithmId::RingAllreduce:
      return "ring";
    case AlgorithmId::RecursiveDoubling:
      return "recursive-doubling";
    case AlgorithmId::ShmOneShot:
      return "shm-one-shot";
    case AlgorithmId::ShmPipelined:
      return "shm-pipelined";
    case AlgorithmId::ChainBroadcast:
      return "chain-broadcast";
    case AlgorithmId::RingAllgather:
      return "ring-allgather";
    case AlgorithmId::RingReduceScatter:
      return "ring-reduce-scatter";
    case AlgorithmId::PairwiseAlltoall:
      return "pairwise-alltoall";
  }
  return "unknown";
}

namespace {

WireHeader header(CollectiveKind kind, AlgorithmId algorithm, std::uint64_t seq, std::uint64_t count,
                  DataType type = {}, ReduceOp op = {}, std::int64_t root = -1) {
  WireHeader h{};
  h.kind = kind;
  h.type = type;
  h.op = op;
  h.algorithm = algorithm;
  h.seq = seq;
  h.count = count;
  h.root = root;
  return h;
}

}  // namespace

WireHeader header_of(const AllreduceArgs& a, AlgorithmId algorithm) {
  return header(CollectiveKind::Allreduce, algorithm, a.seq, a.count, a.type, a.op);
}

WireHeader header_of(const BroadcastArgs& a, AlgorithmId algorithm) {
  return header(CollectiveKind::Broadcast, algorithm, a.seq, a.bytes, {}, {}, a.root);
}

WireHeader header_of(const AllgatherArgs& a, AlgorithmId algorithm) {
  return header(CollectiveKind::Allgather, algorithm, a.seq, a.count, a.type);
}

WireHeader header_of(const ReduceScatterArgs& a, AlgorithmId algorithm) {
  return header(CollectiveKind::ReduceScatter, algorithm, a.seq, a.count, a.type, a.op);
}

WireHeader header_of_uneven(const AllgatherArgs& a, AlgorithmId algorithm) {
  return header(CollectiveKind::AllgatherV, algorithm, a.seq, a.count, a.type);
}

WireHeader header_of(const AlltoallArgs& a, AlgorithmId algorithm, std::size_t count) {
  return header(CollectiveKind::Alltoall, algorithm, a.seq, count, a.type);
}

std::string describe_mismatch(const WireHeader& mine, const WireHeader& theirs, int peer) {
  // The common case, on every call of the latency path: no text built.
  if (theirs.magic == WireHeader::kMagic && theirs.seq == mine.seq && theirs.kind == mine.kind &&
      theirs.count == mine.count && theirs.type == mine.type && theirs.op == mine.op &&
      theirs.root == mine.root && theirs.algorithm == mine.algorithm)
    return {};
  const std::string who = "rank " + std::to_string(peer);
  if (theirs.magic != WireHeader::kMagic) return who + " sent a corrupt collective header";
  if (theirs.seq != mine.seq || theirs.kind != mine.kind)
    return who + " is in collective #" + std::to_string(theirs.seq) + " (" + name_of(theirs.kind) +
           ") while this rank is in #" + std::to_string(mine.seq) + " (" + name_of(mine.kind) +
           "): ranks called different collectives";
  if (theirs.count != mine.count)
    return who + " passed count " + std::to_string(theirs.count) + ", this rank " +
           std::to_string(mine.count) + ": counts must match on every rank";
  if (theirs.type != mine.type)
    return who + " passed type " + std::string(name_of(theirs.type)) + ", this rank " +
           std::string(name_of(mine.type)) + ": types must match on every rank";
  if (theirs.op != mine.op)
    return who + " passed op " + std::string(name_of(theirs.op)) + ", this rank " +
           std::string(name_of(mine.op)) + ": operations must match on every rank";
  if (theirs.root != mine.root)
    return who + " passed root " + std::to_string(theirs.root) + ", this rank " + std::to_string(mine.root) +
           ": roots must match on every rank";
  if (theirs.algorithm != mine.algorithm)
    return who + " chose the " + name_of(theirs.algorithm) + " algorithm for the same call, this rank " +
           name_of(mine.algorithm) + ": RINGMEND_* settings differ across ranks";
  return {};
}

void check_header(const WireHeader& mine, const WireHeader& theirs, bool complete, std::size_t got,
                  int peer) {
  if (!complete || got != sizeof theirs)
    throw transport::Mismatch("rank " + std::to_string(peer) + " sent a collective header of the wrong size");
  if (std::string why = describe_mismatch(mine, theirs, peer); !why.empty()) throw transport::Mismatch(why);
}

}  // namespace ringmend::coll
