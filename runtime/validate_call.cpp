// The checks every rank makes of its own arguments before a call: what it
// finds is raised on every rank (call_path.cpp, subgroup.cpp), never a
// hang. Built as text only when there is something to say: this runs on
// every call, also the 4-byte ones.
#include <string>

#include "runtime/communicator_impl.hpp"

namespace ringmend {
namespace {

// The checks of the calls whose sizes are per rank (allgatherv, alltoall).
std::string validate_counted(const CollectiveCall& c, int rank, int size, const std::string& at) {
  if (!is_valid(c.type)) return at + "unsupported data type " + std::to_string(static_cast<int>(c.type));
  const bool alltoall = c.kind == coll::CollectiveKind::Alltoall;
  const auto ranks = static_cast<std::size_t>(size);
  if (c.counts.size() != ranks || (alltoall && c.recv_counts.size() != ranks))
    return at +
           (alltoall ? "send and receive counts have " + std::to_string(c.counts.size()) + " and " +
                           std::to_string(c.recv_counts.size())
                     : "the counts have " + std::to_string(c.counts.size())) +
           " entries; the group has " + std::to_string(size) + " ranks (one count per rank)";
  const std::size_t unit = size_of(c.type);
  const auto me = static_cast<std::size_t>(rank);
  const std::size_t in_bytes = (alltoall ? CollectiveCall::total_of(c.counts) : c.counts[me]) * unit;
  const std::size_t out_bytes = CollectiveCall::total_of(alltoall ? c.recv_counts : c.counts) * unit;
  if ((in_bytes > 0 && c.input == nullptr) || (out_bytes > 0 && c.output == nullptr))
    return at + "null buffer with " + std::to_string(in_bytes) + " bytes in and " +
           std::to_string(out_bytes) + " out";
  if ((in_bytes > 0 && is_gpu_pointer(c.input)) || (out_bytes > 0 && is_gpu_pointer(c.output)))
    return at + "a buffer is GPU memory; " + coll::name_of(c.kind) +
           " takes host memory (GPU buffers: allreduce)";
  if (alltoall) {
    if (c.counts[me] != c.recv_counts[me])
      return at + "this rank sends " + std::to_string(c.counts[me]) + " elements to itself and receives " +
             std::to_string(c.recv_counts[me]) + " from itself: both must be the same";
    if (overlaps(c.input, in_bytes, c.output, out_bytes))
      return at + "the output overlaps the input (a re-run after a failure reads the input again)";
    return {};
  }
  // In place: the input is this rank's place in the output, else apart.
  const auto* own = static_cast<const std::byte*>(c.output) + offsets_of(c.counts)[me] * unit;
  if (c.input != own && overlaps(c.input, in_bytes, c.output, out_bytes))
    return at + "the input lies inside the output but not at this rank's block (in place: pass that block)";
  return {};
}

}  // namespace

std::string validate_call(const CollectiveCall& c, int rank, int size) {
  // Built only when needed: validation runs on every call, also the 4-byte ones.
  struct At {
    const CollectiveCall& c;
    int rank;
    operator std::string() const {
      return std::string(coll::name_of(c.kind)) + " on rank " + std::to_string(rank) + ": ";
    }
    std::string operator+(const std::string& rest) const { return std::string(*this) + rest; }
    std::string operator+(const char* rest) const { return std::string(*this) + rest; }
  } at{c, rank};
  if (c.kind == coll::CollectiveKind::Allreduce) {
    if (!is_valid(c.type)) return at + "unsupported data type " + std::to_string(static_cast<int>(c.type));
    if (!is_valid(c.op)) return at + "unsupported reduction " + std::to_string(static_cast<int>(c.op));
    if (c.count > 0 && (c.input == nullptr || c.output == nullptr))
      return at + "null buffer with count " + std::to_string(c.count);
    const auto* in = static_cast<const std::byte*>(c.input);
    const auto* out = static_cast<const std::byte*>(c.output);
    const std::size_t b = c.bytes();
    if (c.count > 0 && in != out && in < out + b && out < in + b)
      return at + "input and output overlap without being the same buffer (use the in-place call)";
    if (!c.placement_error.empty()) return at + c.placement_error;
  } else if (c.kind == coll::CollectiveKind::Allgather) {
    if (!is_valid(c.type)) return at + "unsupported data type " + std::to_string(static_cast<int>(c.type));
    if (c.count > 0 && (c.input == nullptr || c.output == nullptr))
      return at + "null buffer with count " + std::to_string(c.count);
    if (c.count > 0 && (is_gpu_pointer(c.input) || is_gpu_pointer(c.output)))
      return at + "a buffer is GPU memory; allgather takes host memory (GPU buffers: allreduce)";
    if (c.output_bytes < c.result_bytes(size))
      return at + "the output holds " + std::to_string(c.output_bytes) + " bytes; " + std::to_string(size) +
             " ranks x " + std::to_string(c.bytes()) + " bytes need " + std::to_string(c.result_bytes(size));
  } else if (c.kind == coll::CollectiveKind::AllgatherV || c.kind == coll::CollectiveKind::Alltoall) {
    return validate_counted(c, rank, size, at);
  } else if (c.kind == coll::CollectiveKind::ReduceScatter) {
    if (!is_valid(c.type)) return at + "unsupported data type " + std::to_string(static_cast<int>(c.type));
    if (!is_valid(c.op)) return at + "unsupported reduction " + std::to_string(static_cast<int>(c.op));
    if (c.count > 0 && (c.input == nullptr || c.output == nullptr))
      return at + "null buffer with count " + std::to_string(c.count);
    if (c.count > 0 && (is_gpu_pointer(c.input) || is_gpu_pointer(c.output)))
      return at + "a buffer is GPU memory; reduce_scatter takes host memory (GPU buffers: allreduce)";
    const auto* in = static_cast<const std::byte*>(c.input);
    const auto* out = static_cast<const std::byte*>(c.output);
    if (c.count > 0 && in < out + c.bytes() && out < in + c.bytes() * static_cast<std::size_t>(size))
      return at + "the output overlaps the input (a re-run after a failure reads the input again)";
  } else {
    if (c.root < 0 || c.root >= size)
      return at + "root " + std::to_string(c.root) + " is not a rank of this communicator (size " +
             std::to_string(size) + ")";
    if (c.count > 0 && c.output == nullptr)
      return at + "null buffer with " + std::to_string(c.count) + " bytes";
    if (c.count > 0 && is_gpu_pointer(c.output))
      return at + "the buffer is GPU memory; broadcast takes host memory (GPU buffers: allreduce)";
  }
  return {};
}

}  // namespace ringmend
