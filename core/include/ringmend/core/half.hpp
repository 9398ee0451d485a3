// The two 16-bit floating-point element types, as storage: IEEE 754 binary16
// (`float16`, CUDA's __half, torch.float16) and bfloat16 (the upper half of
// a float32, torch.bfloat16). Arithmetic on them goes through float32:
// to_float() widens exactly, from_float() rounds to nearest, ties to even,
// keeps infinities and NaNs (a NaN stays a NaN), and overflows to infinity.
//
// These are plain portable bit manipulations; the reduction kernels
// (coll/reduce_kernels.cpp) convert whole blocks with the CPU's conversion
// instructions where it has them, and must agree with these bit for bit.
#pragma once

#include <bit>
#include <cstdint>

namespace ringmend {

struct float16 {
  std::uint16_t bits = 0;
  friend constexpr bool operator==(float16, float16) = default;
};
struct bfloat16 {
  std::uint16_t bits = 0;
  friend constexpr bool operator==(bfloat16, bfloat16) = default;
};

constexpr float to_float(bfloat16 h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h.bits) << 16);
}

constexpr bfloat16 to_bfloat16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  // A NaN keeps its sign and becomes quiet (rounding could carry it into
  // an infinity).
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<std::uint16_t>((u >> 16) | 0x0040u)};
  const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<std::uint16_t>((u + rounding) >> 16)};
}

constexpr float to_float(float16 h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  const std::uint32_t exponent = (h.bits >> 10) & 0x1fu;
  std::uint32_t mantissa = h.bits & 0x3ffu;
  if (exponent == 0x1f)  // infinity or NaN
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // A subnormal binary16 is a normal float32: shift the leading one out.
  int e = 113;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --e;
  }
  return std::bit_cast<float>(sign | (static_cast<std::uint32_t>(e) << 23) | ((mantissa & 0x3ffu) << 13));
}

constexpr float16 to_float16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u)  // NaN: quiet, keeps the top mantissa bits
    return {static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu))};
  if (magnitude >= 0x477ff000u)  // rounds to 65520 or more: infinity
    return {static_cast<std::uint16_t>(sign | 0x7c00u)};
  if (magnitude >= 0x38800000u) {  // a normal binary16 (2^-14 and up)
    const std::uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return {static_cast<std::uint16_t>(sign | ((rounded - 0x38000000u) >> 13))};
  }
  if (magnitude < 0x33000000u) return {sign};  // below half the least subnormal: zero
  // A subnormal binary16: the mantissa with its implicit one, shifted right
  // by how far the exponent lies below 2^-14, rounded to nearest even.
  const std::uint32_t exponent = magnitude >> 23;
  const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126u - exponent;  // 14..24
  const std::uint32_t half = 1u << (shift - 1);
  const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
  std::uint32_t value = mantissa >> shift;
  if (rest > half || (rest == half && (value & 1u))) ++value;
  return {static_cast<std::uint16_t>(sign | value)};
}

}  // namespace ringmend
