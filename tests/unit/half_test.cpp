// float16 and bfloat16: the conversions in half.hpp against values worked out
// by hand and against each other over every bit pattern, and the reduction
// kernels (which convert with the CPU's instructions where it has them)
// against the portable conversions.
#include "ringmend/core/half.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "coll/reduce_kernels.hpp"

using namespace ringmend;

namespace {

bool is_nan16(std::uint16_t b) { return (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) != 0; }

// The nearest binary16 to f, ties to even, found by search over every
// finite value: slow, obviously right.
std::uint16_t nearest_float16(float f) {
  if (std::isnan(f)) return 0x7e00;
  const double x = f;
  const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (a >= 65520.0) return sign | 0x7c00;
  std::uint16_t best = 0;
  double best_diff = std::numeric_limits<double>::infinity();
  for (std::uint16_t b = 0; b < 0x7c00; ++b) {
    const double v = to_float(float16{b});
    const double d = std::fabs(v - a);
    if (d < best_diff || (d == best_diff && (b & 1) == 0)) {
      best_diff = d;
      best = b;
    }
  }
  return sign | best;
}

}  // namespace

TEST(Half, KnownFloat16Values) {
  EXPECT_EQ(to_float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(to_float16(-2.0f).bits, 0xc000);
  EXPECT_EQ(to_float16(65504.0f).bits, 0x7bff);  // the largest finite
  EXPECT_EQ(to_float16(65519.0f).bits, 0x7bff);
  EXPECT_EQ(to_float16(65520.0f).bits, 0x7c00);               // the midpoint rounds to even: infinity
  EXPECT_EQ(to_float16(std::ldexp(1.0f, -24)).bits, 0x0001);  // the least subnormal
  EXPECT_EQ(to_float16(std::ldexp(1.0f, -25)).bits, 0x0000);  // its half: a tie, to even
  EXPECT_EQ(to_float16(std::ldexp(1.5f, -25)).bits, 0x0001);
  EXPECT_EQ(to_float16(-0.0f).bits, 0x8000);
  EXPECT_EQ(to_float16(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_TRUE(is_nan16(to_float16(std::numeric_limits<float>::quiet_NaN()).bits));
  EXPECT_EQ(to_float(float16{0x3555}), 0.333251953125f);
  EXPECT_EQ(to_float(float16{0x03ff}), std::ldexp(1023.0f, -24));  // the largest subnormal
}

TEST(Half, KnownBFloat16Values) {
  EXPECT_EQ(to_bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(to_bfloat16(-3.0f).bits, 0xc040);
  EXPECT_EQ(to_float(bfloat16{0x4049}), 3.140625f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to even (1).
  EXPECT_EQ(to_bfloat16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);
  EXPECT_EQ(to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);
  EXPECT_EQ(to_bfloat16(std::numeric_limits<float>::max()).bits, 0x7f80);         // rounds up to infinity
  const std::uint16_t nan = to_bfloat16(std::bit_cast<float>(0x7f800001u)).bits;  // a NaN that rounding would
  EXPECT_EQ(nan & 0x7f80, 0x7f80);                                                // carry into infinity
  EXPECT_NE(nan & 0x7f, 0);
}

TEST(Half, EveryFloat16WidensAndNarrowsBackToItself) {
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    const float f = to_float(float16{h});
    if (is_nan16(h)) {
      EXPECT_TRUE(std::isnan(f));
      EXPECT_TRUE(is_nan16(to_float16(f).bits));
      continue;
    }
    ASSERT_EQ(to_float16(f).bits, h) << "bits " << b;
  }
}

TEST(Half, EveryBFloat16WidensAndNarrowsBackToItself) {
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    const float f = to_float(bfloat16{h});
    if (std::isnan(f)) continue;
    ASSERT_EQ(to_bfloat16(f).bits, h) << "bits " << b;
  }
}

TEST(Half, Float16RoundsToTheNearestValueTiesToEven) {
  std::mt19937 rng(7);
  // Floats around the binary16 range, with the midpoints between
  // neighbours (the hard cases) mixed in.
  for (int i = 0; i < 3000; ++i) {
    float f;
    if (i % 3 == 0) {
      const auto b = static_cast<std::uint16_t>(rng() % 0x7bff);
      f = (to_float(float16{b}) + to_float(float16{static_cast<std::uint16_t>(b + 1)})) / 2;
    } else {
      f = std::ldexp(std::uniform_real_distribution<float>(1, 2)(rng), static_cast<int>(rng() % 46) - 30);
    }
    if (rng() & 1) f = -f;
    ASSERT_EQ(to_float16(f).bits, nearest_float16(f)) << f;
  }
}

TEST(Half, KernelsAgreeWithThePortableConversions) {
  // The kernels widen and narrow whole blocks (with F16C where the CPU has
  // it); their results must be those of half.hpp, bit for bit.
  std::mt19937 rng(11);
  const std::size_t n = 3000;  // more than one block, not a multiple of 8
  for (const DataType type : {DataType::Float16, DataType::BFloat16}) {
    for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max}) {
      std::vector<std::uint16_t> a(n), b(n), c(n);
      std::vector<float> fa(n), fb(n), fc(n);
      for (std::size_t i = 0; i < n; ++i) {
        const float x = std::uniform_real_distribution<float>(-300, 300)(rng);
        const float y = std::uniform_real_distribution<float>(-300, 300)(rng);
        const float z = std::uniform_real_distribution<float>(-3, 3)(rng);
        if (type == DataType::Float16) {
          a[i] = to_float16(x).bits, b[i] = to_float16(y).bits, c[i] = to_float16(z).bits;
          fa[i] = to_float(float16{a[i]}), fb[i] = to_float(float16{b[i]}), fc[i] = to_float(float16{c[i]});
        } else {
          a[i] = to_bfloat16(x).bits, b[i] = to_bfloat16(y).bits, c[i] = to_bfloat16(z).bits;
          fa[i] = to_float(bfloat16{a[i]}), fb[i] = to_float(bfloat16{b[i]}),
          fc[i] = to_float(bfloat16{c[i]});
        }
      }
      const auto combine = [op](float x, float y) {
        switch (op) {
          case ReduceOp::Sum:
            return x + y;
          case ReduceOp::Prod:
            return x * y;
          case ReduceOp::Min:
            return y < x ? y : x;
          case ReduceOp::Max:
            break;
        }
        return y > x ? y : x;
      };
      const auto round = [type](float f) {
        return type == DataType::Float16 ? to_float16(f).bits : to_bfloat16(f).bits;
      };
      // Two sources: one rounding of the float32 result.
      std::vector<std::uint16_t> dst = a;
      coll::reduce(dst.data(), b.data(), n, type, op);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(dst[i], round(combine(fa[i], fb[i]))) << name_of(type) << " " << name_of(op) << " " << i;
      // Three sources: accumulated in float32, rounded once at the end.
      const void* srcs[] = {a.data(), b.data(), c.data()};
      std::vector<std::uint16_t> many(n);
      coll::reduce_many(many.data(), srcs, 3, n, type, op);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(many[i], round(combine(combine(fa[i], fb[i]), fc[i])))
            << name_of(type) << " " << name_of(op) << " " << i;
    }
  }
}

TEST(Half, ManySmallFloat16AddUpInFloat32) {
  // 2048 + 1 + 1 in binary16 one step at a time stays 2048 (its spacing
  // there is 2); accumulated in float32 and rounded once it is 2050.
  const std::uint16_t big = to_float16(2048.0f).bits, one = to_float16(1.0f).bits;
  const std::vector<std::uint16_t> a{big}, b{one}, c{one};
  const void* srcs[] = {a.data(), b.data(), c.data()};
  std::uint16_t out = 0;
  coll::reduce_many(&out, srcs, 3, 1, DataType::Float16, ReduceOp::Sum);
  EXPECT_EQ(to_float(float16{out}), 2050.0f);
}
