// FNV-1a against the published 64-bit test vectors (core/hash.hpp).
#include "ringmend/core/hash.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace ringmend {
namespace {

TEST(Fnv1a, MatchesThePublishedVectors) {
  EXPECT_EQ(fnv1a(""), 0xcbf29ce484222325ULL);  // the offset basis
  EXPECT_EQ(fnv1a("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a("foobar"), 0x85944171f73967e8ULL);
}

TEST(Fnv1a, PiecesHashAsTheWhole) {
  EXPECT_EQ(Fnv1a().add("foo").add("bar").value(), fnv1a("foobar"));
  const std::uint32_t ids[] = {3, 1, 2};
  Fnv1a one_by_one;
  for (std::uint32_t id : ids) one_by_one.add_value(id);
  EXPECT_EQ(one_by_one.value(), fnv1a(ids, sizeof ids));
  EXPECT_NE(fnv1a(ids, sizeof ids), Fnv1a().add_value(ids[1]).add_value(ids[0]).add_value(ids[2]).value());
}

}  // namespace
}  // namespace ringmend
