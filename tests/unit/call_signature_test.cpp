// The call a process is in, as its node mates compare it: calls that must
// meet have equal signatures, calls that cannot meet differ, and either
// reads back in words.
#include "runtime/call_signature.hpp"

#include <gtest/gtest.h>

namespace ringmend {
namespace {

using coll::CollectiveKind;

TEST(CallSignature, TheSameCallIsTheSameSignatureWhatADifferentOneChanges) {
  const auto allreduce =
      call_signature(CollectiveKind::Allreduce, 1000, DataType::Float32, ReduceOp::Sum, -1);
  EXPECT_TRUE(allreduce.known());
  EXPECT_EQ(allreduce, call_signature(CollectiveKind::Allreduce, 1000, DataType::Float32, ReduceOp::Sum, -1));
  EXPECT_NE(allreduce, call_signature(CollectiveKind::Allreduce, 1001, DataType::Float32, ReduceOp::Sum, -1));
  EXPECT_NE(allreduce, call_signature(CollectiveKind::Allreduce, 1000, DataType::Float64, ReduceOp::Sum, -1));
  EXPECT_NE(allreduce, call_signature(CollectiveKind::Allreduce, 1000, DataType::Float32, ReduceOp::Max, -1));
  EXPECT_NE(allreduce, call_signature(CollectiveKind::Allgather, 1000, DataType::Float32, ReduceOp::Sum, -1));
  // A barrier (an allreduce of one int64) against a broadcast.
  const auto barrier = call_signature(CollectiveKind::Allreduce, 1, DataType::Int64, ReduceOp::Sum, -1);
  EXPECT_NE(barrier, call_signature(CollectiveKind::Broadcast, 1, DataType::Int64, ReduceOp::Sum, 0));
  // A broadcast's root counts; its type and an allgather's operation do not
  // (nothing the ranks must agree on).
  const auto bcast = call_signature(CollectiveKind::Broadcast, 64, DataType::Int32, ReduceOp::Sum, 0);
  EXPECT_NE(bcast, call_signature(CollectiveKind::Broadcast, 64, DataType::Int32, ReduceOp::Sum, 1));
  EXPECT_EQ(bcast, call_signature(CollectiveKind::Broadcast, 64, DataType::Float64, ReduceOp::Max, 0));
  EXPECT_EQ(call_signature(CollectiveKind::Allgather, 8, DataType::Int32, ReduceOp::Sum, -1),
            call_signature(CollectiveKind::Allgather, 8, DataType::Int32, ReduceOp::Max, -1));
}

TEST(CallSignature, ReadsBackInWords) {
  EXPECT_EQ(describe(call_signature(CollectiveKind::Allreduce, 1, DataType::Int64, ReduceOp::Sum, -1)),
            "allreduce of 1 int64 (sum)");
  EXPECT_EQ(describe(call_signature(CollectiveKind::Broadcast, 64, DataType::Int32, ReduceOp::Sum, 2)),
            "broadcast of 64 bytes from rank 2");
  EXPECT_EQ(describe(call_signature(CollectiveKind::ReduceScatter, 16, DataType::Float32, ReduceOp::Max, -1)),
            "reduce_scatter of 16 float32 per rank (max)");
  EXPECT_EQ(describe(call_signature(CollectiveKind::Allgather, 16, DataType::BFloat16, ReduceOp::Sum, -1)),
            "allgather of 16 bfloat16 per rank");
}

}  // namespace
}  // namespace ringmend
