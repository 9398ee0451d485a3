#include "gpu/nccl_comm.hpp"

#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

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

// An error NCCL reports: a bug in the call (Error), or anything else, which
// with a peer gone is what NCCL says (transport::Interrupted).
[[noreturn]] void fail(ncclResult_t rc, const char* what) {
  if (rc == ncclInvalidArgument || rc == ncclInvalidUsage) check_nccl(rc, what);  // throws
  throw transport::Interrupted(std::string(what) + ": NCCL reported " +
                               NcclLibrary::get().get_error_string(rc));
}

// Polls the communicator's state until it leaves ncclInProgress.
void wait_settled(ncclComm_t comm, transport::WaitContext& ctx, const char* what) {
  const NcclLibrary& nccl = NcclLibrary::get();
  ncclResult_t state = ncclInProgress;
  wait_until(
      [&] {
        if (const ncclResult_t rc = nccl.comm_get_async_error(comm, &state); rc != ncclSuccess)
          fail(rc, "ncclCommGetAsyncError");
        return state != ncclInProgress;
      },
      ctx);
  if (state != ncclSuccess) fail(state, what);
}

// The aborts running in the background. Joined by join_background_aborts();
// any left at the program's end are let go (joining there could wait on
// NCCL's code after its own teardown).
struct BackgroundAborts {
  std::mutex mutex;
  std::vector<std::thread> threads;
  ~BackgroundAborts() {
    for (std::thread& t : threads)
      if (t.joinable()) t.detach();
  }
};
BackgroundAborts& background_aborts() {
  static BackgroundAborts aborts;
  return aborts;
}

}  // namespace

NcclComm::~NcclComm() { abort(); }

// A communicator being made that does not settle is aborted on its own
// thread (an abort after a peer's death takes ~0.5 s), then the error goes on.
static void settle_or_abort(NcclComm& c, transport::WaitContext& ctx, const char* what) {
  try {
    wait_settled(c.get(), ctx, what);
  } catch (...) {
    c.abort_in_background();
    throw;
  }
}

void join_background_aborts() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(background_aborts().mutex);
    threads.swap(background_aborts().threads);
  }
  for (std::thread& t : threads) t.join();
}

void NcclComm::abort() {
  if (comm_) (void)NcclLibrary::get().comm_abort(std::exchange(comm_, nullptr));
}

void NcclComm::abort_in_background() {
  if (!comm_) return;
  const auto abort = NcclLibrary::get().comm_abort;  // no static state touched on the thread
  std::thread t([comm = std::exchange(comm_, nullptr), abort, device = device_] {
    const auto start = std::chrono::steady_clock::now();
    if (device >= 0) (void)cudaSetDevice(device);
    (void)abort(comm);
    char text[96];
    std::snprintf(
        text, sizeof text, "NCCL communicator aborted in %.1f ms (in the background)",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    log(LogLevel::Info, text);
  });
  std::lock_guard lock(background_aborts().mutex);
  background_aborts().threads.push_back(std::move(t));
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
  check(cudaGetDevice(&c.device_), "cudaGetDevice");
  ncclConfig_t config = nonblocking_config();
  if (const ncclResult_t rc = nccl.comm_init_rank_config(&c.comm_, ranks, id, rank, &config);
      rc != ncclSuccess && rc != ncclInProgress)
    fail(rc, "ncclCommInitRankConfig");
  settle_or_abort(c, ctx, "ncclCommInitRankConfig");
  return c;
}

NcclComm NcclComm::shrink(const std::vector<int>& excluded, transport::WaitContext& ctx) {
  const NcclLibrary& nccl = NcclLibrary::get();
  if (!nccl.comm_shrink)
    throw Error(Errc::Internal, "NCCL " + std::to_string(nccl.version) + " has no ncclCommShrink (2.27+)");
  NcclComm c;
  c.ranks_ = ranks_ - static_cast<int>(excluded.size());
  c.device_ = device_;
  ncclConfig_t config = nonblocking_config();
  std::vector<int> list = excluded;
  if (revoked_) wait_settled(comm_, ctx, "ncclCommRevoke");
  if (const ncclResult_t rc = nccl.comm_shrink(comm_, list.data(), static_cast<int>(list.size()), &c.comm_,
                                               &config, revoked_ ? NCCL_SHRINK_DEFAULT : NCCL_SHRINK_ABORT);
      rc != ncclSuccess && rc != ncclInProgress)
    fail(rc, "ncclCommShrink");
  settle_or_abort(c, ctx, "ncclCommShrink");
  return c;
}

void NcclComm::wait_enqueued(transport::WaitContext& ctx) { wait_settled(comm_, ctx, "NCCL collective"); }

void NcclComm::check_enqueued(ncclResult_t rc, const char* what) const {
  if (rc != ncclSuccess && rc != ncclInProgress) fail(rc, what);
}

}  // namespace ringmend::gpu
