// The communicator's machinery set up and torn down: the first epoch (or a
// spare's wait), the waits' checks (the call's deadline, fault rules, stuck
// node mates), and the quiet end where every member finalizes. The call
// path is in call_path.cpp, the recovery in recovery.cpp, admission and
// resizing in admission.cpp and resize.cpp.
#include "runtime/communicator_impl.hpp"
#include "runtime/subgroup.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <utility>

#include "coll/selector.hpp"
#include "membership/native/control_net.hpp"
#include "membership/native/native_spare_pool.hpp"
#include "ringmend/core/log.hpp"
#include "ringmend/core/outcome.hpp"
#include "runtime/request.hpp"

namespace ringmend {
namespace {

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
    case transport::Phase::Alltoall:
      return FaultPhase::Alltoall;
  }
  return FaultPhase::Start;
}

}  // namespace

namespace {

// Where this process hears hang notices: the control network's address of
// this node (RINGMEND_CONTROL_INTERFACE, else the first interface up).
std::string notice_ip(const Settings& settings) {
  try {
    return membership::native::control_ip(settings.control_interface);
  } catch (const std::exception& e) {
    log(LogLevel::Warn, std::string("hang notices: ") + e.what());
    return {};
  }
}

// This process's number in the job and the job's size at launch: MPI's
// world, or the native membership's first view (a job without MPI).
int world_rank_of(MPI_Comm world, const membership::Control* native) {
  if (native) return native->world_ranks().at(static_cast<std::size_t>(native->rank()));
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  return rank;
}

int world_size_of(MPI_Comm world, const membership::Control* native) {
  if (native) return native->size();
  int size = 0;
  MPI_Comm_size(world, &size);
  return size;
}

}  // namespace

Communicator::Impl::Impl(const Settings& settings, bool fault_tolerant, transport::UcxContext& ucx,
                         MPI_Comm parent, const topo::Location& where, int outcome_fd,
                         std::unique_ptr<membership::Control> native)
    : settings_(settings),
      outcome_fd_(outcome_fd),
      pipeline_tuner_(settings_.shm_buffer_bytes, {settings_.shm_chunk_bytes, settings_.shm_depth},
                      settings_.shm_tune),
      fault_tolerant_(fault_tolerant),
      ucx_(ucx),
      builder_(settings_, ucx, world_rank_of(parent, native.get()), world_size_of(parent, native.get()),
               where),
      hang_(settings_.hang_timeout_seconds, settings_.hang_policy, notice_ip(settings_)),
      stragglers_(settings_.straggler_policy, settings_.straggler_window, settings_.straggler_fraction) {
  pipeline_tuner_.on_decision = [this](const std::string& line) { log(line); };
  // The members started with the job have their world rank as member id.
  const int world_rank = world_rank_of(parent, native.get());
  faults_ = FaultInjector(parse_fault_spec(settings_.fault_spec), world_rank, settings_.fault_record);
  builder_.after_step = [this](membership::BuildStep step, const membership::Epoch& e) {
    if (!faults_.armed()) return;
    // Every member has published its UCX address, nobody has connected
    // yet: the others' connects to this rank are refused.
    if (step == membership::BuildStep::Exchange) faults_.at(FaultPhase::Wireup, current_seq_, 0, e.number);
    // After this node's shared memory is opened, before the epoch is agreed.
    if (step == membership::BuildStep::Fabric) faults_.at(FaultPhase::Attach, current_seq_, 0, e.number);
  };
  const int world_size = world_size_of(parent, native.get());
  target_size_ = world_size - static_cast<int>(settings_.spares);
  membership::Start start{std::move(native)};
  if (!open_spare_pool(parent, world_size, start)) return;  // a spare: the Runtime calls serve_as_spare()
  build_first_epoch(parent, std::move(start));
}

// Where spares wait, if any: under the native membership every job has a
// pool (its group; processes that join later wait there too), under ULFM a
// job with spares. False on a spare.
bool Communicator::Impl::open_spare_pool(MPI_Comm parent, int world_size, membership::Start& start) {
  const int spares = static_cast<int>(settings_.spares);
  if (spares > 0 && spares >= world_size)
    throw Error(Errc::InvalidArgument, std::to_string(spares) +
                                           " spares (RINGMEND_SPARES) leave no member: the job has " +
                                           std::to_string(world_size) + " processes");
  if (const auto* first = dynamic_cast<const membership::native::NativeControl*>(start.members.get())) {
    pool_ =
        std::make_unique<membership::native::NativeSparePool>(*first, spares, settings_.join, start.members);
    builder_.set_host(pool_->host());
    return !pool_->is_spare();
  }
  if (spares == 0) return true;
  if (!fault_tolerant_)
    throw Error(Errc::FaultToleranceUnavailable,
                "spares (" + std::to_string(spares) +
                    ") need fault tolerance: launch with ringmend-run (or mpirun with ringmend's FT "
                    "arguments) and an MPI with ULFM");
  ulfm::CommHandle members;
  pool_ = std::make_unique<membership::UlfmSparePool>(parent, spares, members);
  builder_.set_host(pool_->host());
  if (pool_->is_spare()) return false;
  start.members = std::make_unique<membership::UlfmControl>(std::move(members));
  return true;
}

// The first epoch of the members; a rank that dies meanwhile is recovered
// from as in a collective.
void Communicator::Impl::build_first_epoch(MPI_Comm parent, membership::Start start) {
  membership::MemberInfo mine = my_state(1);
  if (!start.members) start.members = membership::UlfmControl::first_members(parent, fault_tolerant_);
  auto first = builder_.build(nullptr, std::move(start), mine);
  // The first members have their world ranks as ids, the spares the last.
  const auto note_lost_at_start = [this] {
    for (membership::MemberId id = 0; id < target_size_; ++id)
      if (!epoch_->contains(id)) lost_at_start_.push_back(id);
  };
  if (first->ready) {
    epoch_ = std::move(first);
    note_lost_at_start();
    update_view();
    set_log_place(epoch_->my_id(), epoch_->number);
    log("epoch set up: " + builder_.laps());
    if (epoch_->size < target_size_ && epoch_->app_rank() == 0)
      ringmend::log(LogLevel::Info, "started with " + std::to_string(epoch_->size) + " of " +
                                        std::to_string(target_size_) +
                                        " members: the others died during start-up");
    return;
  }
  // A rank died while the first epoch was built: the same path as a
  // failure in a collective, from the members of that first attempt (the
  // live processes of the world when it began).
  attempt_members_ = first->ctrl->world_ranks();
  attempt_ = std::move(first);
  announce(recover(mine, "a failure during start-up").change);
  unannounced_.reset();  // the application starts in the epoch it is given
  note_lost_at_start();
}

Communicator::Impl::~Impl() {
  stop_queue();  // its calls use everything below
  for (const auto& weak : subgroups)
    if (auto sub = weak.lock()) subgroup_epochs_.push_back(sub->take_epoch());
  gpu_.reset();  // NCCL aborted before the channels and MPI go
  epoch_.reset();
  attempt_.reset();
  retired_.clear();
  subgroup_epochs_.clear();
}

// The steps of set-up and recovery, for developers (RINGMEND_LOG=debug).
void Communicator::Impl::log(const std::string& message) const { ringmend::log(LogLevel::Debug, message); }

std::vector<std::byte>& Communicator::Impl::scratch_for(std::uint64_t call_seq, std::size_t bytes) {
  auto& s = scratch_[call_seq % 2];
  if (s.size() < bytes) s.resize(bytes);
  return s;
}

// ---------------------------------------------------------------- waiting

void Communicator::Impl::check() {
  if (epoch_->failure_noticed())
    throw transport::Interrupted(std::string(epoch_->ctrl->backend()) +
                                 " reported a failed process or a revoked group");
  check_deadline();
}

void Communicator::Impl::check_deadline() {
  if (!has_deadline_) return;
  const std::uint64_t now_ns = progress::monotonic_ns();  // one clock read per poll
  hang_.waiting(now_ns, current_seq_, *epoch_);
  if (settings_.timeout_seconds <= 0) return;
  if (!deadline_set_) {
    deadline_ns_ = now_ns + static_cast<std::uint64_t>(settings_.timeout_seconds * 1e9);
    deadline_set_ = true;
  } else if (now_ns > deadline_ns_) {
    throw Error(Errc::Timeout, "collective #" + std::to_string(current_seq_) + " did not complete within " +
                                   std::to_string(settings_.timeout_seconds) +
                                   " s (RINGMEND_TIMEOUT); is every rank calling it?");
  }
}

void Communicator::Impl::on_phase(transport::Phase phase, int step) { fault_at(phase, step, epoch_->number); }

void Communicator::Impl::fault_at(transport::Phase phase, int step, std::uint64_t epoch) {
  if (faults_.armed()) faults_.at(fault_phase_of(phase), current_seq_, step, epoch);
}

void Communicator::Impl::quiesce() {
  if (!epoch_ || !epoch_->ctrl) return;
  hang_.enter(progress::Phase::Finishing, seq);
  if (!fault_tolerant_) {
    // No recovery to serve, but a rank must not close its endpoints while a
    // peer still receives the last collective's data from it.
    epoch_->ctrl->barrier();
    return;
  }
  for (;;) {
    // A meeting (meet()): a survivor that needs this rank in a recovery
    // takes part in it too, and a plain failure is reported by it to every
    // finalizing rank alike. Under the native membership, whose meeting is
    // not uniform (some members could pass it and leave while the others
    // recover), the pool's ending round is the meeting: a recovering
    // member's entry sends the others to its recovery, and a member lost
    // during it just drops out of the view. (Its barrier first lets every
    // member finish its last call before the round's view change.)
    if (native_membership()) {
      int flag = 1;
      (void)epoch_->ctrl->agree(flag, true);
      if (ending_round()) return;
    } else if (meet()) {
      return;
    }
    membership::MemberInfo mine = my_state(seq + 1);
    mine.finalizing = 1;
    RecoveryOutcome r = recover(mine, "failure while finalizing");
    if (pending_) r.change = merged(*std::exchange(pending_, std::nullopt), r.change);
    announce(r.change);
    const bool someone_behind =
        std::any_of(r.infos.begin(), r.infos.end(), [&](const membership::MemberInfo& s) {
          return s.seq == static_cast<std::int64_t>(seq) && !s.finalizing;
        });
    if (!someone_behind) continue;
    try {
      catch_up(seq, r.infos, retained_bytes_[seq % 2]);
    } catch (const transport::Interrupted&) {
    } catch (const transport::Mismatch&) {
    }
  }
}

}  // namespace ringmend
