// ringmend — an elastic, fault-tolerant allreduce runtime for MPI jobs.
//
//   ringmend::Runtime rt(&argc, &argv);      // MPI + ULFM + transports
//   auto& world = rt.world();
//   auto r = world.allreduce(std::span<float>(grad), ringmend::ReduceOp::Sum);
//   if (r.recovered) { /* members r.lost died; r.contributors ranks contributed */ }
//
// When a rank dies during a collective, the survivors revoke, agree on the
// failed set, shrink, rebuild their rings and re-execute the collective over
// their own (intact) inputs; the call then returns normally with the new
// membership. Inputs must not be modified by another thread during a call.
//
// Members and ranks: every process of the job is a member with an id that
// it keeps for the whole job (the members started with the job have their
// MPI_COMM_WORLD rank as id; a process admitted later gets a new one). Its
// rank is its position in the current membership, renumbered 0..size-1 by
// every change. Lost members are named by id.
//
// Every failure a call reports is a ringmend::Error with an Errc.
//
// Threads: one thread at a time calls a communicator's collectives; the
// non-blocking calls return a Request that any thread may wait on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ringmend/core/error.hpp"
#include "ringmend/core/log.hpp"
#include "ringmend/core/options.hpp"
#include "ringmend/core/types.hpp"

namespace ringmend {

// What a collective call reports besides its data.
struct CollectiveResult {
  // On a subgroup, `recovered` says that the call ran again after a recovery of the world.
  bool recovered = false;     // the membership changed in this call (a failure recovered, spares admitted)
  std::vector<int> lost;      // ids of the members lost during this call
  std::vector<int> joined;    // ids of the members admitted in this call (spares)
  std::vector<int> released;  // ids of the members released in this call (release())
  int contributors = 0;       // ranks whose inputs the result contains
  std::uint64_t epoch = 0;    // membership epoch after the call
  bool left = false;          // release(): this process is one of the released, and left the job
};

// Passed to membership-change callbacks after each recovery.
struct MembershipChange {
  std::uint64_t old_epoch = 0, new_epoch = 0;
  std::vector<int> lost;      // ids of the members lost in this recovery
  std::vector<int> joined;    // ids of the spares admitted (they took the lost members' ranks first)
  std::vector<int> released;  // ids of the members released on request (release())
  int old_size = 0, new_size = 0;
  int new_rank = 0;             // this process's rank in the new membership
  double recovery_seconds = 0;  // failure noticed -> membership rebuilt, of which:
  double shrink_seconds = 0;    //   revoke + shrink (MPIX_Comm_shrink agrees on the failed set)
  double rebuild_seconds = 0;   //   new plan, shared memory, UCX endpoints, agreement on the epoch
  double admit_seconds = 0;     // spares admitted and given the state (after the recovery proper), of which:
  double state_seconds = 0;     //   the registered state sent to the joiners
  std::size_t state_bytes = 0;  //   its size
  int attempts = 1;             // shrinks needed (more when ranks die during recovery)
};

// Where an allreduce's buffers live (docs/gpu.md).
enum class MemoryKind : std::uint8_t {
  Auto = 0,  // asked of CUDA per call (cudaPointerGetAttributes): GPU memory or host memory
  Host = 1,  // host memory: no CUDA call at all
  Cuda = 2,  // device memory of one GPU (an error on every rank if not)
};
struct Placement {
  MemoryKind memory = MemoryKind::Auto;
  // A cudaStream_t. With one, the call reads its input after the work
  // queued on this stream before the call, and work queued on it after
  // the call sees the result (the call itself returns once the
  // collective is complete everywhere, its last copy to the GPU queued).
  // Without one (null), input follows the work on the default stream and
  // the result is in place when the call returns.
  void* cuda_stream = nullptr;
};

// A non-blocking call in flight (Communicator::iallreduce and friends).
// Copies refer to the same call. The buffers of the call must stay valid
// and untouched until it has completed.
class Request {
 public:
  Request() = default;  // no call: complete, with an empty result
  // Waits until the call has completed; returns its result, or throws its
  // Error. May be called more than once, from any thread.
  CollectiveResult wait() const;
  // Whether the call has completed (never blocks).
  bool test() const;
  // Runs `fn` once the call has completed: on the thread that completes it
  // (the communicator's call thread), or here at once when it already has.
  // `fn` must not call collectives, and must not throw.
  void on_complete(std::function<void()> fn) const;

  struct State;
  explicit Request(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

class Subgroup;         // runtime/subgroup.hpp
struct CollectiveCall;  // runtime/communicator_impl.hpp

class Communicator {
 public:
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  std::uint64_t epoch() const;          // increases by one per recovery
  int member_id() const;                // this process's member id
  std::vector<int> member_ids() const;  // member id of each rank
  [[deprecated("use member_id()")]] int world_rank() const { return member_id(); }
  [[deprecated("use member_ids()")]] std::vector<int> world_ranks() const { return member_ids(); }
  std::uint64_t collectives_called() const;  // collective calls so far

  // Out of place (input and output must not overlap) and in place.
  CollectiveResult allreduce(const void* input, void* output, std::size_t count, DataType type, ReduceOp op);
  CollectiveResult allreduce(void* inout, std::size_t count, DataType type, ReduceOp op);

  // Buffers on a GPU, or placed explicitly: both in host memory or both on
  // one GPU (the same for every call of this process). A GPU's allreduce
  // runs NCCL inside the node where every local rank has a GPU of its own,
  // and crosses nodes through pinned host memory (docs/gpu.md).
  CollectiveResult allreduce(const void* input, void* output, std::size_t count, DataType type, ReduceOp op,
                             const Placement& where);
  CollectiveResult allreduce(void* inout, std::size_t count, DataType type, ReduceOp op,
                             const Placement& where);
  // Whether this build of ringmend takes GPU buffers (CUDA and NCCL found
  // when it was built), and whether this process can use a GPU now.
  static bool cuda_built();
  static bool cuda_usable();

  template <class T>
  CollectiveResult allreduce(std::span<T> inout, ReduceOp op) {
    return allreduce(inout.data(), inout.size(), data_type_of<T>, op);
  }
  template <class T>
  CollectiveResult allreduce(std::span<const T> input, std::span<T> output, ReduceOp op) {
    if (input.size() != output.size())
      throw Error(Errc::InvalidArgument, "allreduce: input and output spans differ in size");
    return allreduce(input.data(), output.data(), input.size(), data_type_of<T>, op);
  }

  // `root` is a rank of the current membership. If the root dies before any
  // survivor has the data, every survivor gets Error(Errc::RootLost).
  CollectiveResult broadcast(void* buffer, std::size_t bytes, int root);
  CollectiveResult barrier();

  // Every rank's `count` elements of `input`, rank r's at output[r * count]
  // (r in the order of rank()), on every rank. `output_count` is what the
  // output holds, at least size() * count; the input may lie inside it. A
  // rank that dies during the call: the call is run again over the
  // survivors, and the result holds `contributors` blocks, the survivors'
  // in their new ranks (the rest of the output is unspecified), or, if a
  // survivor had finished it before the death, every survivor gets that
  // result, with the lost rank's block (contributors: the ranks before).
  // Spares that take the lost ranks' places contribute their blocks.
  CollectiveResult allgather(const void* input, std::size_t count, DataType type, void* output,
                             std::size_t output_count);
  template <class T>
  CollectiveResult allgather(std::span<const T> input, std::span<T> output) {
    return allgather(input.data(), input.size(), data_type_of<T>, output.data(), output.size());
  }

  // Uneven allgather: rank r contributes counts[r] elements (0 allowed;
  // `counts` has size() entries, the same on every rank, else every rank
  // gets Error(Mismatch)), and every rank's output holds all of them end to
  // end in rank order, rank r's at the sum of counts[0..r). The input may be
  // this rank's own place in the output (in place), and must not overlap it
  // otherwise. A rank that dies during the call: when spares take the lost
  // ranks' places (the size, and every rank's rank, stay), the call is run
  // again with the spares' blocks (a spare passes the same counts);
  // otherwise every survivor gets Error(Errc::SizeChanged) once the
  // communicator has recovered (the counts were laid out for the old size),
  // or, if the call had ended on some rank, its result: every rank had the
  // whole output before any rank could return. Each rank receives the
  // output less its own block (coll/ring_allgather.hpp).
  CollectiveResult allgatherv(const void* input, std::span<const std::size_t> counts, DataType type,
                              void* output);

  // Alltoall: rank r sends send_counts[s] elements to rank s, the blocks
  // lying end to end in rank order in `input`, and receives recv_counts[s]
  // elements from rank s, end to end in `output` (which must not overlap
  // the input). What r sends to s must be what s receives from r: otherwise
  // every rank gets Error(Mismatch), before any data moves. Failures: as
  // allgatherv (run again with spares, else SizeChanged, or the result if
  // the call had ended on some rank). Pairwise, straight between each pair
  // (coll/pairwise_alltoall.hpp); across nodes up to 16 ranks.
  CollectiveResult alltoall(const void* input, std::span<const std::size_t> send_counts, DataType type,
                            void* output, std::span<const std::size_t> recv_counts);
  // Blocks of `count` elements both ways: input and output hold size() * count.
  CollectiveResult alltoall(const void* input, std::size_t count, DataType type, void* output);

  // `input` holds size() blocks of `count` elements; rank r's output is the
  // reduction over every rank of block r. The output must not overlap the
  // input. A rank that dies during the call: when spares take the lost
  // ranks' places (the size, and every rank's rank, stay), the call is run
  // again with the spares' inputs; otherwise every survivor gets
  // Error(Errc::SizeChanged) once the communicator has recovered (the input
  // was laid out for the old size), or, if the call had ended on some rank,
  // its result: every rank had its block before any rank could return.
  CollectiveResult reduce_scatter(const void* input, void* output, std::size_t count, DataType type,
                                  ReduceOp op);
  template <class T>
  CollectiveResult reduce_scatter(std::span<const T> input, std::span<T> output, ReduceOp op) {
    if (input.size() != output.size() * static_cast<std::size_t>(size()))
      throw Error(Errc::InvalidArgument, "reduce_scatter: the input must hold size() times the output");
    return reduce_scatter(input.data(), output.data(), output.size(), data_type_of<T>, op);
  }

  // Non-blocking: the call is queued and returns at once; the
  // communicator's call thread runs it, and every later call, in the order
  // made, while this thread goes on (docs/nonblocking.md). A failure during
  // the call is recovered as in a blocking call; the Request's wait()
  // returns the result or throws the Error. After the first non-blocking
  // call, blocking calls also run on that thread (this one waits), and
  // membership callbacks run there. rank(), size() and member_ids() are
  // the membership of the moment, which a call in flight may change.
  Request iallreduce(const void* input, void* output, std::size_t count, DataType type, ReduceOp op);
  Request iallreduce(void* inout, std::size_t count, DataType type, ReduceOp op);
  // `root`: a rank of the membership when the call runs (a change made by a
  // call queued before renumbers the ranks); ibroadcast_from_member names
  // the root by member id, which no change renumbers (Error(RootLost) on
  // every member if it is gone by then).
  Request ibroadcast(void* buffer, std::size_t bytes, int root);
  Request ibroadcast_from_member(void* buffer, std::size_t bytes, int root_member);
  Request ibarrier();
  Request iallgather(const void* input, std::size_t count, DataType type, void* output,
                     std::size_t output_count);
  Request ireduce_scatter(const void* input, void* output, std::size_t count, DataType type, ReduceOp op);
  // The counts are copied: they need not outlive the call.
  Request iallgatherv(const void* input, std::span<const std::size_t> counts, DataType type, void* output);
  Request ialltoall(const void* input, std::span<const std::size_t> send_counts, DataType type, void* output,
                    std::span<const std::size_t> recv_counts);

  // Called on every member after each membership change, before the
  // interrupted collective is re-executed; every member runs it in the same
  // call (docs/recovery.md). Returns an id for remove_membership_callback.
  int on_membership_change(std::function<void(const MembershipChange&)> callback);
  void remove_membership_callback(int id);

  // State that follows membership changes (docs/elastic.md): when spares
  // are admitted, a survivor sends every registered entry to them before
  // the call that admits them goes on. On a process admitted as a spare,
  // registering a name restores it at once from what the survivors sent,
  // so the same registration code, run after the Runtime starts, resumes a
  // joiner at the survivors' step. A buffer must stay valid while
  // registered; callbacks run inside the call that admits spares and must
  // not call collectives. Throws Error(InvalidArgument) for an empty or
  // repeated name, or a buffer of another size than the survivors'.
  void register_state(const std::string& name, void* data, std::size_t bytes);
  template <class T>
  void register_state(const std::string& name, std::span<T> data) {
    register_state(name, data.data(), data.size_bytes());
  }
  void register_state(const std::string& name, std::function<std::vector<std::byte>()> save,
                      std::function<void(std::span<const std::byte>)> load);
  bool unregister_state(const std::string& name);
  // Whether this process was admitted as a spare (its registered state is
  // restored from a survivor's), rather than started as a member.
  bool joined() const;

  // Membership on request (docs/elastic.md). Collective: every member calls
  // it between collectives with the same arguments (else every member gets
  // Error(Mismatch), or Error(InvalidArgument) for a bad argument). Each
  // counts as one collective call; a failure during it is recovered as in
  // any call, and the result reports it.
  //
  // grow: admits up to `count` waiting spares (ringmend-run --spares) as
  // ranks size()..size()+count-1; they receive the registered state and
  // take part from the members' next call on. Fewer join when fewer wait:
  // the result's `joined` names those admitted. The job keeps the new size
  // (policy replace). Without spares: Error(InvalidArgument).
  CollectiveResult grow(int count);
  // release: the members at `ranks` (ranks of the current membership) leave
  // the job; the others go on without them, renumbered in order, and the job
  // keeps the smaller size. On a released member the call returns with
  // `left` set: it takes part in no collective after (Error(Released)), and
  // the end of its Runtime closes its transports and skips MPI_Finalize
  // (which in a fault-tolerant Open MPI waits for the whole job), so that the
  // process can exit at once with status 0. Releasing every member is
  // Error(InvalidArgument). Needs fault tolerance.
  CollectiveResult release(std::span<const int> ranks);
  CollectiveResult release(std::initializer_list<int> ranks) {
    return release(std::span<const int>(ranks.begin(), ranks.size()));
  }
  // release() of the last `count` ranks.
  CollectiveResult release_last(int count);
  // Whether this process was released (it left the job).
  bool left() const;

  // Subgroups (docs/subgroups.md): communicators over some of the world's
  // ranks, with every collective call above (in their own ranks) and
  // their own order of calls. They view the world's membership: a
  // subgroup's member that dies ends that subgroup with Error(MemberLost)
  // on its survivors (subgroups do not recover yet; the world does, at its
  // next call), while the other subgroups go on. Made on the world only,
  // under mpirun (not yet under the native membership of plain srun);
  // destroy them before the Runtime. Requests for membership (grow,
  // release), state and callbacks belong to the world.
  //
  // split: a collective of the world. Ranks that pass the same `color`
  // form one subgroup, ordered by (key, rank); kNoColor returns null.
  static constexpr int kNoColor = -1;
  std::unique_ptr<Communicator> split(int color, int key);
  // group: called by the ranks listed only (ranks of the world, this one
  // among them), each with the same list, which is the subgroup's rank
  // order (torch's new_group). Lists that differ between the ranks are not
  // detected (as MPI_Comm_create_group's): use split() where every rank
  // can take part.
  std::unique_ptr<Communicator> group(std::span<const int> ranks);
  // A subgroup, not the world.
  bool is_subgroup() const { return subgroup_ != nullptr; }

  struct Impl;

 private:
  friend class Runtime;
  explicit Communicator(std::unique_ptr<Impl> impl);
  Communicator(Impl& world, std::shared_ptr<Subgroup> subgroup);
  // The world's machinery, for a call that only the world takes.
  Impl& world_only(const char* what) const;
  CollectiveResult run_call(const CollectiveCall& call);
  Request queue_call(const CollectiveCall& call);
  std::unique_ptr<Communicator> make_subgroup(std::vector<int> members, const std::string& name);
  std::unique_ptr<Impl> impl_;          // the world's: null on a subgroup
  Impl* world_ = nullptr;               // the world's, on every communicator
  std::shared_ptr<Subgroup> subgroup_;  // null on the world
};

// A buffer of state registered before the Runtime starts (Runtime's
// `state`): a spare admitted later receives the survivors' bytes straight
// into it, instead of into memory of its own that registration then copies
// from. For large state (a model) that copy costs as much as the transfer.
struct StateBuffer {
  std::string name;
  void* data = nullptr;
  std::size_t bytes = 0;
};

class Runtime {
 public:
  // Initialises MPI (MPI_THREAD_SERIALIZED) unless it already is, installs
  // error handlers that return, and connects the world communicator.
  // Except under srun: there the native membership runs the job without
  // MPI (docs/slurm.md), and a program that calls MPI itself starts it
  // before the Runtime (ringmend then uses MPI's start-up; a task's death
  // ends the step, as Slurm's PMIx server decides).
  // `options` sets any setting in code (core/options.hpp); what it leaves
  // unset comes from the RINGMEND_* variables (docs/environment.md).
  // `state` is registered on the world (register_state) before a spare
  // starts waiting; the application does not register those names again.
  Runtime(int* argc, char*** argv, Options options = {}, std::vector<StateBuffer> state = {});
  ~Runtime();  // bounded: never hangs in MPI_Finalize after failures
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  Communicator& world();
  const Settings& settings() const;            // every setting, as resolved
  bool fault_tolerant() const;                 // ULFM built in and enabled at launch
  std::string fault_tolerance_status() const;  // one line explaining the above
  // This node's IPv4 address on the control network ringmend uses
  // (RINGMEND_CONTROL_INTERFACE, else the first interface up): where a
  // service of the job's (a key-value store) is reachable from the others.
  std::string control_address() const;
  // The application is failing in a way no C++ exception carries (an
  // uncaught error of the Python interpreter): if the shutdown's watchdog
  // must end this process, it ends with status 1, not 0, and the launcher
  // is told of an error.
  void application_failed();

  struct Impl;

 private:
  void start(int* argc, char*** argv, const std::vector<StateBuffer>& state);
  std::unique_ptr<Impl> impl_;
};

// The mpirun arguments that turn ULFM fault tolerance on (one list, shared
// by the tests, the examples and the launcher).
std::vector<std::string> ft_mpirun_args();

const char* version();

}  // namespace ringmend
