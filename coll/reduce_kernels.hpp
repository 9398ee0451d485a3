// Element-wise reduction kernels: dst[i] = dst[i] (op) src[i].
//
// Plain loops over __restrict pointers so the compiler vectorises them for
// every type and operation (this header is compiled with -O3 where it is used).
#pragma once

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "ringmend/core/types.hpp"

namespace ringmend::coll {

// Integer sums and products wrap around (two's complement) instead of
// overflowing into undefined behaviour, as MPI implementations do in practice.
template <class T>
struct ArithmeticOfT {
  using type = T;
};
template <class T>
requires std::is_integral_v<T>
struct ArithmeticOfT<T> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using ArithmeticOf = typename ArithmeticOfT<T>::type;

template <class T, ReduceOp Op>
inline void reduce_into(T* __restrict dst, const T* __restrict src, std::size_t n) {
  using A = ArithmeticOf<T>;
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (Op == ReduceOp::Sum)
      dst[i] = static_cast<T>(static_cast<A>(dst[i]) + static_cast<A>(src[i]));
    else if constexpr (Op == ReduceOp::Prod)
      dst[i] = static_cast<T>(static_cast<A>(dst[i]) * static_cast<A>(src[i]));
    else if constexpr (Op == ReduceOp::Min)
      dst[i] = src[i] < dst[i] ? src[i] : dst[i];
    else
      dst[i] = src[i] > dst[i] ? src[i] : dst[i];
  }
}

// dst[i] = a[i] (op) b[i]: the first step of a many-source reduction, so
// that the destination is written once instead of copied then updated.
template <class T, ReduceOp Op>
inline void combine_into(T* __restrict dst, const T* __restrict a, const T* __restrict b, std::size_t n) {
  using A = ArithmeticOf<T>;
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (Op == ReduceOp::Sum)
      dst[i] = static_cast<T>(static_cast<A>(a[i]) + static_cast<A>(b[i]));
    else if constexpr (Op == ReduceOp::Prod)
      dst[i] = static_cast<T>(static_cast<A>(a[i]) * static_cast<A>(b[i]));
    else if constexpr (Op == ReduceOp::Min)
      dst[i] = b[i] < a[i] ? b[i] : a[i];
    else
      dst[i] = b[i] > a[i] ? b[i] : a[i];
  }
}

// Type-erased entry point: `n` elements of `type`.
void reduce(void* dst, const void* src, std::size_t n, DataType type, ReduceOp op);

// dst = srcs[0] (op) srcs[1] (op) ... (op) srcs[nsrc-1], combined in that
// order (so every rank computing it gets bit-identical floats), block by
// block so that the destination stays in L1 while each source is read once.
// dst may be srcs[0]; no other source may overlap dst.
void reduce_many(void* dst, const void* const* srcs, std::size_t nsrc, std::size_t n, DataType type,
                 ReduceOp op);

}  // namespace ringmend::coll
