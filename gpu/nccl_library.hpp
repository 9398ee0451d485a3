// NCCL, opened at run time (dlopen of libnccl.so.2, or RINGMEND_NCCL_LIBRARY
// when set): host-only programs never load it, and the calls of a newer NCCL
// (ncclCommShrink, 2.27) are used when the library found has them.
#pragma once

#include <nccl.h>

#include <string>

namespace ringmend::gpu {

struct NcclLibrary {
  decltype(&::ncclGetVersion) get_version = nullptr;
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRankConfig) comm_init_rank_config = nullptr;
  decltype(&::ncclCommAbort) comm_abort = nullptr;
  decltype(&::ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&::ncclGetErrorString) get_error_string = nullptr;
  decltype(&::ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclCommShrink) comm_shrink = nullptr;  // null before NCCL 2.27
  decltype(&::ncclCommRevoke) comm_revoke = nullptr;  // null before NCCL 2.28.7
  int version = 0;                                    // e.g. 22809 for 2.28.9
  std::string path;                                   // the file opened

  // Opens NCCL once per process; throws Error(Internal) when it cannot.
  static const NcclLibrary& get();
  // Whether NCCL can be opened (without throwing).
  static bool available();
};

// Throws Error(Internal) naming `what` unless rc is ncclSuccess.
void check_nccl(ncclResult_t rc, const char* what);

}  // namespace ringmend::gpu
