#include "transport/reduce_kernels.hpp"

#include <cstdint>

namespace ringmend::transport {
namespace {

template <class T>
void reduce_typed(void* dst, const void* src, std::size_t n, ReduceOp op) {
  auto* d = static_cast<T*>(dst);
  const auto* s = static_cast<const T*>(src);
  switch (op) {
    case ReduceOp::Sum: reduce_into<T, ReduceOp::Sum>(d, s, n); break;
    case ReduceOp::Prod: reduce_into<T, ReduceOp::Prod>(d, s, n); break;
    case ReduceOp::Min: reduce_into<T, ReduceOp::Min>(d, s, n); break;
    case ReduceOp::Max: reduce_into<T, ReduceOp::Max>(d, s, n); break;
  }
}

}  // namespace

void reduce(void* dst, const void* src, std::size_t n, DataType type, ReduceOp op) {
  switch (type) {
    case DataType::Float32: reduce_typed<float>(dst, src, n, op); break;
    case DataType::Float64: reduce_typed<double>(dst, src, n, op); break;
    case DataType::Int32: reduce_typed<std::int32_t>(dst, src, n, op); break;
    case DataType::Int64: reduce_typed<std::int64_t>(dst, src, n, op); break;
  }
}

}  // namespace ringmend::transport
