// The communicator's machinery: the call / recover / catch-up loop over the
// current membership epoch. Private to runtime/.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "coll/algorithm.hpp"
#include "coll/pipeline_tuner.hpp"
#include "membership/epoch.hpp"
#include "membership/epoch_builder.hpp"
#include "membership/spare_pool.hpp"
#include "membership/ulfm_control.hpp"
#include "membership/ulfm_spare_pool.hpp"
#include "ringmend/ringmend.hpp"
#include "runtime/call_queue.hpp"
#include "runtime/fault_injection.hpp"
#include "runtime/hang_detector.hpp"
#include "runtime/state_registry.hpp"
#include "runtime/straggler_watch.hpp"
#include "runtime/watchdog.hpp"
#include "transport/ucx_context.hpp"

namespace ringmend {

// How many errors the application's collective calls threw in this process
// (every one passes the facade's error boundary): the shutdown never turns
// them into a clean exit, and the launcher's summary names them.
std::atomic<long>& application_errors();

// One collective call, as the runtime sees it.
struct CollectiveCall {
  CollectiveCall() = default;
  CollectiveCall(coll::CollectiveKind k, const void* in, void* out, std::size_t n, DataType t, ReduceOp o,
                 int r)
      : kind(k), input(in), output(out), count(n), type(t), op(o), root(r) {}
  coll::CollectiveKind kind = coll::CollectiveKind::Allreduce;
  const void* input = nullptr;   // allreduce input, allgather block, or broadcast buffer on the root
  void* output = nullptr;        // where the result goes
  std::size_t count = 0;         // elements (allreduce; allgather: per rank; allgatherv: in all;
                                 // alltoall: sent by this rank) or bytes (broadcast)
  std::size_t output_bytes = 0;  // allgather: what the output holds
  int ranks_at_call = 0;         // the group's size when the application called (set by run())
  DataType type = DataType::Int32;
  ReduceOp op = ReduceOp::Sum;
  int root = -1;
  // Allreduce: where the buffers are (runtime/device_call.cpp).
  MemoryKind memory = MemoryKind::Auto;
  void* cuda_stream = nullptr;
  // Set while a GPU call runs: its GPU side; the host machinery below
  // (run, execute, catch-up) hands its buffers over to it.
  struct DeviceRun* gpu = nullptr;
  // Set on the host copy of a GPU call's buffers.
  coll::Staging* staging = nullptr;
  // A GPU call's arguments that cannot be run (reported on every rank).
  std::string placement_error;
  // Allgatherv: every rank's count, in rank order. Alltoall: what this rank
  // sends to each rank (counts) and receives from each (recv_counts). Laid
  // out for the group's size at the call; copied, so that a queued call owns
  // them.
  std::vector<std::size_t> counts, recv_counts;
  // This rank's part: the allreduce input, the allgather block, the
  // broadcast, the whole uneven allgather, what an alltoall sends.
  std::size_t bytes() const {
    return kind == coll::CollectiveKind::Broadcast ? count : count * size_of(type);
  }
  // Nothing to do on any rank, like MPI with count 0 (every rank knows it
  // alike; an alltoall's rank that moves nothing still meets the others).
  bool no_op() const { return kind != coll::CollectiveKind::Alltoall && bytes() == 0; }
  // What the counts of an uneven call leave room for: their sum.
  static std::size_t total_of(const std::vector<std::size_t>& counts) {
    std::size_t total = 0;
    for (std::size_t n : counts) total += n;
    return total;
  }
  // The result of a call run by `ranks` ranks.
  std::size_t result_bytes(int ranks) const {
    return kind == coll::CollectiveKind::Allgather ? bytes() * static_cast<std::size_t>(ranks) : bytes();
  }
  // What a survivor that finished the call keeps for one that missed its
  // end: nothing for a reduce_scatter, an uneven allgather or an alltoall,
  // nor for an allgather above
  // kAllgatherRetainedBytes (those end with a barrier: every rank's result
  // is final before the call can end on any, see call_path.cpp).
  static constexpr std::size_t kAllgatherRetainedBytes = 256 << 10;
  std::size_t retained_bytes(int ranks) const {
    if (kind == coll::CollectiveKind::ReduceScatter || kind == coll::CollectiveKind::AllgatherV ||
        kind == coll::CollectiveKind::Alltoall)
      return 0;
    const std::size_t bytes = result_bytes(ranks);
    return kind == coll::CollectiveKind::Allgather && bytes > kAllgatherRetainedBytes ? 0 : bytes;
  }
};

// Whether two buffers share a byte.
inline bool overlaps(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto* x = static_cast<const std::byte*>(a);
  const auto* y = static_cast<const std::byte*>(b);
  return a_bytes > 0 && b_bytes > 0 && x < y + b_bytes && y < x + a_bytes;
}

// Where each block of `counts` starts when they lie end to end.
inline std::vector<std::size_t> offsets_of(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> offsets(counts.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    offsets[i] = at;
    at += counts[i];
  }
  return offsets;
}

// The algorithm's arguments of an allgatherv or an alltoall (`slots`: as
// coll::AllgatherArgs'; the offsets of its counts, offsets_of(), held by
// the caller while the call runs).
coll::Call counted_call(const CollectiveCall& call, std::uint64_t seq, const int* slots,
                        const std::vector<std::size_t>& offsets,
                        const std::vector<std::size_t>& recv_offsets);

// What is wrong with `call` on rank `rank` of `size` ranks (empty: nothing),
// before it runs: the same checks on every communicator.
std::string validate_call(const CollectiveCall& call, int rank, int size);

// The GPU side of a communicator (runtime/device_call.cpp).
namespace gpu {
class Event;
}
struct DeviceContext;
struct DeviceContextDeleter {
  void operator()(DeviceContext* p) const;
};
// Whether `p` is GPU memory (false when built without CUDA or no GPU).
bool is_gpu_pointer(const void* p);
// The PCI bus id of the GPU the program already works on (a CUDA context
// current on this thread), or empty (gpu/cuda_runtime.hpp).
std::string gpu_in_use();

// A flag of the communicator set for the rest of a scope, and cleared
// however the scope ends (an error, a recovery's exception).
class ScopedFlag {
 public:
  explicit ScopedFlag(bool& flag, bool value = true) : flag_(flag) { flag_ = value; }
  ~ScopedFlag() { flag_ = false; }
  ScopedFlag(const ScopedFlag&) = delete;
  ScopedFlag& operator=(const ScopedFlag&) = delete;

 private:
  bool& flag_;
};

// Thrown out of a spare's start when the job no longer needs it: the job
// ended (status 0), or every member is gone (non-zero). The Runtime ends
// the process; a spare never returns to the application unadmitted.
struct SpareDismissed {
  int status = 0;
  std::string why;
};

// Seconds since `t` on the monotonic clock (the recoveries' laps).
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// `from`'s member ids added to `to`, kept sorted and without repeats (the
// ids a call's result reports lost, joined or released).
void add_ids(std::vector<int>& to, const std::vector<int>& from);

struct Communicator::Impl final : transport::WaitContext {
  // `outcome_fd`: the launcher's pipe (outcome_channel.hpp), or -1.
  // `native`: the first view of the native membership (a job launched
  // without mpirun: recoveries are its view changes), or null for MPI's
  // (ULFM when `fault_tolerant`).
  Impl(const Settings& settings, bool fault_tolerant, transport::UcxContext& ucx, MPI_Comm parent,
       const topo::Location& where, int outcome_fd, std::unique_ptr<membership::Control> native = nullptr);
  ~Impl() override;

  CollectiveResult run(const CollectiveCall& call);
  // An application's call: run(), timed for the straggler comparison, which
  // comes first when due (stragglers.cpp). A member released there as a
  // straggler returns without taking part in `call` (result.left).
  CollectiveResult call(const CollectiveCall& call);
  // Waits, fault-tolerantly, until every member is finalizing, serving any
  // survivor that still needs the result of a collective this rank finished.
  void quiesce();
  void warn_unfired_faults() const { faults_.warn_unfired(); }

  // WaitContext
  void check() override;
  void on_phase(transport::Phase phase, int step) override;
  bool oversubscribed() const override { return epoch_->oversubscribed; }

  // The membership as the application sees it: the agreed epoch, except
  // between a catch-up and this member's next call (see run()).
  struct View {
    int rank = 0, size = 0;
    std::uint64_t number = 0;
    int my_id = -1;
    std::vector<int> members;
  };
  // On the thread that runs the calls; other threads read a copy.
  const View& view() const { return view_; }
  View view_copy() const {
    std::lock_guard lock(view_mutex_);
    return view_;
  }
  std::atomic<std::uint64_t> seq = 0;  // collectives called so far
  std::map<int, std::function<void(const MembershipChange&)>> callbacks;
  int next_callback_id = 0;
  StateRegistry state;
  std::atomic<bool> joined = false;  // admitted as a spare
  std::atomic<bool> left = false;    // released: this process left the job
  // Runs every call once the application has made a non-blocking one
  // (call_queue.hpp); null until then.
  std::unique_ptr<CallQueue> queue;
  // Runs `f` where the calls run: on the queue's thread when there is one
  // (waiting for it, and for the calls queued before), else here.
  template <class F>
  auto serially(F&& f) -> decltype(f());
  // Ends the queue after the calls in it (before the shutdown's own calls).
  void stop_queue() { queue.reset(); }
  // Membership on request (resize.cpp).
  CollectiveResult grow(int count);
  // `what` names the call in errors; `bad`, if not empty, is an error in
  // the arguments found before (reported by the request, on every member).
  CollectiveResult release(std::span<const int> ranks, const std::string& what, std::string bad);
  // The same for member ids (the same on every member, whatever view each
  // holds now); `named` is how many the caller named (ids holds none when
  // `bad` says why).
  CollectiveResult release_members(std::vector<int> ids, std::size_t named, const std::string& what,
                                   const std::string& bad);
  // This member was found a straggler (the largest share of the window the
  // others waited for it), 0 if never: the launcher's summary names it.
  double straggler_share() const { return straggler_share_; }
  // After every member agreed to finish: the spares still waiting leave.
  // (Under the native membership quiesce()'s ending round did it.)
  void dismiss_spares();
  // A round of the pool that ends the job for the spares and finds every
  // member finalizing; false when a member recovers: join that recovery,
  // then come again. The native membership's meeting at finalize.
  bool ending_round();
  // A spare, constructed but not yet a member.
  bool waiting_as_spare() const { return pool_ && pool_->is_spare(); }
  // Every process of the job (members and spares) started on one node.
  bool job_on_one_node() const { return pool_ && pool_->one_node(); }
  // A spare's start: waits in the pool until admitted; throws SpareDismissed.
  void serve_as_spare();
  // The members of the job's start that were gone by the time the first
  // epoch stood (died during start-up). Nobody's membership callback can
  // hear of them: none is registered before the constructor returns.
  const std::vector<membership::MemberId>& lost_at_start() const { return lost_at_start_; }

  // What a subgroup (subgroup.hpp), a view of this communicator's
  // membership, uses of it, on the thread that runs the calls.
  const membership::Epoch& epoch() const { return *epoch_; }
  membership::Epoch& epoch() { return *epoch_; }
  membership::EpochBuilder& epoch_builder() { return builder_; }
  const Settings& settings() const { return settings_; }
  HangDetector& hang_detector() { return hang_; }
  coll::Tuning tuning() { return {settings_.small_bytes, settings_.chunk_bytes, &pipeline_tuner_}; }
  // coll::select() for the current epoch, answered from the last call's
  // choice when kind and size are the same (a run of small calls asks
  // every algorithm the same question each time). The choice depends on
  // the epoch's layout and the fixed tuning only; epoch numbers only grow,
  // so an epoch made at a freed one's address is not taken for it.
  const coll::Algorithm& selected(coll::CollectiveKind kind, std::size_t bytes);
  struct LastSelection {
    const membership::Epoch* epoch = nullptr;
    std::uint64_t epoch_number = 0;
    coll::CollectiveKind kind{};
    std::size_t bytes = 0;
    const coll::Algorithm* algorithm = nullptr;
  } last_selection_;
  // A subgroup's epoch, kept until this communicator ends (its quiesce()
  // has met every member): a node mate or a remote peer may still be
  // reading the last call's data from it when the subgroup is destroyed.
  void keep_until_end(std::unique_ptr<membership::Epoch> e) { subgroup_epochs_.push_back(std::move(e)); }
  // A subgroup's call interrupted by a failure in the world: this member
  // takes part in the world's recovery, idle before its next world call.
  void recover_between_calls() { join_recovery(seq + 1); }
  // Every subgroup made of this communicator: those still alive when it
  // ends hand it their epochs, closed with its own (before MPI and UCX go).
  std::vector<std::weak_ptr<Subgroup>> subgroups;
  // How many subgroups this process made of each list of members (their
  // number tells apart the control groups of the same members).
  std::map<std::vector<membership::MemberId>, int> subgroups_made;
  std::uint64_t splits_made = 0;  // Communicator::split calls (the same on every member)
  // The epoch's UCX worker is in use (transport::UcxContext::epoch_in_use).
  void ucx_in_use() { ucx_.epoch_in_use(); }
  // Expires when this communicator ends: what a subgroup that outlives it
  // looks at before it touches it.
  std::shared_ptr<void> alive = std::make_shared<int>(0);

 private:
  struct RecoveryOutcome {
    std::vector<membership::MemberId> lost;
    std::vector<membership::MemberInfo> infos;  // every survivor's state
    MembershipChange change;                    // for announce()
  };
  // Makes the current epoch the application's view and runs the callbacks.
  void announce(const MembershipChange& change);
  // Before call `call_seq` executes, on every member in the same call:
  // admits spares for the members lost (policy Replace), then announces
  // the change to the application.
  void settle(CollectiveResult& result, std::uint64_t call_seq);
  // One round of the pool and the epoch it makes (admission.cpp): spares
  // admitted until the job has its target size or none is left, and, when
  // `leaving`, this member released. `joiner_next_seq` is the joiners' first
  // call. Returns false on a member that left.
  // `after_request`: called after a grow or release request's call, else
  // before call `joiner_next_seq` (settle()).
  bool regroup(std::uint64_t joiner_next_seq, bool leaving, bool after_request);
  // A member that came to a round of the pool for another reason takes
  // part in the recovery another member started, idle before call
  // `next_seq` (and hands its result of the call before to those behind).
  void join_recovery(std::uint64_t next_seq);
  // After a request's call, before its round of the pool: every member goes
  // on to the round, or every member recovers first (resize.cpp). Under
  // the native membership the round is that meeting itself.
  void meet_before_round();
  // A meeting point of the epoch (after a request's call, at finalize): an
  // agreement on its ctrl that every member makes once per meeting, either
  // here or at the start of its recovery (meet_recovering(), flag 0). True
  // when every member came to the meeting, false when one recovers: join
  // that recovery then. Why both sides: recovery.cpp, above meet().
  bool meet();
  void meet_recovering();
  // Whether a recovery goes through the pool (recover_with_spares: always
  // under the native membership; under ULFM with spares waiting and policy
  // replace) rather than shrinking the epoch's ctrl; the same on every
  // member.
  bool recovers_through_pool() const;
  // The epoch's control group is the native membership's (no MPI
  // communicator under it).
  bool native_membership() const;
  // Every member passes the same request (`a`, and the member ids it names,
  // compared exactly), in one collective call whose result goes to
  // `result`; else every member throws alike. `local_error` is this
  // member's objection to its own arguments.
  void agree_on_request(const std::string& what, std::int64_t a, const std::vector<int>& ids,
                        const std::string& local_error, CollectiveResult& result);
  // The size a request starts from (see resize.cpp).
  int kept_size() const;
  // Announces a change pending after a request, into its result.
  void report_pending(CollectiveResult& result);
  // The straggler comparison before an application's call (stragglers.cpp):
  // its call's result (and a release's), to be reported with the call's.
  CollectiveResult compare_waits();
  // Makes a Grow epoch current once the joiners have the state and every
  // member agreed; false (and the previous epoch current again) otherwise.
  // A Grow epoch whose joiners are to resume at call `joiner_next_seq`,
  // built with the state sent to them before its agreement (null `from`
  // on a joiner). Made current when ready (the previous one retired).
  bool build_grown(membership::RoundOutcome& round, std::uint64_t joiner_next_seq,
                   const membership::MemberInfo& mine);
  // A member's round of the spare pool, `mine` its collective state (what
  // it tells the grown epoch's exchange, with its identity).
  membership::RoundOutcome pool_round(const membership::PoolEntry& entry, const membership::MemberInfo& mine);
  // The registered state, from one survivor straight to each joiner over
  // `e`'s channels; false: this rank took no part.
  bool transfer_state(const membership::Epoch& e, std::uint64_t joiner_next_seq);
  struct TransferWait;
  // WaitContext's parts: the call's deadline, and a fault rule's point.
  void check_deadline();
  void fault_at(transport::Phase phase, int step, std::uint64_t epoch);
  // A broadcast over the current epoch's channels; `wire_seq` is the call
  // number its headers carry.
  void broadcast_bytes(void* buffer, std::size_t bytes, int root, std::uint64_t wire_seq);
  void update_view();  // the view alone (the first epoch)
  // The constructor's parts (communicator_impl.cpp).
  bool open_spare_pool(MPI_Comm parent, int world_size, membership::Start& start);
  void build_first_epoch(MPI_Comm parent, membership::Start start);
  // GPU buffers (device_call.cpp; a stub when built without CUDA).
  // A call whose buffers are on a GPU, run; nullopt for host buffers.
  std::optional<CollectiveResult> run_on_device(const CollectiveCall& call);
  // One attempt of it in the current epoch (from execute()).
  void execute_device(const CollectiveCall& c, std::uint64_t call_seq);
  bool decide_nccl();  // whether this epoch's GPU calls use NCCL inside the node (and its communicator)
  void execute_nccl(const CollectiveCall& c, std::uint64_t call_seq);
  // Waits for NCCL's work up to `event`, watching NCCL's errors and ours.
  void wait_nccl(const gpu::Event& event);
  bool shrink_mode() const;  // RINGMEND_NCCL_SHRINK, and an NCCL that can
  // The result of a GPU call that another survivor finished (catch-up).
  void device_result_from(const CollectiveCall& c, const void* host);
  // Before a recovery: NCCL's work stopped (aborted, or revoked to be shrunk).
  void stop_device_collectives();
  // The retained result of call `seq`, if it is on the GPU, copied into the
  // host buffer the catch-up sends from.
  void device_retained_to_host(std::uint64_t seq, void* host, std::size_t bytes);
  std::unique_ptr<DeviceContext, DeviceContextDeleter> gpu_;
  // Announces pending_ and returns it.
  MembershipChange announce_pending();
  [[noreturn]] void fail_in_step(const std::vector<membership::MemberInfo>& states, std::uint64_t call_seq,
                                 const Error& error);
  static MembershipChange merged(const MembershipChange& first, const MembershipChange& then);
  std::string validate(const CollectiveCall& call) const;
  void execute(const CollectiveCall& call, std::uint64_t call_seq);
  void execute_allgather(const CollectiveCall& call, std::uint64_t call_seq);
  void execute_reduce_scatter(const CollectiveCall& call, std::uint64_t call_seq);
  void execute_counted(const CollectiveCall& call, std::uint64_t call_seq);
  // A barrier inside collective `call_seq` (an allreduce of one word).
  void barrier_in_call(std::uint64_t call_seq);
  // run()'s parts (call_path.cpp): one call through its attempts.
  struct CallInProgress;
  struct CallFailure;
  void place_root(CallInProgress& p);
  void fail_if_root_lost(CallInProgress& p);
  std::optional<CallFailure> attempt(CallInProgress& p);
  void recover_in_call(CallInProgress& p, const CallFailure& f);
  RecoveryOutcome recover(const membership::MemberInfo& mine, const std::string& cause);
  // A change from `old_epoch` (of `old_size` members, `lost` gone) to the
  // current epoch, for the application.
  MembershipChange change_to_current(std::uint64_t old_epoch, int old_size,
                                     const std::vector<membership::MemberId>& lost) const;
  // What a recovery started from, and what it spent: for the change it
  // reports and the operator's line (recover(), recover_with_spares()).
  struct RecoveryRecord {
    std::uint64_t old_epoch = 0;
    int old_size = 0;
    // Where the members were, to name the nodes of the lost ones.
    std::vector<membership::MemberId> old_members;
    std::vector<membership::MemberInfo> old_infos;
    std::chrono::steady_clock::time_point start;
    double shrink_seconds = 0, pool_seconds = 0, rebuild_seconds = 0;
    int attempts = 0;
    bool held = false;  // through the pool: spares held back for the next call every member is in
  };
  // recover()'s parts (recovery.cpp).
  bool shrink_and_rebuild(const membership::MemberInfo& mine, int attempt, RecoveryOutcome& out,
                          RecoveryRecord& rec);
  MembershipChange recovered(const membership::MemberInfo& mine, const std::string& cause,
                             const std::vector<membership::MemberId>& lost, const RecoveryRecord& rec);
  // The recovery of a job with spares waiting (admission.cpp): one round of
  // the pool drops the dead and admits spares in their places, when every
  // member is in the same collective; else it only drops them.
  // `start`: when the recovery began; `settled`: the seconds already spent
  // dropping the dead (SparePool::settle), counted as the shrink's.
  RecoveryOutcome recover_with_spares(const membership::MemberInfo& mine, const std::string& cause,
                                      std::chrono::steady_clock::time_point start, double settled);
  // recover_with_spares()'s parts (admission.cpp): what the recovery started
  // from and spent, each round, and the change it reports.
  bool pool_recovery_round(const membership::MemberInfo& mine, membership::Epoch& from, int attempt,
                           RecoveryRecord& r);
  MembershipChange recovered_through_pool(const membership::MemberInfo& mine, const std::string& cause,
                                          const std::vector<membership::MemberId>& lost,
                                          const RecoveryRecord& r);
  // regroup()'s report: the change for the application and the operator's line.
  void announce_regroup(std::vector<int> released, std::chrono::steady_clock::time_point start,
                        double pool_seconds, std::uint64_t joiner_next_seq);
  void log_failure_noticed(const membership::MemberInfo& mine, const std::string& cause) const;
  // Bounds a recovery (`what`: "recovery", "admitting spares", ...) that
  // is inside an MPI call which never returns, from now until it is
  // destroyed: past RINGMEND_RECOVERY_TIMEOUT and a grace, it ends the
  // process (recovery.cpp says why the grace).
  Watchdog recovery_watchdog(const std::string& what) const;
  // Whether a recovery (or regroup) begun at `start` is past
  // RINGMEND_RECOVERY_TIMEOUT (never when it is 0).
  bool past_recovery_bound(std::chrono::steady_clock::time_point start) const;
  // Each attempt of a recovery: RINGMEND_RECOVERY_TIMEOUT since `start`,
  // and the fault rules of phase `recovery`.
  void start_recovery_attempt(std::chrono::steady_clock::time_point start, int attempt,
                              std::uint64_t old_epoch);
  // This member's entry in a round of the pool, in collective `seq_in`.
  membership::PoolEntry member_entry(std::int64_t seq_in) const;
  // The same at start-up, from the first attempt (`first`, not ready).
  membership::PoolEntry first_member_entry(const membership::Epoch& first, std::int64_t seq_in) const;
  // "2 (node n1), 5 (node n2)": `ids` with the nodes `infos` gives them.
  static std::string with_nodes(const std::vector<membership::MemberId>& ids,
                                const std::vector<membership::MemberId>& members,
                                const std::vector<membership::MemberInfo>& infos);
  void catch_up(std::uint64_t behind_seq, const std::vector<membership::MemberInfo>& infos,
                std::size_t bytes);
  void broadcast_retained(std::uint64_t seq_of_result, int root, std::size_t bytes);
  std::vector<std::byte>& scratch_for(std::uint64_t call_seq, std::size_t bytes);
  // This member's collective state for a recovery, and whether the
  // survivors' states allow the interrupted collective to be completed.
  membership::MemberInfo my_state(std::uint64_t call_seq) const;
  static std::string catch_up_impossible(const std::vector<membership::MemberInfo>& states);
  void log(const std::string& message) const;

  Settings settings_;
  const int outcome_fd_;  // the launcher's pipe, for the recovery watchdog's word
  // What the shared-memory pipeline measured on this node, kept across
  // epochs (a smaller node is a new key).
  coll::PipelineTuner pipeline_tuner_;
  bool fault_tolerant_;
  FaultInjector faults_;
  // Told when a new epoch is in use (a collective done in it): its helper
  // thread then makes the next UCX worker and closes the old ones.
  transport::UcxContext& ucx_;
  membership::EpochBuilder builder_;
  // Where spares wait (null without spares), and the size the job keeps.
  std::unique_ptr<membership::SparePool> pool_;
  int target_size_ = 0;
  std::vector<membership::MemberId> lost_at_start_;
  // The last state transfer to joiners (for MembershipChange).
  double state_seconds_ = 0;
  std::size_t state_bytes_ = 0;
  // A joiner's entry that does not fit what it registered before the
  // Runtime started (StateBuffer): raised once it is a member, so that the
  // admission itself completes on every process.
  std::string state_mismatch_;
  bool requesting_ = false;      // in the call of a grow or release request
  bool holding_spares_ = false;  // recovering outside a call (join_recovery): no joiner
  // The root (member id) of the broadcast being called, else kNoMember.
  membership::MemberId call_root_ = membership::kNoMember;
  std::unique_ptr<membership::Epoch> epoch_;  // the last epoch every member agreed on
  View view_;
  mutable std::mutex view_mutex_;                // view_ is written on the thread that runs the calls
  std::optional<MembershipChange> pending_;      // a change to announce at the next call
  std::optional<MembershipChange> unannounced_;  // rebuilds that changed no membership, since the last change
  std::optional<std::uint64_t> met_epoch_;       // the epoch whose open meeting's agreement this member made
  // A build that failed (its control communicator is the one to shrink
  // next), and the member ids of that communicator's ranks while recovering.
  std::unique_ptr<membership::Epoch> attempt_;
  std::vector<membership::MemberId> attempt_members_;
  // Epochs left after a failure: their UCX workers keep listening until the
  // next epoch is agreed (see transport::Fabric::retire).
  std::vector<std::unique_ptr<membership::Epoch>> retired_;
  std::vector<std::unique_ptr<membership::Epoch>> subgroup_epochs_;  // keep_until_end()
  // Results are computed into scratch_[seq % 2] and kept there until the
  // collective after next, so a survivor that finished a collective can hand
  // its result to one that did not (see docs/recovery.md).
  std::array<std::vector<std::byte>, 2> scratch_;
  std::array<std::uint64_t, 2> retained_seq_{0, 0};
  std::array<std::size_t, 2> retained_bytes_{0, 0};
  std::uint64_t current_seq_ = 0;  // collective being executed (fault injection)
  // The deadline of the current call (RINGMEND_TIMEOUT, monotonic_ns()):
  // set on the call's first failure poll, not at its start, so that a call
  // that never waits reads no clock.
  std::uint64_t deadline_ns_ = 0;
  bool has_deadline_ = false;  // a call is running (bounded when RINGMEND_TIMEOUT is set)
  bool deadline_set_ = false;  // ... and deadline_ holds its deadline
  // Stamps this process's progress record and finds stuck node mates.
  HangDetector hang_;
  // Times the application's calls and finds the members that are late in all.
  StragglerWatch stragglers_;
  double straggler_share_ = 0;
  bool released_as_straggler_ = false;
};

template <class F>
auto Communicator::Impl::serially(F&& f) -> decltype(f()) {
  if (!queue || queue->on_queue_thread()) return f();
  using R = decltype(f());
  std::promise<R> done;
  std::future<R> result = done.get_future();
  queue->push([&] {
    try {
      if constexpr (std::is_void_v<R>) {
        f();
        done.set_value();
      } else {
        done.set_value(f());
      }
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  return result.get();
}

}  // namespace ringmend
