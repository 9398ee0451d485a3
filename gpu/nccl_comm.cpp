#include "gpu/nccl_comm.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include "gpu/nccl_library.hpp"
#include "ringmend/core/error.hpp"
#include "ringmend/core/log.hpp"

namespace ringmend::gpu {

ncclDataType_t nccl_type(DataType t) {
  switch (t) {
    case DataType::Float32:
      return ncclFloat32;
    case DataType::Float64:
      return ncclFloat64;
    case DataType::Int32:
      return ncclInt32;
    case DataType::Int64:
      return ncclInt64;
    case DataType::Float16:
      return ncclFloat16;
    case DataType::BFloat16:
      return ncclBfloat16;
  }
  throw Error(Errc::InvalidArgument, "NCCL: unsupported data type");
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Prod:
      return ncclProd;
    case ReduceOp::Min:
      return ncclMin;
    case ReduceOp::Max:
      return ncclMax;
  }
  throw Error(Errc::InvalidArgument, "NCCL: unsupported reduction");
}

namespace {

ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Polls the communicator's state until it leaves ncclInProgress. An error
// of a collective is a peer's failure (transport::Interrupted: the runtime
// recovers); an error while a communicator is made is reported as is.
void wait_settled(ncclComm_t comm, transport::WaitContext& ctx, const char* what, bool interrupts = false) {
  const NcclLibrary& nccl = NcclLibrary::get();
  ncclResult_t state = ncclInProgress;
  wait_until(
      [&] {
        check_nccl(nccl.comm_get_async_error(comm, &state), "ncclCommGetAsyncError");
        return state != ncclInProgress;
      },
      ctx);
  if (interrupts && state != ncclSuccess)
    throw transport::Interrupted(std::string(what) + ": NCCL reported " + nccl.get_error_string(state));
  check_nccl(state, what);
}

}  // namespace

NcclComm::~NcclComm() { abort(); }

void NcclComm::abort() {
  if (comm_) (void)NcclLibrary::get().comm_abort(std::exchange(comm_, nullptr));
}

void NcclComm::abort_in_background(int device) {
  if (!comm_) return;
  const auto abort = NcclLibrary::get().comm_abort;  // no static state touched on the thread
  std::thread([comm = std::exchange(comm_, nullptr), abort, device] {
    const auto start = std::chrono::steady_clock::now();
    (void)cudaSetDevice(device);
    (void)abort(comm);
    char text[96];
    std::snprintf(
        text, sizeof text, "NCCL communicator aborted in %.1f ms (in the background)",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    log(LogLevel::Info, text);
  }).detach();
}

void NcclComm::throw_if_failed() const {
  if (!comm_) return;
  const NcclLibrary& nccl = NcclLibrary::get();
  ncclResult_t state = ncclSuccess;
  if (nccl.comm_get_async_error(comm_, &state) != ncclSuccess) state = ncclInternalError;
  if (state != ncclSuccess && state != ncclInProgress)
    throw transport::Interrupted(std::string("NCCL reported an error inside the node (") +
                                 nccl.get_error_string(state) + ")");
}

void NcclComm::revoke() {
  const NcclLibrary& nccl = NcclLibrary::get();
  if (!comm_ || revoked_ || !nccl.comm_revoke) return;
  (void)nccl.comm_revoke(comm_, 0);
  revoked_ = true;
}

NcclComm NcclComm::make(const ncclUniqueId& id, int ranks, int rank, transport::WaitContext& ctx) {
  const NcclLibrary& nccl = NcclLibrary::get();
  NcclComm c;
  c.ranks_ = ranks;
  ncclConfig_t config = nonblocking_config();
  check_nccl(nccl.comm_init_rank_config(&c.comm_, ranks, id, rank, &config), "ncclCommInitRankConfig");
  wait_settled(c.comm_, ctx, "ncclCommInitRankConfig");  // c aborts on a throw
  return c;
}

NcclComm NcclComm::shrink(const std::vector<int>& excluded, transport::WaitContext& ctx) {
  const NcclLibrary& nccl = NcclLibrary::get();
  if (!nccl.comm_shrink)
    throw Error(Errc::Internal, "NCCL " + std::to_string(nccl.version) + " has no ncclCommShrink (2.27+)");
  NcclComm c;
  c.ranks_ = ranks_ - static_cast<int>(excluded.size());
  ncclConfig_t config = nonblocking_config();
  std::vector<int> list = excluded;
  check_nccl(nccl.comm_shrink(comm_, list.data(), static_cast<int>(list.size()), &c.comm_, &config,
                              revoked_ ? NCCL_SHRINK_DEFAULT : NCCL_SHRINK_ABORT),
             "ncclCommShrink");
  wait_settled(c.comm_, ctx, "ncclCommShrink");
  return c;
}

void NcclComm::wait_enqueued(transport::WaitContext& ctx) {
  wait_settled(comm_, ctx, "NCCL collective", true);
}

}  // namespace ringmend::gpu
