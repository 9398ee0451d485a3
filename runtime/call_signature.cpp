#include "runtime/call_signature.hpp"

#include <cstdint>

namespace ringmend {
namespace {

// shape: kind (bits 56-63), type + 1 (48-55, 0: none), operation + 1
// (40-47, 0: none), root + 1 (0-31, 0: none).
constexpr int kKindShift = 56, kTypeShift = 48, kOpShift = 40;

bool reduces(coll::CollectiveKind k) {
  return k == coll::CollectiveKind::Allreduce || k == coll::CollectiveKind::ReduceScatter;
}

}  // namespace

progress::CallSignature call_signature(coll::CollectiveKind kind, std::size_t count, DataType type,
                                       ReduceOp op, int root) {
  const bool broadcast = kind == coll::CollectiveKind::Broadcast;
  std::uint64_t shape = std::uint64_t{static_cast<std::uint8_t>(kind)} << kKindShift;
  if (!broadcast) shape |= (std::uint64_t{static_cast<std::uint8_t>(type)} + 1) << kTypeShift;
  if (reduces(kind)) shape |= (std::uint64_t{static_cast<std::uint8_t>(op)} + 1) << kOpShift;
  if (broadcast) shape |= static_cast<std::uint32_t>(root + 1);
  return {static_cast<std::uint64_t>(count), shape};
}

std::string describe(const progress::CallSignature& call) {
  const auto kind = static_cast<coll::CollectiveKind>(call.shape >> kKindShift);
  const auto type_code = static_cast<int>((call.shape >> kTypeShift) & 0xff);
  const auto op_code = static_cast<int>((call.shape >> kOpShift) & 0xff);
  const auto root = static_cast<std::int64_t>(call.shape & 0xffffffffULL) - 1;
  std::string text = std::string(coll::name_of(kind)) + " of " + std::to_string(call.count);
  if (kind == coll::CollectiveKind::Broadcast) return text + " bytes from rank " + std::to_string(root);
  if (type_code > 0) text += " " + std::string(name_of(static_cast<DataType>(type_code - 1)));
  if (kind == coll::CollectiveKind::Allgather || kind == coll::CollectiveKind::ReduceScatter)
    text += " per rank";
  if (kind == coll::CollectiveKind::AllgatherV) text += " in all";
  if (op_code > 0) text += " (" + std::string(name_of(static_cast<ReduceOp>(op_code - 1))) + ")";
  return text;
}

}  // namespace ringmend
