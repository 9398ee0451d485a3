#include "transport/wire_header.hpp"

namespace ringmend::transport {
namespace {

const char* kind_name(CollectiveKind k) {
  return k == CollectiveKind::Allreduce ? "allreduce" : k == CollectiveKind::Broadcast ? "broadcast" : "?";
}

}  // namespace

std::string describe_mismatch(const WireHeader& mine, const WireHeader& theirs, int peer) {
  // The common case, on every call of the latency path: no text built.
  if (theirs.magic == WireHeader::kMagic && theirs.seq == mine.seq && theirs.kind == mine.kind &&
      theirs.count == mine.count && theirs.type == mine.type && theirs.op == mine.op &&
      theirs.root == mine.root)
    return {};
  const std::string who = "rank " + std::to_string(peer);
  if (theirs.magic != WireHeader::kMagic) return who + " sent a corrupt collective header";
  if (theirs.seq != mine.seq || theirs.kind != mine.kind)
    return who + " is in collective #" + std::to_string(theirs.seq) + " (" + kind_name(theirs.kind) +
           ") while this rank is in #" + std::to_string(mine.seq) + " (" + kind_name(mine.kind) +
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
  return {};
}

}  // namespace ringmend::transport
