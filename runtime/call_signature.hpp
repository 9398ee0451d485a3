// A collective call as exact numbers for the progress record
// (progress::CallSignature: node mates waiting in the same collective
// compare them), and back to words for the error that names both calls.
#pragma once

#include <cstddef>
#include <string>

#include "coll/args.hpp"
#include "ringmend/core/progress_record.hpp"
#include "ringmend/core/types.hpp"

namespace ringmend {

// Only what every rank must pass alike: the root of a broadcast, the
// operation of a reduction, the element type where there is one.
progress::CallSignature call_signature(coll::CollectiveKind kind, std::size_t count, DataType type,
                                       ReduceOp op, int root);

// "allreduce of 1 int64 (sum)", "broadcast of 64 bytes from rank 0", ...
std::string describe(const progress::CallSignature& call);

}  // namespace ringmend
