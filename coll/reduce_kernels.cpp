#include "coll/reduce_kernels.hpp"

#include <algorithm>
#include <cstdint>

namespace ringmend::coll {
namespace {

template <class T>
void reduce_typed(void* dst, const void* src, std::size_t n, ReduceOp op) {
  auto* d = static_cast<T*>(dst);
  const auto* s = static_cast<const T*>(src);
  switch (op) {
    case ReduceOp::Sum:
      reduce_into<T, ReduceOp::Sum>(d, s, n);
      break;
    case ReduceOp::Prod:
      reduce_into<T, ReduceOp::Prod>(d, s, n);
      break;
    case ReduceOp::Min:
      reduce_into<T, ReduceOp::Min>(d, s, n);
      break;
    case ReduceOp::Max:
      reduce_into<T, ReduceOp::Max>(d, s, n);
      break;
  }
}

// Elements per block of reduce_many: 8 KiB keeps the block and one source
// line stream comfortably in L1.
constexpr std::size_t kBlockBytes = 8192;

template <class T, ReduceOp Op>
void reduce_many_typed(void* dst, const void* const* srcs, std::size_t nsrc, std::size_t n) {
  auto* d = static_cast<T*>(dst);
  const std::size_t block = kBlockBytes / sizeof(T);
  for (std::size_t start = 0; start < n; start += block) {
    const std::size_t m = std::min(block, n - start);
    const auto* s0 = static_cast<const T*>(srcs[0]) + start;
    if (nsrc == 1) {
      if (d + start != s0) std::copy(s0, s0 + m, d + start);
      continue;
    }
    const auto* s1 = static_cast<const T*>(srcs[1]) + start;
    if (d + start == s0)
      reduce_into<T, Op>(d + start, s1, m);
    else
      combine_into<T, Op>(d + start, s0, s1, m);
    for (std::size_t i = 2; i < nsrc; ++i)
      reduce_into<T, Op>(d + start, static_cast<const T*>(srcs[i]) + start, m);
  }
}

template <class T>
void reduce_many_op(void* dst, const void* const* srcs, std::size_t nsrc, std::size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      reduce_many_typed<T, ReduceOp::Sum>(dst, srcs, nsrc, n);
      break;
    case ReduceOp::Prod:
      reduce_many_typed<T, ReduceOp::Prod>(dst, srcs, nsrc, n);
      break;
    case ReduceOp::Min:
      reduce_many_typed<T, ReduceOp::Min>(dst, srcs, nsrc, n);
      break;
    case ReduceOp::Max:
      reduce_many_typed<T, ReduceOp::Max>(dst, srcs, nsrc, n);
      break;
  }
}

}  // namespace

void reduce_many(void* dst, const void* const* srcs, std::size_t nsrc, std::size_t n, DataType type,
                 ReduceOp op) {
  if (nsrc == 0 || n == 0) return;
  switch (type) {
    case DataType::Float32:
      reduce_many_op<float>(dst, srcs, nsrc, n, op);
      break;
    case DataType::Float64:
      reduce_many_op<double>(dst, srcs, nsrc, n, op);
      break;
    case DataType::Int32:
      reduce_many_op<std::int32_t>(dst, srcs, nsrc, n, op);
      break;
    case DataType::Int64:
      reduce_many_op<std::int64_t>(dst, srcs, nsrc, n, op);
      break;
  }
}

void reduce(void* dst, const void* src, std::size_t n, DataType type, ReduceOp op) {
  switch (type) {
    case DataType::Float32:
      reduce_typed<float>(dst, src, n, op);
      break;
    case DataType::Float64:
      reduce_typed<double>(dst, src, n, op);
      break;
    case DataType::Int32:
      reduce_typed<std::int32_t>(dst, src, n, op);
      break;
    case DataType::Int64:
      reduce_typed<std::int64_t>(dst, src, n, op);
      break;
  }
}

}  // namespace ringmend::coll
