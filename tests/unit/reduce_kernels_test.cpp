#include "coll/reduce_kernels.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

using namespace ringmend;

namespace {

template <class T>
std::vector<T> run(ReduceOp op, std::vector<T> dst, const std::vector<T>& src) {
  coll::reduce(dst.data(), src.data(), dst.size(), data_type_of<T>, op);
  return dst;
}

}  // namespace

TEST(ReduceKernels, EveryOpOnFloats) {
  std::vector<float> a{1, -2, 3.5f, 0}, b{2, 5, -1, 0};
  EXPECT_EQ(run(ReduceOp::Sum, a, b), (std::vector<float>{3, 3, 2.5f, 0}));
  EXPECT_EQ(run(ReduceOp::Prod, a, b), (std::vector<float>{2, -10, -3.5f, 0}));
  EXPECT_EQ(run(ReduceOp::Min, a, b), (std::vector<float>{1, -2, -1, 0}));
  EXPECT_EQ(run(ReduceOp::Max, a, b), (std::vector<float>{2, 5, 3.5f, 0}));
}

TEST(ReduceKernels, EveryTypeSums) {
  EXPECT_EQ(run(ReduceOp::Sum, std::vector<double>{1e300, 1}, {1e300, 2}), (std::vector<double>{2e300, 3}));
  EXPECT_EQ(run(ReduceOp::Sum, std::vector<std::int32_t>{7, -7}, {-8, 8}),
            (std::vector<std::int32_t>{-1, 1}));
  EXPECT_EQ(run(ReduceOp::Max, std::vector<std::int64_t>{1LL << 40, -5}, {3, -6}),
            (std::vector<std::int64_t>{1LL << 40, -5}));
}

TEST(ReduceKernels, IntegerOverflowWrapsInsteadOfUndefinedBehaviour) {
  const auto max = std::numeric_limits<std::int32_t>::max();
  EXPECT_EQ(run(ReduceOp::Sum, std::vector<std::int32_t>{max}, {1})[0],
            std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(run(ReduceOp::Prod, std::vector<std::int64_t>{1LL << 62}, {4})[0], 0);
}

TEST(ReduceKernels, LongBuffersWithOddLengthsMatchScalarLoop) {
  for (std::size_t n : {1u, 3u, 15u, 16u, 17u, 1023u, 4099u}) {
    std::vector<double> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) a[i] = double(i) * 0.5, b[i] = double(n - i);
    auto got = run(ReduceOp::Min, a, b);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], std::min(a[i], b[i])) << n << " " << i;
  }
}
