#include "coll/reduce_kernels.hpp"

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ringmend/core/half.hpp"

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

// ---- float16 and bfloat16: blocks widened to float32, combined there and
// rounded once, so that a many-source sum is accumulated in float32.

constexpr std::size_t kHalfBlock = 1024;  // elements: two 4 KiB float blocks on the stack

#if defined(__x86_64__)
// F16C converts 8 binary16 values per instruction; the portable loops in
// half.hpp are the reference and the fallback. Both round to nearest even.
__attribute__((target("avx,f16c"))) void widen_f16c(float* d, const std::uint16_t* s, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  for (; i < n; ++i) d[i] = to_float(float16{s[i]});
}
__attribute__((target("avx,f16c"))) void narrow_f16c(std::uint16_t* d, const float* s, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) d[i] = to_float16(s[i]).bits;
}
const bool kHaveF16c = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
#endif

void widen(float* d, const void* src, std::size_t n, DataType type) {
  const auto* s = static_cast<const std::uint16_t*>(src);
  if (type == DataType::BFloat16) {
    for (std::size_t i = 0; i < n; ++i) d[i] = to_float(bfloat16{s[i]});
    return;
  }
#if defined(__x86_64__)
  if (kHaveF16c) return widen_f16c(d, s, n);
#endif
  for (std::size_t i = 0; i < n; ++i) d[i] = to_float(float16{s[i]});
}

void narrow(void* dst, const float* s, std::size_t n, DataType type) {
  auto* d = static_cast<std::uint16_t*>(dst);
  if (type == DataType::BFloat16) {
    for (std::size_t i = 0; i < n; ++i) d[i] = to_bfloat16(s[i]).bits;
    return;
  }
#if defined(__x86_64__)
  if (kHaveF16c) return narrow_f16c(d, s, n);
#endif
  for (std::size_t i = 0; i < n; ++i) d[i] = to_float16(s[i]).bits;
}

void reduce_floats(float* dst, const float* src, std::size_t n, ReduceOp op) {
  reduce_typed<float>(dst, src, n, op);
}

void reduce_half(void* dst, const void* src, std::size_t n, DataType type, ReduceOp op) {
  float a[kHalfBlock], b[kHalfBlock];
  for (std::size_t start = 0; start < n; start += kHalfBlock) {
    const std::size_t m = std::min(kHalfBlock, n - start);
    widen(a, static_cast<std::uint16_t*>(dst) + start, m, type);
    widen(b, static_cast<const std::uint16_t*>(src) + start, m, type);
    reduce_floats(a, b, m, op);
    narrow(static_cast<std::uint16_t*>(dst) + start, a, m, type);
  }
}

void reduce_many_half(void* dst, const void* const* srcs, std::size_t nsrc, std::size_t n, DataType type,
                      ReduceOp op) {
  if (nsrc == 1) {
    if (dst != srcs[0])
      std::copy_n(static_cast<const std::uint16_t*>(srcs[0]), n, static_cast<std::uint16_t*>(dst));
    return;
  }
  float acc[kHalfBlock], next[kHalfBlock];
  for (std::size_t start = 0; start < n; start += kHalfBlock) {
    const std::size_t m = std::min(kHalfBlock, n - start);
    widen(acc, static_cast<const std::uint16_t*>(srcs[0]) + start, m, type);
    for (std::size_t i = 1; i < nsrc; ++i) {
      widen(next, static_cast<const std::uint16_t*>(srcs[i]) + start, m, type);
      reduce_floats(acc, next, m, op);
    }
    narrow(static_cast<std::uint16_t*>(dst) + start, acc, m, type);
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
    case DataType::Float16:
    case DataType::BFloat16:
      reduce_many_half(dst, srcs, nsrc, n, type, op);
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
    case DataType::Float16:
    case DataType::BFloat16:
      reduce_half(dst, src, n, type, op);
      break;
  }
}

}  // namespace ringmend::coll
