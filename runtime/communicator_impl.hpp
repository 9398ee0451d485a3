// The communicator's machinery: data path, failure watch and recovery.
// Private to runtime/.
#pragma once

#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ringmend/ringmend.hpp"
#include "runtime/config.hpp"
#include "runtime/fault_injection.hpp"
#include "topo/topo.hpp"
#include "transport/transport.hpp"
#include "ulfm/ulfm.hpp"

namespace ringmend {

// What each member tells the others during (re)connection. Fixed size so it
// travels in one MPI_Allgather.
struct MemberState {
  std::int64_t seq = 0;  // collective in progress (next one when idle)
  std::int32_t world_rank = -1;
  std::int32_t node_key = -1;  // control rank of this node's first rank
  std::int32_t finalizing = 0;
  std::int32_t errc = -1;           // Errc of an input error in collective seq, or -1
  std::uint32_t address_bytes = 0;  // length of the UCX address that follows
  std::int32_t pid = 0;             // watched by node peers; names the node's segment
  std::uint64_t machine = 0;        // identifies the physical machine (boot id), to count ranks per CPU
  std::uint64_t nonce = 0;          // makes the node's segment name unique
  topo::Location where;             // hwloc binding, for the local order
  char error[196] = {};
};

// One collective call, as the runtime sees it.
struct CollectiveCall {
  transport::CollectiveKind kind;
  const void* input;  // allreduce input, or broadcast buffer on the root
  void* output;       // where the result goes
  std::size_t count;  // elements (allreduce) or bytes (broadcast)
  DataType type = DataType::Int32;
  ReduceOp op = ReduceOp::Sum;
  int root = -1;
  std::size_t bytes() const;
};

struct Communicator::Impl final : transport::WaitContext {
  Impl(const Config& config, bool fault_tolerant, transport::UcxContext& ucx, MPI_Comm parent,
       const topo::Location& where);
  ~Impl() override;

  CollectiveResult run(const CollectiveCall& call);
  // Waits, fault-tolerantly, until every member is finalizing, serving any
  // survivor that still needs the result of a collective this rank finished.
  void quiesce();
  void warn_unfired_faults() const { faults_.warn_unfired(); }

  // WaitContext
  void check() override;
  void on_phase(transport::Phase phase, int step) override;
  unsigned spin_rounds() const override { return oversubscribed_ ? 0 : 4; }

  int rank = 0, size = 0;
  std::uint64_t epoch = 0;
  std::uint64_t seq = 0;  // collectives called so far
  std::vector<int> world_ranks;
  std::map<int, std::function<void(const MembershipChange&)>> callbacks;
  int next_callback_id = 0;

 private:
  struct RecoveryOutcome {
    std::vector<int> lost;  // world ranks lost
    std::vector<MemberState> states;
  };
  std::string validate(const CollectiveCall& call) const;
  void execute(const CollectiveCall& call, std::uint64_t call_seq);
  bool establish(MemberState mine, std::vector<MemberState>* states);
  // Opens this node's shared-memory segment for the coming epoch; empty
  // text on success, otherwise why it failed.
  std::string open_node_segment(const topo::Plan& plan, const std::vector<MemberState>& states);
  // The channel of the flat algorithms: routed through shared memory to
  // local ranks when the hierarchical path is on, else UCX.
  transport::Channel& flat_channel();
  void drop_node_transports();
  void adopt_plan(const topo::Plan& plan, const std::vector<MemberState>& states);
  RecoveryOutcome recover(const MemberState& mine, const std::string& cause);
  void catch_up(std::uint64_t behind_seq, const std::vector<MemberState>& states, std::size_t bytes);
  std::vector<std::byte>& scratch_for(std::uint64_t call_seq, std::size_t bytes);
  void log(const std::string& message) const;

  Config config_;
  int my_world_rank_ = -1;
  bool fault_tolerant_;
  transport::UcxContext& ucx_;
  FaultInjector faults_;
  ulfm::CommHandle ctrl_;
  std::unique_ptr<ulfm::FailureMonitor> monitor_;
  topo::Location where_;  // this rank's binding, read once (hwloc is slow to load)
  std::unique_ptr<transport::UcxChannel> channel_;
  // Hierarchical data path of this epoch: the node's shared memory and the
  // groups of topo's plan. Null / unused when the flat UCX ring is used.
  std::unique_ptr<transport::ShmNode> shm_node_;
  std::string shm_name_;
  // Point to point inside the node (a second segment, `shm_name_` + "-p2p")
  // and the channel the flat algorithms use (broadcast, catch-up): shared
  // memory to local ranks, UCX to the others. Null on the flat UCX path.
  std::unique_ptr<transport::ShmChannel> shm_channel_;
  std::unique_ptr<transport::RoutedChannel> routed_;
  transport::Hierarchy hierarchy_;
  bool oversubscribed_ = false;  // more ranks on this machine than CPUs to run them
  std::vector<std::unique_ptr<transport::UcxChannel>> retired_channels_;
  std::vector<int> ring_;
  // Results are computed into scratch_[seq % 2] and kept there until the
  // collective after next, so a survivor that finished a collective can hand
  // its result to one that did not (see docs/recovery.md).
  std::array<std::vector<std::byte>, 2> scratch_;
  std::array<std::uint64_t, 2> retained_seq_{0, 0};
  std::array<std::size_t, 2> retained_bytes_{0, 0};
  std::uint64_t current_seq_ = 0;  // collective being executed (fault injection)
  std::chrono::steady_clock::time_point deadline_;
  bool has_deadline_ = false;
};

}  // namespace ringmend
