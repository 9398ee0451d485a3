#include "coll/wire_header.hpp"

#include <gtest/gtest.h>

using namespace ringmend;
using namespace ringmend::coll;

namespace {
WireHeader allreduce(std::uint64_t seq, std::uint64_t count, DataType t, ReduceOp op) {
  WireHeader h{};
  h.kind = CollectiveKind::Allreduce;
  h.seq = seq;
  h.count = count;
  h.type = t;
  h.op = op;
  return h;
}
}  // namespace

TEST(WireHeader, EqualCallsMatch) {
  auto h = allreduce(3, 10, DataType::Float32, ReduceOp::Sum);
  EXPECT_EQ(describe_mismatch(h, h, 1), "");
}

TEST(WireHeader, EachDifferenceIsNamed) {
  auto mine = allreduce(3, 10, DataType::Float32, ReduceOp::Sum);
  EXPECT_NE(describe_mismatch(mine, allreduce(3, 11, DataType::Float32, ReduceOp::Sum), 1).find("count 11"),
            std::string::npos);
  EXPECT_NE(describe_mismatch(mine, allreduce(3, 10, DataType::Int64, ReduceOp::Sum), 1).find("int64"),
            std::string::npos);
  EXPECT_NE(describe_mismatch(mine, allreduce(3, 10, DataType::Float32, ReduceOp::Max), 1).find("max"),
            std::string::npos);
  EXPECT_NE(describe_mismatch(mine, allreduce(4, 10, DataType::Float32, ReduceOp::Sum), 2).find("#4"),
            std::string::npos);
  WireHeader corrupt = mine;
  corrupt.magic = 0;
  EXPECT_NE(describe_mismatch(mine, corrupt, 1).find("corrupt"), std::string::npos);
}
