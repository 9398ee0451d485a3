// Collective calls and their recovery.
//
// A call runs its algorithm on the current channel. If a wait is interrupted
// (a peer died, the control communicator was revoked), or a neighbour's
// header shows the call is inconsistent, the rank revokes, shrinks with the
// other survivors, rebuilds its channel and then either re-executes the call
// over the survivors' inputs, receives the result from a survivor that had
// already finished it, or raises the input error on every rank.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "runtime/communicator_impl.hpp"
#include "topo/topo.hpp"

namespace ringmend {
namespace {

using Clock = std::chrono::steady_clock;

// Chunk buffers per rank in the node's segment (pipeline depth), and how
// long a rank waits for its node leader to create the segment.
constexpr std::size_t kShmDepth = 4;
constexpr double kShmOpenTimeoutSeconds = 30;
// The node's point-to-point rings (broadcast, catch-up between local ranks):
// smaller than the benchmark's defaults, since a node of n ranks has
// n(n-1) of them: 4 x 64 KiB, about 14 MiB of shared memory for 8 ranks.
constexpr std::size_t kShmChannelSlotBytes = 64 * 1024;
constexpr int kShmChannelSlots = 4;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

FaultPhase fault_phase_of(transport::Phase p) {
  switch (p) {
    case transport::Phase::Start:
      return FaultPhase::Start;
    case transport::Phase::ReduceScatter:
      return FaultPhase::ReduceScatter;
    case transport::Phase::Allgather:
      return FaultPhase::Allgather;
    case transport::Phase::Broadcast:
      return FaultPhase::Broadcast;
    case transport::Phase::End:
      return FaultPhase::End;
  }
  return FaultPhase::Start;
}

// The kernel's boot id identifies a machine (hashed to 64 bits); 0 when unreadable.
std::uint64_t machine_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id.empty() ? 0 : std::hash<std::string>{}(id) | 1;
}

// Thrown inside run() for an invalid argument on this rank; it is raised
// on every rank through the recovery state exchange.
struct LocalInputError {
  std::string text;
};

void copy_text(char (&dst)[196], const std::string& src) {
  std::snprintf(dst, sizeof dst, "%s", src.c_str());
}

}  // namespace

std::size_t CollectiveCall::bytes() const {
  return kind == transport::CollectiveKind::Allreduce ? count * size_of(type) : count;
}

Communicator::Impl::Impl(const Config& config, bool fault_tolerant, transport::UcxContext& ucx,
                         MPI_Comm parent, const topo::Location& where)
    : config_(config), fault_tolerant_(fault_tolerant), ucx_(ucx), where_(where) {
  MPI_Comm dup = MPI_COMM_NULL;
  if (int rc = MPI_Comm_dup(parent, &dup); rc != MPI_SUCCESS)
    throw Error(Errc::Internal, "MPI_Comm_dup failed: " + ulfm::error_string(rc));
  ctrl_ = ulfm::CommHandle(dup);
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  MPI_Comm_rank(dup, &rank);
  MPI_Comm_size(dup, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &my_world_rank_);
  faults_ = FaultInjector(parse_fault_spec(config_.fault_spec), my_world_rank_, config_.fault_record);

  MemberState mine;
  mine.seq = 1;
  std::vector<MemberState> states;
  if (!establish(mine, &states)) {
    // A rank died while we were connecting: connect the survivors.
    RecoveryOutcome r = recover(mine, "a failure during start-up");
    (void)r;
  }
}

Communicator::Impl::~Impl() {
  monitor_.reset();
  drop_node_transports();
  channel_.reset();
  retired_channels_.clear();
}

void Communicator::Impl::log(const std::string& message) const {
  if (!config_.verbose) return;
  std::fprintf(stderr, "[ringmend %d/%d e%llu] %s\n", rank, size, static_cast<unsigned long long>(epoch),
               message.c_str());
}

std::vector<std::byte>& Communicator::Impl::scratch_for(std::uint64_t call_seq, std::size_t bytes) {
  auto& s = scratch_[call_seq % 2];
  if (s.size() < bytes) s.resize(bytes);
  return s;
}

// ---------------------------------------------------------------- waiting

void Communicator::Impl::check() {
  if (monitor_ && monitor_->failure_noticed())
    throw transport::Interrupted("MPI reported a failed process or a revoked communicator");
  if (has_deadline_ && Clock::now() > deadline_)
    throw Error(Errc::Timeout, "collective #" + std::to_string(current_seq_) + " did not complete within " +
                                   std::to_string(config_.timeout_seconds) +
                                   " s (RINGMEND_TIMEOUT); is every rank calling it?");
}

void Communicator::Impl::on_phase(transport::Phase phase, int step) {
  if (faults_.armed()) faults_.at(fault_phase_of(phase), current_seq_, step, epoch);
}

// ------------------------------------------------------------- collectives

std::string Communicator::Impl::validate(const CollectiveCall& c) const {
  // Built only when needed: validation runs on every call, also the 4-byte ones.
  struct At {
    const CollectiveCall& c;
    int rank;
    operator std::string() const {
      return std::string(c.kind == transport::CollectiveKind::Allreduce ? "allreduce" : "broadcast") +
             " on rank " + std::to_string(rank) + ": ";
    }
    std::string operator+(const std::string& rest) const { return std::string(*this) + rest; }
    std::string operator+(const char* rest) const { return std::string(*this) + rest; }
  } at{c, rank};
  if (c.kind == transport::CollectiveKind::Allreduce) {
    if (!is_valid(c.type)) return at + "unsupported data type " + std::to_string(static_cast<int>(c.type));
    if (!is_valid(c.op)) return at + "unsupported reduction " + std::to_string(static_cast<int>(c.op));
    if (c.count > 0 && (c.input == nullptr || c.output == nullptr))
      return at + "null buffer with count " + std::to_string(c.count);
    const auto* in = static_cast<const std::byte*>(c.input);
    const auto* out = static_cast<const std::byte*>(c.output);
    const std::size_t b = c.bytes();
    if (c.count > 0 && in != out && in < out + b && out < in + b)
      return at + "input and output overlap without being the same buffer (use the in-place call)";
  } else {
    if (c.root < 0 || c.root >= size)
      return at + "root " + std::to_string(c.root) + " is not a rank of this communicator (size " +
             std::to_string(size) + ")";
    if (c.count > 0 && c.output == nullptr)
      return at + "null buffer with " + std::to_string(c.count) + " bytes";
  }
  return {};
}

void Communicator::Impl::execute(const CollectiveCall& c, std::uint64_t call_seq) {
  const std::size_t bytes = c.bytes();
  // On one node, out of place, the result goes straight into the caller's
  // buffer and nothing is retained: there, a survivor that finished a call
  // implies that every slice of it was reduced, so every other survivor
  // finishes it too and nobody ever needs a catch-up. (In place, the input
  // must stay untouched until the call completes, for a re-execution.)
  if (c.kind == transport::CollectiveKind::Allreduce && shm_node_ && !hierarchy_.multi_node() &&
      c.input != c.output) {
    transport::AllreduceArgs a{c.input, c.output, c.count, c.type, c.op, call_seq};
    transport::hierarchical_allreduce(*shm_node_, nullptr, hierarchy_, a, *this, {config_.small_bytes});
    retained_seq_[call_seq % 2] = 0;
    return;
  }
  // The result is retained (for a survivor that misses the end of this
  // call). Out of place, the algorithms write the caller's buffer and copy
  // each final part into the retained buffer while it is in cache; in
  // place, the input must stay intact until the end, so they write the
  // retained buffer, copied out at the end.
  auto& out = scratch_for(call_seq, bytes);
  bool copy_out = true;
  if (c.kind == transport::CollectiveKind::Allreduce) {
    transport::AllreduceArgs a{c.input, out.data(), c.count, c.type, c.op, call_seq};
    if (c.input != c.output) {
      a.output = c.output;
      a.retain = out.data();
      copy_out = false;
    }
    if (shm_node_)
      transport::hierarchical_allreduce(*shm_node_, channel_.get(), hierarchy_, a, *this,
                                        {config_.small_bytes});
    else if (bytes <= config_.small_bytes)
      transport::recursive_doubling_allreduce(*channel_, ring_, a, *this);
    else
      transport::ring_allreduce(*channel_, ring_, a, *this, config_.chunk_bytes);
  } else {
    if (rank == c.root) std::memcpy(out.data(), c.input, bytes);
    transport::BroadcastArgs a{out.data(), bytes, c.root, call_seq};
    transport::chain_broadcast(flat_channel(), ring_, a, *this, config_.chunk_bytes);
  }
  retained_seq_[call_seq % 2] = call_seq;
  retained_bytes_[call_seq % 2] = bytes;
  if (copy_out) std::memcpy(c.output, out.data(), bytes);
}

CollectiveResult Communicator::Impl::run(const CollectiveCall& call) {
  const std::uint64_t call_seq = ++seq;
  current_seq_ = call_seq;
  CollectiveResult result;
  const std::string input_error = validate(call);
  if (!input_error.empty() && !fault_tolerant_) throw Error(Errc::InvalidArgument, input_error);
  if (input_error.empty() && call.bytes() == 0) {  // a no-op, like MPI with count 0
    result.contributors = size;
    result.epoch = epoch;
    return result;
  }
  // The deadline covers this call only, however it ends.
  has_deadline_ = config_.timeout_seconds > 0;
  struct DeadlineOff {
    bool& flag;
    ~DeadlineOff() { flag = false; }
  } deadline_off{has_deadline_};
  deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(config_.timeout_seconds));
  const int size_at_start = size;
  CollectiveCall c = call;  // the root is renumbered after a shrink
  const int root_world = c.kind == transport::CollectiveKind::Broadcast && c.root >= 0 && c.root < size
                             ? world_ranks[static_cast<std::size_t>(c.root)]
                             : -1;
  bool catching_up = false;
  std::vector<MemberState> states;
  for (;;) {
    std::string cause, error_text;
    int errc = -1;
    try {
      if (!input_error.empty()) throw LocalInputError{input_error};
      if (catching_up) {
        // Another survivor finished this collective before the failure: take
        // its result, which contains every original contribution.
        catch_up(call_seq, states, call.bytes());
        std::memcpy(call.output, scratch_[call_seq % 2].data(), call.bytes());
        retained_seq_[call_seq % 2] = call_seq;
        retained_bytes_[call_seq % 2] = call.bytes();
        result.contributors = size_at_start;
      } else {
        const bool ahead =
            !states.empty() && std::any_of(states.begin(), states.end(), [&](const MemberState& s) {
              return s.seq < static_cast<std::int64_t>(call_seq) && !s.finalizing;
            });
        if (ahead) catch_up(call_seq - 1, states, retained_bytes_[(call_seq - 1) % 2]);
        states.clear();
        execute(c, call_seq);
        result.contributors = size;
      }
      result.epoch = epoch;
      return result;
    } catch (const transport::Interrupted& e) {
      cause = e.what();
    } catch (const transport::Mismatch& e) {
      cause = "inconsistent call";
      error_text = e.what();
      errc = static_cast<int>(Errc::Mismatch);
    } catch (const LocalInputError& e) {
      cause = "invalid argument";
      error_text = e.text;
      errc = static_cast<int>(Errc::InvalidArgument);
    }
    if (!fault_tolerant_)
      throw Error(errc >= 0 ? static_cast<Errc>(errc) : Errc::FaultToleranceUnavailable,
                  errc >= 0
                      ? error_text
                      : "a rank failed (" + cause +
                            ") and this job runs without fault tolerance; launch with "
                            "ringmend-run (or mpirun with ringmend's FT arguments) and an MPI with ULFM");
    MemberState mine;
    mine.seq = static_cast<std::int64_t>(call_seq);
    mine.errc = errc;
    copy_text(mine.error, error_text);
    RecoveryOutcome r = recover(mine, cause);
    result.recovered = true;
    result.lost.insert(result.lost.end(), r.lost.begin(), r.lost.end());
    states = std::move(r.states);
    // An input error anywhere is raised everywhere.
    auto bad = std::find_if(states.begin(), states.end(), [](const MemberState& s) { return s.errc >= 0; });
    if (bad != states.end()) {
      std::int64_t max_seq = 0;
      for (const auto& s : states) max_seq = std::max(max_seq, s.seq);
      seq = static_cast<std::uint64_t>(std::max<std::int64_t>(max_seq, static_cast<std::int64_t>(call_seq)));
      throw Error(static_cast<Errc>(bad->errc), bad->error);
    }
    // A member that finalized while we are in a collective will never join it.
    for (const auto& s : states)
      if (s.finalizing && s.seq == static_cast<std::int64_t>(call_seq)) {
        throw Error(Errc::Mismatch, "world rank " + std::to_string(s.world_rank) +
                                        " finalized while this rank called collective #" +
                                        std::to_string(call_seq));
      }
    catching_up = std::any_of(states.begin(), states.end(), [&](const MemberState& s) {
      return s.seq > static_cast<std::int64_t>(call_seq);
    });
    if (c.kind == transport::CollectiveKind::Broadcast && !catching_up) {
      // Re-executing needs the root's data: gone if the root is.
      auto it = std::find(world_ranks.begin(), world_ranks.end(), root_world);
      if (it == world_ranks.end()) {
        throw Error(Errc::RootLost, "broadcast #" + std::to_string(call_seq) + ": its root (world rank " +
                                        std::to_string(root_world) +
                                        ") failed before any survivor had the data");
      }
      c.root = static_cast<int>(it - world_ranks.begin());
    }
  }
}

// ---------------------------------------------------------------- recovery

void Communicator::Impl::catch_up(std::uint64_t behind_seq, const std::vector<MemberState>& states,
                                  std::size_t bytes) {
  int root = -1;
  for (int r = 0; r < size && root < 0; ++r)
    if (states[static_cast<std::size_t>(r)].seq > static_cast<std::int64_t>(behind_seq)) root = r;
  if (root < 0 || bytes == 0) return;
  if (rank == root && retained_seq_[behind_seq % 2] != behind_seq)
    throw Error(Errc::Internal, "catch-up: the result of collective #" + std::to_string(behind_seq) +
                                    " is no longer retained");
  log("handing the result of collective #" + std::to_string(behind_seq) + " from rank " +
      std::to_string(root) + " to the survivors that missed it");
  auto& buf = scratch_for(behind_seq, bytes);
  transport::BroadcastArgs a{buf.data(), bytes, root, behind_seq};
  transport::chain_broadcast(flat_channel(), ring_, a, *this, config_.chunk_bytes);
}

bool Communicator::Impl::establish(MemberState mine, std::vector<MemberState>* states) {
  MPI_Comm comm = ctrl_.get();
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  mine.world_rank = my_world_rank_;
  mine.pid = static_cast<std::int32_t>(::getpid());
  mine.nonce = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  mine.where = where_;
  mine.machine = machine_id();
  bool ok = true;
  // Where the time of a rebuild goes, for RINGMEND_VERBOSE.
  std::string laps;
  auto lap_start = Clock::now();
  auto lap = [&](const char* what) {
    if (!config_.verbose) return;
    char text[64];
    std::snprintf(text, sizeof text, "%s%s %.1f ms", laps.empty() ? "" : ", ", what,
                  seconds_since(lap_start) * 1e3);
    laps += text;
    lap_start = Clock::now();
  };

  // Ranks sharing a node, from MPI (not from host names, which two "nodes"
  // of one machine may share).
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    ulfm::CommHandle node_comm(node);
    ulfm::GroupHandle node_group, group;
    MPI_Comm_group(node, node_group.out());
    MPI_Comm_group(comm, group.out());
    int first = 0;
    MPI_Group_translate_ranks(node_group.get(), 1, &first, group.get(), &mine.node_key);
  } else {
    ok = false;
  }

  lap("node split");
  channel_ = std::make_unique<transport::UcxChannel>(ucx_, rank, size, static_cast<std::uint32_t>(epoch + 1));
  lap("UCX worker");
  const std::vector<std::byte> address = channel_->local_address();
  mine.address_bytes = static_cast<std::uint32_t>(address.size());
  states->assign(static_cast<std::size_t>(size), MemberState{});
  std::vector<std::byte> addresses;
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  if (ok)
    ok = MPI_Allgather(&mine, sizeof mine, MPI_BYTE, states->data(), sizeof mine, MPI_BYTE, comm) ==
         MPI_SUCCESS;
  if (ok) {
    int total = 0;
    for (int r = 0; r < size; ++r) {
      counts[static_cast<std::size_t>(r)] =
          static_cast<int>((*states)[static_cast<std::size_t>(r)].address_bytes);
      displs[static_cast<std::size_t>(r)] = total;
      total += counts[static_cast<std::size_t>(r)];
    }
    addresses.resize(static_cast<std::size_t>(total));
    ok = MPI_Allgatherv(address.data(), static_cast<int>(address.size()), MPI_BYTE, addresses.data(),
                        counts.data(), displs.data(), MPI_BYTE, comm) == MPI_SUCCESS;
  }

  lap("state exchange");
  // The plan, computed identically on every rank; then this node's shared
  // memory when the hierarchical path applies.
  topo::Plan plan;
  shm_name_.clear();
  bool want_shm = false;
  std::string shm_error;
  std::vector<topo::Location> where(static_cast<std::size_t>(size));
  if (ok) {
    std::vector<int> node_of(static_cast<std::size_t>(size));
    for (std::size_t i = 0; i < node_of.size(); ++i) {
      node_of[i] = (*states)[i].node_key;
      where[i] = (*states)[i].where;
    }
    plan = topo::make_plan(node_of, where, rank);
    const bool some_node_shared = std::any_of(plan.nodes.begin(), plan.nodes.end(),
                                              [](const std::vector<int>& n) { return n.size() > 1; });
    want_shm = config_.shm && some_node_shared;
    lap("plan");
    if (want_shm) shm_error = open_node_segment(plan, *states);
    lap("shared memory");
    if (faults_.armed()) faults_.at(FaultPhase::Attach, current_seq_, 0, epoch);
  }
  if (!ok) ulfm::revoke(comm);  // make sure nobody waits for this rank
  // Agreement makes the outcome uniform: either every survivor goes on with
  // this membership, or every survivor shrinks again. Bit 1: every node has
  // its shared memory.
  int flag = (ok ? 1 : 0) | (want_shm && shm_error.empty() ? 2 : 0);
  const int rc = ulfm::agree(comm, flag);
  lap("agreement");
  // Every local rank has attached (or given up): the name can go.
  if (!shm_name_.empty()) transport::ShmSegment::unlink_name(shm_name_);
  if (!shm_name_.empty()) transport::ShmSegment::unlink_name(shm_name_ + "-p2p");
  if (rc != MPI_SUCCESS || !(flag & 1)) {
    drop_node_transports();
    return false;
  }
  retired_channels_.clear();  // every survivor has left the old epochs
  if (want_shm && !(flag & 2)) {
    if (!shm_error.empty() || rank == 0)
      std::fprintf(stderr, "ringmend: shared memory unavailable (%s); using UCX inside nodes too\n",
                   shm_error.empty() ? "on another node" : shm_error.c_str());
    drop_node_transports();
  }
  adopt_plan(plan, *states);

  std::vector<std::vector<std::byte>> per_rank(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    const auto i = static_cast<std::size_t>(r);
    per_rank[i].assign(addresses.begin() + displs[i], addresses.begin() + displs[i] + counts[i]);
  }
  // Endpoints to every peer this rank exchanges with: ring neighbours (flat
  // ring and rail ring) and its recursive-doubling partners (among the node
  // leaders, or among all ranks on the flat path).
  std::vector<int> peers;
  auto add_neighbours = [&](const std::vector<int>& ring) {
    const auto n = ring.size();
    const auto pos = static_cast<std::size_t>(std::find(ring.begin(), ring.end(), rank) - ring.begin());
    if (n < 2 || pos == n) return;
    peers.push_back(ring[(pos + 1) % n]);
    peers.push_back(ring[(pos + n - 1) % n]);
  };
  add_neighbours(ring_);
  auto add = [&](const std::vector<int>& more) { peers.insert(peers.end(), more.begin(), more.end()); };
  if (shm_node_) {
    add_neighbours(hierarchy_.rail_ring);
    add(transport::recursive_doubling_peers(hierarchy_.leaders, rank));
  } else {
    add(transport::recursive_doubling_peers(ring_, rank));  // the flat latency path
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  if (shm_channel_) {
    // Ranks of this node are reached through shared memory: no endpoints.
    std::vector<int> local_index(static_cast<std::size_t>(size), -1);
    for (std::size_t i = 0; i < hierarchy_.local_ranks.size(); ++i)
      local_index[static_cast<std::size_t>(hierarchy_.local_ranks[i])] = static_cast<int>(i);
    std::erase_if(peers, [&](int p) { return local_index[static_cast<std::size_t>(p)] >= 0; });
    routed_ = std::make_unique<transport::RoutedChannel>(*shm_channel_, *channel_, std::move(local_index));
  }
  channel_->connect(per_rank, peers);
  monitor_ = std::make_unique<ulfm::FailureMonitor>(comm);
  lap("endpoints");
  log("epoch " + std::to_string(epoch + 1) + " set up: " + laps);
  if (config_.debug_topo && rank == 0) {
    std::fprintf(stderr, "[ringmend topo] epoch %llu, %s data path\n%s",
                 static_cast<unsigned long long>(epoch + 1),
                 shm_node_ ? "hierarchical (shared memory + UCX rails)" : "flat UCX ring",
                 topo::describe(plan, where, world_ranks).c_str());
  }
  return true;
}

std::string Communicator::Impl::open_node_segment(const topo::Plan& plan,
                                                  const std::vector<MemberState>& states) {
  const std::vector<int>& local = plan.nodes[static_cast<std::size_t>(plan.node)];
  const MemberState& leader = states[static_cast<std::size_t>(local.front())];
  char name[96];
  std::snprintf(name, sizeof name, "/ringmend-%d-%016llx-e%llu", leader.pid,
                static_cast<unsigned long long>(leader.nonce), static_cast<unsigned long long>(epoch + 1));
  shm_name_ = name;
  std::vector<pid_t> pids;
  for (int r : local) pids.push_back(states[static_cast<std::size_t>(r)].pid);
  const auto layout = transport::ShmLayout::make(static_cast<int>(local.size()), config_.shm_chunk_bytes,
                                                 kShmDepth, config_.small_bytes);
  const auto channel_layout = transport::ShmChannelLayout::make(static_cast<int>(local.size()),
                                                                kShmChannelSlotBytes, kShmChannelSlots);
  try {
    MPI_Comm comm = ctrl_.get();
    const auto give_up = [comm] {
      // The probe drives MPI's progress, which is how a
      // revocation or a failure notice arrives.
      int flag = 0;
      return MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
             ulfm::is_revoked(comm);
    };
    shm_node_ =
        transport::ShmNode::open(shm_name_, layout, plan.local, pids, kShmOpenTimeoutSeconds, give_up);
    shm_channel_ = std::make_unique<transport::ShmChannel>(
        transport::ShmSegment::open_shared(shm_name_ + "-p2p", channel_layout.total, plan.local == 0,
                                           pids.at(0), kShmOpenTimeoutSeconds, give_up),
        channel_layout, plan.local, pids);
  } catch (const std::exception& e) {
    drop_node_transports();
    return e.what();
  }
  return {};
}

transport::Channel& Communicator::Impl::flat_channel() {
  if (routed_) return *routed_;
  return *channel_;
}

void Communicator::Impl::drop_node_transports() {
  routed_.reset();  // refers to the two channels
  shm_channel_.reset();
  shm_node_.reset();
}

void Communicator::Impl::adopt_plan(const topo::Plan& plan, const std::vector<MemberState>& states) {
  world_ranks.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r)
    world_ranks[static_cast<std::size_t>(r)] = states[static_cast<std::size_t>(r)].world_rank;
  ring_ = plan.ring;
  // Two "nodes" may be one machine (the local Slurm cluster): count ranks per
  // machine, not per node.
  const auto mine = states[static_cast<std::size_t>(rank)].machine;
  const auto here =
      std::count_if(states.begin(), states.end(), [&](const MemberState& s) { return s.machine == mine; });
  oversubscribed_ = here > static_cast<long>(std::thread::hardware_concurrency());
  if (shm_node_) shm_node_->set_oversubscribed(oversubscribed_);
  hierarchy_ = {};
  if (!shm_node_) return;
  hierarchy_.local_ranks = plan.nodes[static_cast<std::size_t>(plan.node)];
  for (std::size_t i = 0; i < plan.nodes.size(); ++i)
    hierarchy_.leaders.push_back(plan.leader(static_cast<int>(i)));
  if (plan.rail >= 0) hierarchy_.rail_ring = plan.rails[static_cast<std::size_t>(plan.rail)];
  hierarchy_.rails = static_cast<int>(plan.rails.size());
}

Communicator::Impl::RecoveryOutcome Communicator::Impl::recover(const MemberState& mine,
                                                                const std::string& cause) {
  const auto start = Clock::now();
  const std::uint64_t old_epoch = epoch;
  const int old_size = size;
  RecoveryOutcome out;
  double shrink_seconds = 0, rebuild_seconds = 0;
  int attempts = 0;
  if (config_.verbose) {
    std::string failed;
    for (int r : ulfm::known_failed(ctrl_.get())) failed += " " + std::to_string(r);
    log("failure noticed in collective #" + std::to_string(mine.seq) + " (" + cause +
        "): recovering; ranks MPI already reports failed:" + (failed.empty() ? " none" : failed));
  }
  for (int attempt = 0;; ++attempt) {
    if (seconds_since(start) > config_.recovery_timeout_seconds)
      throw Error(Errc::Internal, "recovery did not complete within " +
                                      std::to_string(config_.recovery_timeout_seconds) +
                                      " s (RINGMEND_RECOVERY_TIMEOUT)");
    if (faults_.armed()) faults_.at(FaultPhase::Recovery, current_seq_, attempt, epoch);
    monitor_.reset();
    // Stop using the old channel but keep its worker listening until the new
    // membership is agreed: a survivor that is still connecting to it (it
    // has not noticed the failure yet) must not be refused, which UCX's TCP
    // transport treats as fatal.
    drop_node_transports();  // the next epoch gets fresh segments
    if (channel_) {
      channel_->abandon();
      retired_channels_.push_back(std::move(channel_));
    }
    int rc = MPI_SUCCESS;
    const auto shrink_start = Clock::now();
    ulfm::ShrinkOutcome shrunk = ulfm::revoke_and_shrink(ctrl_.get(), rc);
    shrink_seconds += seconds_since(shrink_start);
    attempts = attempt + 1;
    if (rc != MPI_SUCCESS) {
      log("shrink failed (" + ulfm::error_string(rc) + "), retrying");
      continue;
    }
    // Lost members, as world ranks, in old-communicator order.
    for (auto it = shrunk.lost_members.rbegin(); it != shrunk.lost_members.rend(); ++it) {
      out.lost.push_back(world_ranks[static_cast<std::size_t>(*it)]);
      world_ranks.erase(world_ranks.begin() + *it);
    }
    ctrl_ = std::move(shrunk.comm);
    if (faults_.armed()) faults_.at(FaultPhase::Rebuild, current_seq_, attempt, epoch);
    const auto rebuild_start = Clock::now();
    const bool established = establish(mine, &out.states);
    rebuild_seconds += seconds_since(rebuild_start);
    if (established) break;
    log("a failure interrupted the rebuild; recovering again");
  }
  ++epoch;
  std::sort(out.lost.begin(), out.lost.end());
  MembershipChange change{
      old_epoch,      epoch,           out.lost, old_size, size, rank, seconds_since(start),
      shrink_seconds, rebuild_seconds, attempts};
  std::string lost_text;
  for (int w : out.lost) {
    if (!lost_text.empty()) lost_text += ',';
    lost_text += std::to_string(w);
  }
  log("recovered in " + std::to_string(change.recovery_seconds * 1e3) + " ms (shrink " +
      std::to_string(shrink_seconds * 1e3) + " ms, rebuild " + std::to_string(rebuild_seconds * 1e3) +
      " ms, " + std::to_string(attempts) + " attempt(s)): lost world ranks [" + lost_text + "], " +
      std::to_string(old_size) + " -> " + std::to_string(size) + " ranks");
  for (auto& [id, callback] : callbacks) callback(change);
  return out;
}

void Communicator::Impl::quiesce() {
  if (!ctrl_) return;
  if (!fault_tolerant_) {
    // No recovery to serve, but a rank must not close its endpoints while a
    // peer still receives the last collective's data from it.
    MPI_Barrier(ctrl_.get());
    return;
  }
  for (;;) {
    // A non-blocking agreement, so that a survivor that needs this rank in a
    // recovery (it revokes) is noticed while waiting. A plain failure is
    // reported by the agreement itself, to every finalizing rank alike.
    bool done = false;
    MPI_Comm comm = ctrl_.get();
    if (ulfm::agree_while(
            comm, [comm] { return ulfm::is_revoked(comm); }, done) &&
        done)
      return;
    MemberState mine;
    mine.seq = static_cast<std::int64_t>(seq + 1);
    mine.finalizing = 1;
    RecoveryOutcome r = recover(mine, "failure while finalizing");
    const bool someone_behind = std::any_of(r.states.begin(), r.states.end(), [&](const MemberState& s) {
      return s.seq == static_cast<std::int64_t>(seq) && !s.finalizing;
    });
    if (!someone_behind) continue;
    try {
      catch_up(seq, r.states, retained_bytes_[seq % 2]);
    } catch (const transport::Interrupted&) {
    } catch (const transport::Mismatch&) {
    }
  }
}

// ------------------------------------------------------------- the facade

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;
int Communicator::rank() const { return impl_->rank; }
int Communicator::size() const { return impl_->size; }
std::uint64_t Communicator::epoch() const { return impl_->epoch; }
int Communicator::world_rank() const { return impl_->world_ranks[static_cast<std::size_t>(impl_->rank)]; }
const std::vector<int>& Communicator::world_ranks() const { return impl_->world_ranks; }
std::uint64_t Communicator::collectives_called() const { return impl_->seq; }

CollectiveResult Communicator::allreduce(const void* input, void* output, std::size_t count, DataType type,
                                         ReduceOp op) {
  return impl_->run({transport::CollectiveKind::Allreduce, input, output, count, type, op, -1});
}

CollectiveResult Communicator::allreduce(void* inout, std::size_t count, DataType type, ReduceOp op) {
  return impl_->run({transport::CollectiveKind::Allreduce, inout, inout, count, type, op, -1});
}

CollectiveResult Communicator::broadcast(void* buffer, std::size_t bytes, int root) {
  return impl_->run(
      {transport::CollectiveKind::Broadcast, buffer, buffer, bytes, DataType::Int32, ReduceOp::Sum, root});
}

CollectiveResult Communicator::barrier() {
  std::int64_t one = 1, total = 0;
  return allreduce(&one, &total, 1, DataType::Int64, ReduceOp::Sum);
}

int Communicator::on_membership_change(std::function<void(const MembershipChange&)> callback) {
  const int id = impl_->next_callback_id++;
  impl_->callbacks.emplace(id, std::move(callback));
  return id;
}

void Communicator::remove_membership_callback(int id) { impl_->callbacks.erase(id); }

}  // namespace ringmend
