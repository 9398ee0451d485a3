// One NCCL communicator, owned: made without blocking (so that its making
// can be cut short by a failure, like every ringmend wait), aborted when a
// peer dies, shrunk over the survivors.
//
// NCCL has no failure detector: a kernel whose peer died spins until the
// communicator is aborted. The runtime notices the death (ULFM, pidfd) and
// calls abort() on every local survivor; then either every survivor shrinks
// the aborted communicator (ncclCommShrink with NCCL_SHRINK_ABORT, the same
// sorted list of excluded ranks everywhere) or they make a new one from a
// fresh unique id (RINGMEND_NCCL_SHRINK, docs/gpu.md).
//
// An error NCCL reports for a communicator, while it is made or while an
// operation is queued or runs, is taken for a peer's failure
// (transport::Interrupted: the runtime recovers), except a call NCCL calls
// invalid (Error: a bug, not a failure).
#pragma once

#include <nccl.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "gpu/event_wait.hpp"
#include "ringmend/core/types.hpp"
#include "transport/progress.hpp"

namespace ringmend::gpu {

ncclDataType_t nccl_type(DataType t);
ncclRedOp_t nccl_op(ReduceOp op);

class NcclComm {
 public:
  NcclComm() = default;
  ~NcclComm();  // aborts (see abort)
  NcclComm(NcclComm&& o) noexcept
      : comm_(std::exchange(o.comm_, nullptr)), ranks_(o.ranks_), device_(o.device_), revoked_(o.revoked_) {}
  NcclComm& operator=(NcclComm&& o) noexcept {
    std::swap(comm_, o.comm_);
    std::swap(ranks_, o.ranks_);
    std::swap(device_, o.device_);
    std::swap(revoked_, o.revoked_);
    return *this;
  }

  // Makes this rank's part of a communicator of `ranks` from `id` on the
  // current device; returns once every rank took part, or throws what
  // ctx.check() throws (the half-made communicator is aborted).
  static NcclComm make(const ncclUniqueId& id, int ranks, int rank, transport::WaitContext& ctx);
  // The survivors' communicator: every survivor passes the same sorted
  // `excluded` ranks (of this communicator); they must not call it.
  NcclComm shrink(const std::vector<int>& excluded, transport::WaitContext& ctx);

  explicit operator bool() const { return comm_ != nullptr; }
  ncclComm_t get() const { return comm_; }
  int ranks() const { return ranks_; }

  // Stops every operation in flight and frees the communicator (ncclCommAbort:
  // local, never waits for peers). Every local rank must abort its own after
  // a failure, since a survivor's kernels may still touch a peer's buffers.
  void abort();
  // Stops every operation in flight but keeps the communicator, to be
  // shrunk (ncclCommRevoke, NCCL 2.28.7+; without it, the shrink aborts
  // them itself). Local: never waits for peers.
  void revoke();
  // Aborts on a thread of its own and returns at once: ncclCommAbort sets
  // the abort flag first (the kernels stop) but then tears down NCCL's
  // threads and connections, which took ~0.5 s after a peer's death with
  // NCCL 2.28 (docs/gpu.md); recovery need not wait for that.
  // The thread is kept until join_background_aborts().
  void abort_in_background();
  // Throws transport::Interrupted when NCCL reports an error of this
  // communicator (a peer's death ends its operations with one, often
  // before the runtime's own detector hears of it).
  void throw_if_failed() const;

  // What queueing an operation returned, checked (see above).
  void check_enqueued(ncclResult_t rc, const char* what) const;
  // Waits until the last operation queued is accepted (a non-blocking
  // communicator may answer ncclInProgress).
  void wait_enqueued(transport::WaitContext& ctx);

 private:
  ncclComm_t comm_ = nullptr;
  int ranks_ = 0;
  int device_ = -1;  // the GPU it was made on
  bool revoked_ = false;
};

// Waits for the aborts started in the background (they run NCCL's code):
// before the program's end (the runtime's shutdown), bounded by NCCL's
// abort, ~0.5 s after a peer's death.
void join_background_aborts();

}  // namespace ringmend::gpu
