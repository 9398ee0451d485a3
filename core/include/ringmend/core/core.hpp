// core/ — the bottom layer: the vocabulary every other folder shares.
//
// What this folder offers (nothing in it includes anything above it):
//   * types.hpp: DataType, ReduceOp, size_of(), name_of(), data_type_of<T>;
//   * half.hpp: float16 and bfloat16 (storage) and their float32 conversions;
//   * error.hpp: Errc and Error, the one kind of failure callers see;
//   * options.hpp: Options (what a program asks for) and Settings (every
//     setting resolved from code, then RINGMEND_* variables, then the one set
//     of defaults, validated in one place);
//   * sizes.hpp: Range/split() and align_up();
//   * log.hpp: the log (levels, one line per event with time, host, pid,
//     member and epoch; an application sink);
//   * outcome.hpp: the words a rank tells its launcher about how its run
//     ended (the Runtime writes them, ringmend-run's summary reads them);
//   * hash.hpp: FNV-1a, the one fingerprint of bytes processes compare.
// The public headers (runtime/include/ringmend/ringmend.hpp) re-export what
// applications need of it.
#pragma once

#include "ringmend/core/error.hpp"
#include "ringmend/core/half.hpp"
#include "ringmend/core/hash.hpp"
#include "ringmend/core/log.hpp"
#include "ringmend/core/options.hpp"
#include "ringmend/core/outcome.hpp"
#include "ringmend/core/sizes.hpp"
#include "ringmend/core/types.hpp"
