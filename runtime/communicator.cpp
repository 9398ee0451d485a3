// Collective calls and their recovery: the call / recover / catch-up loop.
//
// A call runs the algorithm the selector picks (coll/) over the current
// epoch's channels. If a wait is interrupted (a peer died, the control
// communicator was revoked), or a peer's header shows the call is
// inconsistent, the rank revokes, shrinks with the other survivors, has the
// epoch builder (membership/) make the next epoch, and then either
// re-executes the call over the survivors' inputs, receives the result from
// a survivor that had already finished it, or raises the input error on
// every rank. Start-up takes the same path when a rank dies before the first
// epoch is agreed.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <utility>

#include "coll/selector.hpp"
#include "membership/native/native_spare_pool.hpp"
#include "ringmend/core/log.hpp"
#include "ringmend/core/outcome.hpp"
#include "runtime/communicator_impl.hpp"
#include "runtime/request.hpp"

namespace ringmend {
namespace {

using Clock = std::chrono::steady_clock;

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

// Thrown inside run() for an invalid argument on this rank; it is raised
// on every rank through the recovery state exchange.
struct LocalInputError {
  std::string text;
};

}  // namespace

namespace {

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
      hang_(settings_.hang_timeout_seconds, settings_.hang_policy),
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
  membership::MemberInfo mine;
  mine.seq = 1;
  const int world_size = world_size_of(parent, native.get());
  const int spares = static_cast<int>(settings_.spares);
  target_size_ = world_size - spares;
  membership::Start start{std::move(native)};
  if (spares > 0 && spares >= world_size)
    throw Error(Errc::InvalidArgument, std::to_string(spares) +
                                           " spares (RINGMEND_SPARES) leave no member: the job has " +
                                           std::to_string(world_size) + " processes");
  if (const auto* first = dynamic_cast<const membership::native::NativeControl*>(start.members.get())) {
    // The native membership: spares wait in its group, and so do processes
    // that join later (every native job has a pool for them).
    pool_ =
        std::make_unique<membership::native::NativeSparePool>(*first, spares, settings_.join, start.members);
    builder_.set_host(pool_->host());
    if (pool_->is_spare()) return;  // the Runtime calls serve_as_spare()
  }
  if (spares > 0 && !pool_) {
    if (!fault_tolerant_)
      throw Error(Errc::FaultToleranceUnavailable,
                  "spares (" + std::to_string(spares) +
                      ") need fault tolerance: launch with ringmend-run (or mpirun with ringmend's FT "
                      "arguments) and an MPI with ULFM");
    ulfm::CommHandle members;
    pool_ = std::make_unique<membership::UlfmSparePool>(parent, spares, members);
    builder_.set_host(pool_->host());
    if (pool_->is_spare()) return;  // the Runtime calls serve_as_spare()
    start.members = std::make_unique<membership::UlfmControl>(std::move(members));
  }
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
  gpu_.reset();  // NCCL aborted before the channels and MPI go
  epoch_.reset();
  attempt_.reset();
  retired_.clear();
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

// ------------------------------------------------------------- collectives

std::string Communicator::Impl::validate(const CollectiveCall& c) const {
  // Built only when needed: validation runs on every call, also the 4-byte ones.
  struct At {
    const CollectiveCall& c;
    int rank;
    operator std::string() const {
      return std::string(c.kind == coll::CollectiveKind::Allreduce ? "allreduce" : "broadcast") +
             " on rank " + std::to_string(rank) + ": ";
    }
    std::string operator+(const std::string& rest) const { return std::string(*this) + rest; }
    std::string operator+(const char* rest) const { return std::string(*this) + rest; }
  } at{c, view_.rank};
  if (c.kind == coll::CollectiveKind::Allreduce) {
    if (!is_valid(c.type)) return at + "unsupported data type " + std::to_string(static_cast<int>(c.type));
    if (!is_valid(c.op)) return at + "unsupported reduction " + std::to_string(static_cast<int>(c.op));
    if (c.count > 0 && (c.input == nullptr || c.output == nullptr))
      return at + "null buffer with count " + std::to_string(c.count);
    const auto* in = static_cast<const std::byte*>(c.input);
    const auto* out = static_cast<const std::byte*>(c.output);
    const std::size_t b = c.bytes();
    if (c.count > 0 && in != out && in < out + b && out < in + b)
      return at + "input and output overlap without being the same buffer (use the in-place call)";
    if (!c.placement_error.empty()) return at + c.placement_error;
  } else {
    if (c.root < 0 || c.root >= view_.size)
      return at + "root " + std::to_string(c.root) + " is not a rank of this communicator (size " +
             std::to_string(view_.size) + ")";
    if (c.count > 0 && c.output == nullptr)
      return at + "null buffer with " + std::to_string(c.count) + " bytes";
    if (c.count > 0 && is_gpu_pointer(c.output))
      return at + "the buffer is GPU memory; broadcast takes host memory (GPU buffers: allreduce)";
  }
  return {};
}

void Communicator::Impl::execute(const CollectiveCall& c, std::uint64_t call_seq) {
  if (c.gpu) {  // its buffers are on a GPU: device_call.cpp runs it, through here again
    execute_device(c, call_seq);
    return;
  }
  const std::size_t bytes = c.bytes();
  const membership::Epoch& e = *epoch_;
  const coll::Algorithm& algorithm = coll::select(c.kind, bytes, e.layout, tuning());
  coll::Call call;
  call.kind = c.kind;
  if (c.kind == coll::CollectiveKind::Allreduce) {
    call.allreduce = {c.input, c.output, c.count, c.type, c.op, call_seq};
    call.allreduce.staging = c.staging;
    // An algorithm that does not read a staged input part by part gets it whole.
    if (c.staging && !algorithm.reads_staged_input()) c.staging->wait_input(0, bytes);
  }
  // Out of place, where the call can finish together (on one node, see
  // coll/shm_allreduce.hpp), the result goes straight to the caller and
  // nothing is retained: every survivor finishes it or none does.
  if (c.kind == coll::CollectiveKind::Allreduce && c.input != c.output &&
      algorithm.finishes_together(e.layout, e.channels())) {
    call.allreduce.finish_together = true;
    algorithm.run(call, e.channels(), e.layout, tuning(), *this);
    retained_seq_[call_seq % 2] = 0;
    retained_bytes_[call_seq % 2] = 0;
    return;
  }
  // Otherwise the result is retained (for a survivor that misses the end of
  // this call). Out of place, the algorithms write the caller's buffer and
  // copy each final part into the retained buffer while it is in cache; in
  // place, the input must stay intact until the end, so they write the
  // retained buffer, copied out at the end.
  auto& out = scratch_for(call_seq, bytes);
  bool copy_out = true;
  if (c.kind == coll::CollectiveKind::Allreduce) {
    call.allreduce.output = out.data();
    if (c.input != c.output) {
      call.allreduce.output = c.output;
      call.allreduce.retain = out.data();
      copy_out = false;
    }
  } else {
    if (e.rank == c.root) std::memcpy(out.data(), c.input, bytes);
    call.broadcast = {out.data(), bytes, c.root, call_seq};
  }
  algorithm.run(call, e.channels(), e.layout, tuning(), *this);
  if (c.kind == coll::CollectiveKind::Broadcast) {
    // A broadcast is done at the root, and at a forwarder, once its data is
    // buffered towards the next rank, so a run of broadcasts would let a
    // rank get several collectives ahead of the last one in the chain. A
    // barrier in the same call bounds that: a rank that returns from any
    // collective knows that every member entered it, so survivors are never
    // more than one collective apart, which is what the catch-up hands over.
    const std::int64_t one = 1;
    std::int64_t members = 0;
    coll::Call sync;
    sync.kind = coll::CollectiveKind::Allreduce;
    sync.allreduce = {&one, &members, 1, DataType::Int64, ReduceOp::Sum, call_seq};
    coll::select(sync.kind, sizeof one, e.layout, tuning())
        .run(sync, e.channels(), e.layout, tuning(), *this);
  }
  retained_seq_[call_seq % 2] = call_seq;
  retained_bytes_[call_seq % 2] = bytes;
  if (copy_out) std::memcpy(c.output, out.data(), bytes);
}

CollectiveResult Communicator::Impl::run(const CollectiveCall& call) {
  // The previous call ended, on whatever path (GPU calls included): its
  // epoch is in use (below, a host call says so as it ends).
  ucx_.epoch_in_use();
  if (call.kind == coll::CollectiveKind::Allreduce && !call.gpu && call.placement_error.empty() &&
      call.memory != MemoryKind::Host && !left)
    if (auto on_device = run_on_device(call)) return *on_device;
  if (left)
    throw Error(Errc::Released, "this process was released from the job (" +
                                    std::string(released_as_straggler_ ? "as a straggler" : "release()") +
                                    " at collective #" + std::to_string(seq) +
                                    ") and takes part in no collective");
  const std::uint64_t call_seq = ++seq;
  current_seq_ = call_seq;
  // The progress record: membership work until the call executes, the
  // application's own code once it returns, however it ends.
  hang_.enter(progress::Phase::Recovery, call_seq);
  struct BackToApplication {
    HangDetector& hang;
    std::uint64_t seq;
    ~BackToApplication() { hang.enter(progress::Phase::Application, seq); }
  } const back_to_application{hang_, call_seq};
  CollectiveResult result;
  const std::string input_error = validate(call);
  if (!input_error.empty() && !fault_tolerant_) throw Error(Errc::InvalidArgument, input_error);
  // The application chose the root in its view; a change it has not been
  // told of yet (see below) is announced now, and the root renumbered.
  const membership::MemberId root_id = call.kind == coll::CollectiveKind::Broadcast && input_error.empty()
                                           ? view_.members[static_cast<std::size_t>(call.root)]
                                           : membership::kNoMember;
  call_root_ = root_id;
  const int size_at_start = view_.size;
  CollectiveCall c = call;  // the root is renumbered after a membership change
  // The root's rank in the current epoch, or RootLost on every survivor.
  const auto place_root = [&] {
    if (root_id == membership::kNoMember) return;
    const auto& members = epoch_->members;
    const auto it = std::find(members.begin(), members.end(), root_id);
    if (it == members.end())
      throw Error(Errc::RootLost, "broadcast #" + std::to_string(call_seq) + ": its root (member " +
                                      std::to_string(root_id) + ") failed before any survivor had the data");
    c.root = static_cast<int>(it - members.begin());
  };
  // A broadcast whose root died, and that no survivor finished, cannot be
  // executed: RootLost, the change announced first (as by every error after
  // a recovery), before any spare is admitted, on every survivor alike,
  // whether it learns of the death in this call or came from catching up.
  const auto fail_if_root_lost = [&] {
    if (root_id == membership::kNoMember || epoch_->contains(root_id)) return;
    if (pending_) announce_pending();
    place_root();
  };
  fail_if_root_lost();
  // A settle() that finds another member recovering (a round of the pool)
  // joins that recovery below, as after a failure in this call.
  std::string settle_interrupted;
  if (input_error.empty()) {
    try {
      settle(result, call_seq);
    } catch (const transport::Interrupted& e) {
      settle_interrupted = e.what();
    }
  }
  place_root();
  if (input_error.empty() && settle_interrupted.empty() &&
      call.bytes() == 0) {  // a no-op, like MPI with count 0
    result.contributors = epoch_->size;
    result.epoch = epoch_->number;
    return result;
  }
  // The deadline covers this call only, however it ends (check() sets it).
  const ScopedFlag deadline_on(has_deadline_);
  deadline_set_ = false;
  bool catching_up = false;
  std::vector<membership::MemberInfo> states;
  for (;;) {
    std::string cause, error_text;
    int errc = -1;
    try {
      if (!settle_interrupted.empty()) throw transport::Interrupted(std::exchange(settle_interrupted, {}));
      if (!input_error.empty()) throw LocalInputError{input_error};
      if (catching_up) {
        // Another survivor finished this collective before the failure: take
        // its result, which contains every original contribution.
        hang_.enter(progress::Phase::Collective, call_seq);
        catch_up(call_seq, states, call.bytes());
        if (call.gpu)
          device_result_from(call, scratch_[call_seq % 2].data());
        else
          std::memcpy(call.output, scratch_[call_seq % 2].data(), call.bytes());
        retained_seq_[call_seq % 2] = call_seq;
        retained_bytes_[call_seq % 2] = call.bytes();
        result.contributors = size_at_start;
      } else {
        const bool ahead = !states.empty() &&
                           std::any_of(states.begin(), states.end(), [&](const membership::MemberInfo& s) {
                             return s.seq < static_cast<std::int64_t>(call_seq) && !s.finalizing;
                           });
        if (ahead) catch_up(call_seq - 1, states, retained_bytes_[(call_seq - 1) % 2]);
        states.clear();
        // Only after the catch-up above: the survivors behind wait for it.
        fail_if_root_lost();
        settle(result, call_seq);
        place_root();
        hang_.enter(progress::Phase::Collective, call_seq);
        execute(c, call_seq);
        result.contributors = epoch_->size;
      }
      // Off the recovery's path: the next worker, the old ones closed.
      ucx_.epoch_in_use();
      result.epoch = view_.number;
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
    membership::MemberInfo mine = my_state(call_seq);
    mine.errc = errc;
    mine.set_error(error_text);
    hang_.enter(progress::Phase::Recovery, call_seq);
    RecoveryOutcome r = recover(mine, cause);
    if (native_membership()) hang_.fence_lost(r.lost, epoch_->my_id());
    pending_ = pending_ ? merged(*pending_, r.change) : r.change;
    states = std::move(r.infos);
    catching_up = std::any_of(states.begin(), states.end(), [&](const membership::MemberInfo& s) {
      return s.seq > static_cast<std::int64_t>(call_seq);
    });
    // Survivors that had finished this collective see the failure in their
    // next call. Those that take its result from them (catching up) keep
    // the old view until their own next call, so that every survivor sees
    // the change in the same call (and chooses, say, a broadcast root in the
    // same membership). Otherwise the change is announced in this call,
    // once spares are admitted (settle(), before the call is executed).
    // An input error anywhere is raised everywhere.
    auto bad = std::find_if(states.begin(), states.end(),
                            [](const membership::MemberInfo& s) { return s.errc >= 0; });
    if (bad != states.end()) fail_in_step(states, call_seq, Error(static_cast<Errc>(bad->errc), bad->error));
    // A result that no survivor can hand over fails the call on every
    // survivor alike, and leaves them all after the newest call.
    if (const std::string why = catch_up_impossible(states); !why.empty())
      fail_in_step(states, call_seq, Error(Errc::Internal, why));
    // A member that finalized while we are in a collective will never join it.
    for (const auto& s : states)
      if (s.finalizing && s.seq == static_cast<std::int64_t>(call_seq)) {
        throw Error(Errc::Mismatch, "member " + std::to_string(s.id) +
                                        " finalized while this rank called collective #" +
                                        std::to_string(call_seq));
      }
  }
}

// ---------------------------------------------------------------- recovery

void Communicator::Impl::update_view() {
  hang_.set_member(epoch_->my_id());
  hang_.remember(*epoch_);
  View next{epoch_->app_rank(), epoch_->size, epoch_->number, epoch_->my_id(), epoch_->ranked};
  std::lock_guard lock(view_mutex_);
  view_ = std::move(next);
}

void Communicator::Impl::announce(const MembershipChange& change) {
  update_view();
  // A rebuild that lost nobody (an input error on one rank revokes the
  // epoch so that the others learn of it; under the native membership, a
  // spare's death) changes no membership: the next change announced covers
  // its epoch too, so that every change starts where the last one ended.
  if (change.lost.empty() && change.joined.empty() && change.released.empty()) {
    unannounced_ = unannounced_ ? merged(*unannounced_, change) : change;
    return;
  }
  const MembershipChange whole =
      unannounced_ ? merged(*std::exchange(unannounced_, std::nullopt), change) : change;
  for (auto& [id, callback] : callbacks) callback(whole);
}

MembershipChange Communicator::Impl::announce_pending() {
  const MembershipChange change = *std::exchange(pending_, std::nullopt);
  announce(change);
  return change;
}

void Communicator::Impl::settle(CollectiveResult& result, std::uint64_t call_seq) {
  // A request (grow, release) admits after its call instead: a joiner's
  // first call must be one its application makes.
  if (!requesting_ && pool_ && settings_.spare_policy == SparePolicy::Replace &&
      epoch_->size < target_size_ && pool_->spares_left() > 0)
    regroup(call_seq, false, false);
  if (!pending_) return;
  const MembershipChange change = announce_pending();
  result.recovered = true;
  result.lost = change.lost;
  result.joined = change.joined;
  result.released = change.released;
}

// An error that every survivor raises alike after a recovery: each is told
// of the change first, and all go on after the newest collective any of
// them was in, so that their next calls match.
void Communicator::Impl::fail_in_step(const std::vector<membership::MemberInfo>& states,
                                      std::uint64_t call_seq, const Error& error) {
  if (pending_) announce_pending();
  std::int64_t max_seq = static_cast<std::int64_t>(call_seq);
  for (const auto& s : states) max_seq = std::max(max_seq, s.seq);
  seq = static_cast<std::uint64_t>(max_seq);
  throw error;
}

// Two recoveries the application has not been told of, as one change.
MembershipChange Communicator::Impl::merged(const MembershipChange& first, const MembershipChange& then) {
  MembershipChange m = then;
  m.old_epoch = first.old_epoch;
  m.old_size = first.old_size;
  // From the membership before `first` to the one after `then`: a joiner of
  // `first` lost in `then` was never seen, neither joining nor lost.
  const auto in = [](const std::vector<int>& v, int id) {
    return std::find(v.begin(), v.end(), id) != v.end();
  };
  m.lost.clear();
  for (const auto* from : {&first.lost, &then.lost})
    for (int id : *from)
      if (!in(first.joined, id)) m.lost.push_back(id);
  m.joined.clear();
  for (const auto* from : {&first.joined, &then.joined})
    for (int id : *from)
      if (!in(then.lost, id)) m.joined.push_back(id);
  m.released = first.released;
  m.released.insert(m.released.end(), then.released.begin(), then.released.end());
  for (auto* v : {&m.lost, &m.joined, &m.released}) std::sort(v->begin(), v->end());
  m.recovery_seconds += first.recovery_seconds;
  m.shrink_seconds += first.shrink_seconds;
  m.rebuild_seconds += first.rebuild_seconds;
  m.admit_seconds += first.admit_seconds;
  m.state_seconds += first.state_seconds;
  m.state_bytes += first.state_bytes;
  m.attempts += first.attempts;
  return m;
}

membership::MemberInfo Communicator::Impl::my_state(std::uint64_t call_seq) const {
  membership::MemberInfo mine;
  mine.seq = static_cast<std::int64_t>(call_seq);
  mine.held[0] = static_cast<std::int64_t>(retained_seq_[0]);
  mine.held[1] = static_cast<std::int64_t>(retained_seq_[1]);
  return mine;
}

// Survivors are at most one collective apart, and the one behind takes the
// result from the first survivor past it (catch_up). Every survivor judges
// the same states the same way, so that an impossible catch-up is the same
// error everywhere rather than survivors left in different collectives.
std::string Communicator::Impl::catch_up_impossible(const std::vector<membership::MemberInfo>& states) {
  std::int64_t lo = INT64_MAX, hi = 0;
  for (const auto& s : states) {
    if (!s.finalizing) lo = std::min(lo, s.seq);
    hi = std::max(hi, s.seq);
  }
  if (lo == INT64_MAX || lo >= hi) return {};
  if (hi - lo > 1)
    return "catch-up: survivors are in collectives #" + std::to_string(lo) + " to #" + std::to_string(hi) +
           ", more than one apart; the results in between cannot be handed over";
  for (const auto& s : states)
    if (s.seq > lo)
      return s.held[0] == lo || s.held[1] == lo
                 ? std::string()
                 : "catch-up: the result of collective #" + std::to_string(lo) +
                       " is no longer retained by member " + std::to_string(s.id);
  return {};
}

void Communicator::Impl::broadcast_bytes(void* buffer, std::size_t bytes, int root, std::uint64_t wire_seq) {
  const membership::Epoch& e = *epoch_;
  coll::Call call;
  call.kind = coll::CollectiveKind::Broadcast;
  call.broadcast = {buffer, bytes, root, wire_seq};
  coll::select(call.kind, bytes, e.layout, tuning()).run(call, e.channels(), e.layout, tuning(), *this);
}

void Communicator::Impl::broadcast_retained(std::uint64_t seq_of_result, int root, std::size_t bytes) {
  auto& retained = scratch_for(seq_of_result, bytes);
  if (epoch_->rank == root) device_retained_to_host(seq_of_result, retained.data(), bytes);
  broadcast_bytes(retained.data(), bytes, root, seq_of_result);
}

void Communicator::Impl::catch_up(std::uint64_t behind_seq, const std::vector<membership::MemberInfo>& infos,
                                  std::size_t bytes) {
  int root = -1;
  for (int r = 0; r < epoch_->size && root < 0; ++r)
    if (infos[static_cast<std::size_t>(r)].seq > static_cast<std::int64_t>(behind_seq)) root = r;
  if (root < 0 || bytes == 0) return;
  if (epoch_->rank == root && retained_seq_[behind_seq % 2] != behind_seq)
    throw Error(Errc::Internal, "catch-up: the result of collective #" + std::to_string(behind_seq) +
                                    " is no longer retained");
  log("handing the result of collective #" + std::to_string(behind_seq) + " from rank " +
      std::to_string(root) + " to the survivors that missed it");
  broadcast_retained(behind_seq, root, bytes);
}

std::string Communicator::Impl::with_nodes(const std::vector<membership::MemberId>& ids,
                                           const std::vector<membership::MemberId>& members,
                                           const std::vector<membership::MemberInfo>& infos) {
  std::string text;
  for (int id : ids) {
    const auto at = std::find(members.begin(), members.end(), id);
    const std::string node = at == members.end() || infos.size() != members.size()
                                 ? "?"
                                 : infos[static_cast<std::size_t>(at - members.begin())].node;
    text += (text.empty() ? "" : ", ") + std::to_string(id) + " (node " + node + ")";
  }
  return text;
}

// The bound between attempts throws, which the application can catch; the
// watchdog is for a recovery that never gets back from MPI to be told. Its
// grace lets the first win when both could.
Watchdog Communicator::Impl::recovery_watchdog(const std::string& what) const {
  const double limit = settings_.recovery_timeout_seconds;
  const double grace = std::max(1.0, limit / 10);
  return Watchdog(limit > 0 ? limit + grace : 0, outcome_fd_, LogLevel::Error,
                  what + " did not complete within " + seconds_text(limit + grace) +
                      " (RINGMEND_RECOVERY_TIMEOUT and a grace): this process is stuck in a call to MPI that "
                      "does not return (an agreement that waits for a process which is stuck rather than "
                      "dead, or an MPI bug; docs/troubleshooting.md). It ends with status " +
                      std::to_string(outcome::kRecoveryTimeoutStatus) + " so that the job does not hang",
                  outcome::kRecoveryTimeout, outcome::kRecoveryTimeoutStatus);
}

bool Communicator::Impl::past_recovery_bound(Clock::time_point start) const {
  return settings_.recovery_timeout_seconds > 0 && seconds_since(start) > settings_.recovery_timeout_seconds;
}

void Communicator::Impl::start_recovery_attempt(std::chrono::steady_clock::time_point start, int attempt,
                                                std::uint64_t old_epoch) {
  if (past_recovery_bound(start))
    throw Error(Errc::Internal, "recovery did not complete within " +
                                    std::to_string(settings_.recovery_timeout_seconds) +
                                    " s (RINGMEND_RECOVERY_TIMEOUT)");
  if (faults_.armed()) faults_.at(FaultPhase::Recovery, current_seq_, attempt, old_epoch);
}

void Communicator::Impl::log_failure_noticed(const membership::MemberInfo& mine,
                                             const std::string& cause) const {
  if (!log_enabled(LogLevel::Debug) || !epoch_) return;
  std::string failed;
  for (int r : epoch_->ctrl->known_failed()) failed += " " + std::to_string(r);
  log("failure noticed in collective #" + std::to_string(mine.seq) + " (" + cause +
      "): recovering; ranks MPI already reports failed:" + (failed.empty() ? " none" : failed));
}

bool Communicator::Impl::recovers_through_pool() const {
  if (!pool_) return false;
  const membership::Epoch* current = attempt_ ? attempt_.get() : epoch_.get();
  if (!current) return false;
  // Under the native membership every recovery takes a round of the pool:
  // its all-gathers are not uniform, so a member may recover while another
  // passed the same step and went on to a round (a request, spares to
  // admit); in one roster the latter learns it must join the recovery
  // first, where a shrink would leave the two in different collectives.
  // For the same reason a build (the first, or a recovery's) may have
  // completed on some members and failed on others, who then recover from
  // different epochs: all take the pool alike, from whichever epoch they
  // have. ULFM's agreement is uniform: its pool serves a ready epoch only,
  // and only to replace the lost.
  if (native_membership()) return true;
  if (settings_.spare_policy != SparePolicy::Replace || pool_->spares_left() == 0) return false;
  return epoch_ && !attempt_;
}

bool Communicator::Impl::native_membership() const {
  const membership::Epoch* current = attempt_ ? attempt_.get() : epoch_.get();
  return fault_tolerant_ && current && membership::mpi_comm_of(*current->ctrl) == MPI_COMM_NULL;
}

// Open MPI numbers the agreements on a communicator in order and pairs the
// n-th of every process (its shrink is made of agreements too). A member
// that waits at a meeting point while another recovers must therefore not
// give its agreement up if the other then shrinks that communicator: the
// shrink's first agreement would pair with the one given up, and the rest
// would pair one off. So without spares (the recovery shrinks the epoch's
// ctrl) the recovering member makes the meeting's agreement first, and the
// waiting one waits for it; with spares the recovery leaves the epoch's
// ctrl for the pool's communicator, and the meeting ends when it is
// revoked. The native membership numbers nothing across views: a recovery
// changes the view, which ends the meeting's all-gather everywhere.
bool Communicator::Impl::meet() {
  bool all_came = false;
  if (recovers_through_pool() && membership::mpi_comm_of(*epoch_->ctrl) != MPI_COMM_NULL) {
    // The pool is ULFM's: so is the epoch.
    MPI_Comm ctrl = membership::mpi_comm_of(*epoch_->ctrl);
    bool success = false;
    all_came = ulfm::agree_while(
                   ctrl, [ctrl] { return ulfm::is_revoked(ctrl); }, success) &&
               success;
  } else {
    int flag = 1;
    all_came = epoch_->ctrl->agree(flag, true) && flag == 1;
  }
  // A meeting that every member passed is closed on all of them alike; the
  // epoch may go on (a grow with no spare to admit, say) and hold another
  // meeting, whose agreement a later recovery makes again. One that failed
  // stays open: this member already made its agreement.
  if (all_came)
    met_epoch_.reset();
  else
    met_epoch_ = epoch_->number;
  return all_came;
}

void Communicator::Impl::meet_recovering() {
  if (!fault_tolerant_ || met_epoch_ == epoch_->number) return;
  met_epoch_ = epoch_->number;
  // The members still working in this epoch stop and come to its recovery.
  epoch_->ctrl->revoke();
  int flag = 0;
  (void)epoch_->ctrl->agree(flag);  // its outcome is the meeting's; this member recovers anyway
}

Communicator::Impl::RecoveryOutcome Communicator::Impl::recover(const membership::MemberInfo& mine,
                                                                const std::string& cause) {
  // With spares waiting, one round of the pool both drops the dead and
  // admits their replacements (admission.cpp). Every member takes the same
  // branch: the pool's count and the epochs are the same on all of them.
  const Watchdog watchdog = recovery_watchdog("recovery");
  // The native pool moves to the recovery's view first (SparePool::settle):
  // its time is the shrink's, and the recovery's from here.
  const auto start = Clock::now();
  if (pool_ && (epoch_ || attempt_)) pool_->settle(attempt_ ? *attempt_->ctrl : *epoch_->ctrl);
  const double settle_seconds = seconds_since(start);
  if (recovers_through_pool()) return recover_with_spares(mine, cause, start, settle_seconds);
  const std::uint64_t old_epoch = epoch_ ? epoch_->number : 0;
  const int old_size = epoch_ ? epoch_->size : static_cast<int>(attempt_members_.size());
  RecoveryOutcome out;
  double shrink_seconds = settle_seconds, rebuild_seconds = 0;
  int attempts = 0;
  // NCCL has no failure detector: its kernels spin until stopped here.
  stop_device_collectives();
  if (epoch_ && !attempt_) attempt_members_ = epoch_->members;
  // Where the members were, to name the nodes of the lost ones.
  std::vector<membership::MemberId> old_members;
  std::vector<membership::MemberInfo> old_infos;
  if (epoch_) {
    old_members = epoch_->members, old_infos = epoch_->infos;
  } else if (attempt_ && attempt_->infos.size() == attempt_->members.size()) {
    // At start-up: the first attempt, if it got as far as its exchange.
    old_members = attempt_->members, old_infos = attempt_->infos;
  }
  log_failure_noticed(mine, cause);
  if (epoch_ && !attempt_) {
    // Counted with the shrink: the failure is agreed on there first.
    const auto meet_start = Clock::now();
    meet_recovering();
    shrink_seconds += seconds_since(meet_start);
  }
  for (int attempt = 0;; ++attempt) {
    start_recovery_attempt(start, attempt, old_epoch);
    // Stop using the old channels but keep them open until the next epoch
    // is agreed (Fabric::retire says why).
    if (epoch_) epoch_->retire();
    if (attempt_) attempt_->retire();
    membership::Control& ctrl = attempt_ ? *attempt_->ctrl : *epoch_->ctrl;
    const auto shrink_start = Clock::now();
    std::string shrink_error;
    std::optional<membership::Control::Shrunk> shrunk = ctrl.shrink(shrink_error);
    shrink_seconds += seconds_since(shrink_start);
    attempts = attempt + 1;
    if (!shrunk) {
      log("shrink failed (" + shrink_error + "), retrying");
      continue;
    }
    // The lost members, in order of the shrunk communicator's ranks.
    membership::Shrink transition;
    std::sort(shrunk->lost.begin(), shrunk->lost.end());
    for (auto it = shrunk->lost.rbegin(); it != shrunk->lost.rend(); ++it) {
      out.lost.push_back(attempt_members_[static_cast<std::size_t>(*it)]);
      attempt_members_.erase(attempt_members_.begin() + *it);
    }
    // Lost since the last ready epoch, over every attempt.
    if (epoch_)
      for (membership::MemberId id : epoch_->members)
        if (std::find(attempt_members_.begin(), attempt_members_.end(), id) == attempt_members_.end())
          transition.lost.push_back(id);
    transition.survivors = std::move(shrunk->survivors);
    if (faults_.armed()) faults_.at(FaultPhase::Rebuild, current_seq_, attempt, old_epoch);
    const auto rebuild_start = Clock::now();
    auto next = builder_.build(epoch_.get(), std::move(transition), mine);
    rebuild_seconds += seconds_since(rebuild_start);
    if (attempt_) retired_.push_back(std::move(attempt_));
    if (next->ready) {
      // Every survivor has left the old epochs: their channels can close.
      retired_.clear();
      epoch_ = std::move(next);
      log("epoch set up: " + builder_.laps());
      break;
    }
    attempt_ = std::move(next);
    log("a failure interrupted the rebuild; recovering again");
  }
  attempt_members_.clear();
  out.infos = epoch_->infos;
  std::sort(out.lost.begin(), out.lost.end());
  MembershipChange change;
  change.old_epoch = old_epoch;
  change.new_epoch = epoch_->number;
  change.lost = out.lost;
  change.old_size = old_size;
  change.new_size = epoch_->size;
  change.new_rank = epoch_->app_rank();
  change.recovery_seconds = seconds_since(start);
  change.shrink_seconds = shrink_seconds;
  change.rebuild_seconds = rebuild_seconds;
  change.attempts = attempts;
  set_log_place(epoch_->my_id(), epoch_->number);
  // One line per recovery for the operator (from the new epoch's first
  // rank; the others say it at debug level).
  const std::string lost_text = with_nodes(out.lost, old_members, old_infos);
  char times[160];
  std::snprintf(times, sizeof times, "in %.1f ms (revoke+shrink %.1f ms, rebuild %.1f ms, %d attempt%s)",
                change.recovery_seconds * 1e3, shrink_seconds * 1e3, rebuild_seconds * 1e3, attempts,
                attempts == 1 ? "" : "s");
  const std::string what = out.lost.empty() ? "rebuilt the epoch, no member lost,"
                                            : std::string("recovered from the loss of member") +
                                                  (out.lost.size() == 1 ? " " : "s ") + lost_text;
  ringmend::log(epoch_->app_rank() == 0 ? LogLevel::Info : LogLevel::Debug,
                what + " in collective #" + std::to_string(mine.seq) + " (noticed as: " + cause + "): " +
                    std::to_string(old_size) + " -> " + std::to_string(epoch_->size) + " ranks, epoch " +
                    std::to_string(epoch_->number) + ", " + times + "; rebuild steps: " + builder_.laps());
  out.change = change;
  return out;
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

// ------------------------------------------------------------- the facade

std::atomic<long>& application_errors() {
  static std::atomic<long> count{0};
  return count;
}

namespace {

// A failure the application did not cause is also logged, at `error` (a
// lost broadcast root at `warn`: the job goes on), so that an operator sees
// it even where the application swallows it; bad input (argument,
// mismatch, setting) is the application's to report.
Error logged(Error e) {
  application_errors().fetch_add(1, std::memory_order_relaxed);
  const Errc c = e.code();
  if (!caused_by_input(c))
    log(c == Errc::RootLost ? LogLevel::Warn : LogLevel::Error,
        std::string("collective failed (") + to_string(c) + "): " + e.what());
  return e;
}

// The one error boundary: whatever a lower layer throws (MPI, UCX, shared
// memory, the standard library) reaches the caller as a ringmend::Error.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw logged(e);
  } catch (const std::bad_alloc&) {
    throw logged(Error(Errc::Internal, "out of memory"));
  } catch (const std::exception& e) {
    throw logged(Error(Errc::Internal, e.what()));
  }
}

}  // namespace

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;
int Communicator::rank() const { return impl_->view_copy().rank; }
int Communicator::size() const { return impl_->view_copy().size; }
std::uint64_t Communicator::epoch() const { return impl_->view_copy().number; }
int Communicator::member_id() const { return impl_->view_copy().my_id; }
std::vector<int> Communicator::member_ids() const { return impl_->view_copy().members; }
std::uint64_t Communicator::collectives_called() const { return impl_->seq; }

CollectiveResult Communicator::allreduce(const void* input, void* output, std::size_t count, DataType type,
                                         ReduceOp op) {
  return impl_->serially([&] {
    return guarded([&] {
      return impl_->call({coll::CollectiveKind::Allreduce, input, output, count, type, op, -1});
    });
  });
}

CollectiveResult Communicator::allreduce(void* inout, std::size_t count, DataType type, ReduceOp op) {
  return allreduce(inout, inout, count, type, op);
}

CollectiveResult Communicator::allreduce(const void* input, void* output, std::size_t count, DataType type,
                                         ReduceOp op, const Placement& where) {
  return impl_->serially([&] {
    return guarded([&] {
      CollectiveCall call{coll::CollectiveKind::Allreduce, input, output, count, type, op, -1};
      call.memory = where.memory;
      call.cuda_stream = where.cuda_stream;
      return impl_->call(call);
    });
  });
}

CollectiveResult Communicator::allreduce(void* inout, std::size_t count, DataType type, ReduceOp op,
                                         const Placement& where) {
  return allreduce(inout, inout, count, type, op, where);
}

CollectiveResult Communicator::broadcast(void* buffer, std::size_t bytes, int root) {
  return impl_->serially([&] {
    return guarded([&] {
      return impl_->call(
          {coll::CollectiveKind::Broadcast, buffer, buffer, bytes, DataType::Int32, ReduceOp::Sum, root});
    });
  });
}

CollectiveResult Communicator::barrier() {
  std::int64_t one = 1, total = 0;
  return allreduce(&one, &total, 1, DataType::Int64, ReduceOp::Sum);
}

namespace {

// Queues `call` (which runs the collective) on the communicator's call
// thread, started by the first non-blocking call.
template <class F>
Request queued(Communicator::Impl& impl, F call) {
  if (!impl.queue) impl.queue = std::make_unique<CallQueue>();
  auto state = std::make_shared<Request::State>();
  impl.queue->push([state, call = std::move(call)]() mutable {
    CollectiveResult result;
    std::exception_ptr error;
    try {
      result = guarded(call);
    } catch (...) {
      error = std::current_exception();
    }
    state->complete(std::move(result), std::move(error));
  });
  return Request(std::move(state));
}

}  // namespace

Request Communicator::iallreduce(const void* input, void* output, std::size_t count, DataType type,
                                 ReduceOp op) {
  return queued(*impl_, [impl = impl_.get(), input, output, count, type, op] {
    return impl->call({coll::CollectiveKind::Allreduce, input, output, count, type, op, -1});
  });
}

Request Communicator::iallreduce(void* inout, std::size_t count, DataType type, ReduceOp op) {
  return iallreduce(inout, inout, count, type, op);
}

Request Communicator::ibroadcast(void* buffer, std::size_t bytes, int root) {
  return queued(*impl_, [impl = impl_.get(), buffer, bytes, root] {
    return impl->call(
        {coll::CollectiveKind::Broadcast, buffer, buffer, bytes, DataType::Int32, ReduceOp::Sum, root});
  });
}

Request Communicator::ibroadcast_from_member(void* buffer, std::size_t bytes, int root_member) {
  return queued(*impl_, [impl = impl_.get(), buffer, bytes, root_member] {
    // The view is the same on every member between calls: all find the
    // root at the same rank, or all fail alike.
    const std::vector<int>& members = impl->view().members;
    const auto it = std::find(members.begin(), members.end(), root_member);
    if (it == members.end())
      throw Error(Errc::RootLost, "broadcast: its root, member " + std::to_string(root_member) +
                                      ", is not a member (lost before the call ran, or never was)");
    const int root = static_cast<int>(it - members.begin());
    return impl->call(
        {coll::CollectiveKind::Broadcast, buffer, buffer, bytes, DataType::Int32, ReduceOp::Sum, root});
  });
}

Request Communicator::ibarrier() {
  // The two words live in the queued call itself.
  return queued(*impl_, [impl = impl_.get(), words = std::array<std::int64_t, 2>{1, 0}]() mutable {
    return impl->call(
        {coll::CollectiveKind::Allreduce, &words[0], &words[1], 1, DataType::Int64, ReduceOp::Sum, -1});
  });
}

int Communicator::on_membership_change(std::function<void(const MembershipChange&)> callback) {
  return impl_->serially([&] {
    const int id = impl_->next_callback_id++;
    impl_->callbacks.emplace(id, std::move(callback));
    return id;
  });
}

void Communicator::remove_membership_callback(int id) {
  impl_->serially([&] { impl_->callbacks.erase(id); });
}

void Communicator::register_state(const std::string& name, void* data, std::size_t bytes) {
  impl_->serially([&] { guarded([&] { impl_->state.add(name, data, bytes); }); });
}

void Communicator::register_state(const std::string& name, std::function<std::vector<std::byte>()> save,
                                  std::function<void(std::span<const std::byte>)> load) {
  impl_->serially([&] { guarded([&] { impl_->state.add(name, std::move(save), std::move(load)); }); });
}

bool Communicator::unregister_state(const std::string& name) {
  return impl_->serially([&] { return impl_->state.remove(name); });
}
bool Communicator::joined() const { return impl_->joined; }
bool Communicator::left() const { return impl_->left; }

CollectiveResult Communicator::grow(int count) {
  return impl_->serially([&] { return guarded([&] { return impl_->grow(count); }); });
}

CollectiveResult Communicator::release(std::span<const int> ranks) {
  std::string what = "release(ranks";
  for (std::size_t i = 0; i < ranks.size() && i < 8; ++i) what += (i ? ", " : " ") + std::to_string(ranks[i]);
  what += ranks.size() > 8 ? ", ...)" : ")";
  return impl_->serially([&] { return guarded([&] { return impl_->release(ranks, what, {}); }); });
}

CollectiveResult Communicator::release_last(int count) {
  return impl_->serially([&] {
    return guarded([&] {
      const std::string what = "release_last(" + std::to_string(count) + ")";
      // A count out of range is reported by the request, on every member alike.
      const int size = impl_->view().size;
      if (count < 0 || count >= size)
        return impl_->release(
            {}, what,
            what + ": the count must be between 0 and the size less one (" + std::to_string(size - 1) + ")");
      std::vector<int> ranks;
      for (int r = size - count; r < size; ++r) ranks.push_back(r);
      return impl_->release(ranks, what, {});
    });
  });
}

}  // namespace ringmend
