#include "ringmend/core/sizes.hpp"

#include <gtest/gtest.h>

using ringmend::split;

TEST(Partition, CoversEverythingExactlyOnceWithSizesWithinOne) {
  for (std::size_t n : {0u, 1u, 5u, 16u, 17u, 1000003u})
    for (std::size_t parts : {1u, 2u, 3u, 7u, 8u}) {
      std::size_t next = 0, lo = n, hi = 0;
      for (std::size_t i = 0; i < parts; ++i) {
        auto r = split(n, parts, i);
        ASSERT_EQ(r.offset, next);
        next += r.count;
        lo = std::min(lo, r.count);
        hi = std::max(hi, r.count);
      }
      EXPECT_EQ(next, n);
      EXPECT_LE(hi - lo, 1u);
    }
}

TEST(Partition, FirstRangesTakeTheRemainder) {
  EXPECT_EQ(split(10, 4, 0).count, 3u);
  EXPECT_EQ(split(10, 4, 1).count, 3u);
  EXPECT_EQ(split(10, 4, 2).count, 2u);
  EXPECT_EQ(split(10, 4, 3).offset, 8u);
}
