// Fault injection: a chosen member dies at a chosen point.
//
// RINGMEND_FAULT holds one or more rules separated by ';':
//
//   rank=R,call=C,phase=P[,step=S][,epoch=E][,signal=NAME|exit=N|stall=T]
//
//   rank   member id of the process that dies (its world rank for the
//          members started with the job)
//   call   collective number on the communicator, counted from 1, or '*'
//   phase  start | reduce_scatter | allgather | broadcast | end   (in a collective)
//          alltoall   (an alltoall's exchange with its step-th peer)
//          recovery   (while recovering, before the shrink; step = the attempt, from 0)
//          rebuild    (while recovering, after the shrink; step = the attempt)
//          attach     (while connecting a membership, at start-up or in recovery:
//                      after this node's shared memory is opened, before the
//                      membership is agreed)
//          admit      (a member admitting spares, after the pool round has
//                      decided, before the new epoch is built; step = the attempt)
//          spare      (a spare, each time it starts waiting to be admitted;
//                      step = the pool rounds it has taken part in)
//          gpu_copy_in          (a GPU allreduce through host memory: its
//                                input's copy to the host queued)
//          nccl_reduce_scatter  (NCCL's reduce-scatter inside the node queued)
//          nccl_allgather       (NCCL's allgather inside the node queued)
//          gpu_copy_out         (the result complete in host memory, before
//                                its copy back to the GPU)
//   step   ring step within the phase (default 0 = on entering the phase)
//   epoch  only in this membership epoch (default: any)
//   signal how it dies: KILL (default), SEGV, ABRT, BUS or TERM (the first
//          four as a crash would: SEGV is raised as a real invalid access),
//          or STOP: it stops itself for ever (a stuck member, which the
//          hang detector excludes; docs/recovery.md, "Stuck members")
//   exit   instead of a signal, the process exits with status N (0-255)
//   stall  instead of dying, the thread that reached the point stops for T
//          seconds (a sleep: a process stuck in the kernel, on a dead file
//          system or in a driver, which MPI does not take for dead), then
//          goes on; each time the rule matches
//
// Example: RINGMEND_FAULT="rank=2,call=5,phase=allgather,step=1" kills member
// 2 in the second allgather step of its fifth collective. If
// RINGMEND_FAULT_RECORD names a file, the dying member appends
// "<member id> <CLOCK_REALTIME seconds>" to it first, so that survivors can
// measure recovery from the moment of death.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringmend {

enum class FaultPhase {
  Start,
  ReduceScatter,
  Allgather,
  Broadcast,
  End,
  Recovery,
  Rebuild,
  Wireup,
  Attach,
  Admit,
  Spare,
  GpuCopyIn,
  NcclReduceScatter,
  NcclAllgather,
  GpuCopyOut,
  Alltoall
};

struct FaultRule {
  int rank = -1;
  std::int64_t call = -1;  // -1 = any
  FaultPhase phase = FaultPhase::Start;
  int step = 0;
  std::int64_t epoch = -1;  // -1 = any
  int signal = 9;           // SIGKILL; 0 = exit with exit_status instead
  int exit_status = 0;
  double stall_seconds = 0;  // > 0: stalls instead of dying
};

// Throws Error(BadEnvironment) with the offending text on malformed input.
std::vector<FaultRule> parse_fault_spec(const std::string& spec);

class FaultInjector {
 public:
  FaultInjector() = default;
  FaultInjector(std::vector<FaultRule> rules, int member, std::string record_file);
  bool armed() const { return !rules_.empty(); }
  // Kills the process (SIGKILL) or stalls it if a rule matches.
  void at(FaultPhase phase, std::uint64_t call, int step, std::uint64_t epoch) const;
  // Called at shutdown: a rule of this rank that never fired (e.g. a step
  // that the path taken does not have) is worth a warning, not silence.
  void warn_unfired() const;

 private:
  std::vector<FaultRule> rules_;     // only this rank's
  mutable std::vector<bool> fired_;  // per rule (only a stall outlives its firing)
  int member_ = -1;
  std::string record_file_;
};

}  // namespace ringmend
