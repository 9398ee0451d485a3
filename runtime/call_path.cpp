// One collective call from the application to its result: validate, settle
// (announce a change, admit spares), run the algorithm the selector picks
// (coll/) over the current epoch's channels, and after a failure recover
// (recovery.cpp), then either re-execute the call over the survivors'
// inputs, take the result from a survivor that had already finished it, or
// raise the input error on every rank.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "coll/pairwise_alltoall.hpp"
#include "coll/selector.hpp"
#include "membership/native/native_spare_pool.hpp"
#include "ringmend/core/log.hpp"
#include "ringmend/core/outcome.hpp"
#include "runtime/call_signature.hpp"
#include "runtime/communicator_impl.hpp"
#include "runtime/request.hpp"

namespace ringmend {
namespace {

progress::CallSignature signature_of(const CollectiveCall& c) {
  // An alltoall's ranks send different amounts: only its kind and type meet.
  const std::size_t count = c.kind == coll::CollectiveKind::Alltoall ? 0 : c.count;
  return call_signature(c.kind, count, c.type, c.op, c.root);
}

// Thrown inside run() for an invalid argument on this rank; it is raised
// on every rank through the recovery state exchange.
struct LocalInputError {
  std::string text;
  Errc code = Errc::InvalidArgument;
};

// Each channel rank's rank as the application sees it: its block's slot in
// an allgather's output or a reduce_scatter's input.
std::vector<int> slots_of(const membership::Epoch& e) {
  std::vector<int> slots(e.members.size());
  for (std::size_t r = 0; r < slots.size(); ++r)
    slots[r] = static_cast<int>(std::find(e.ranked.begin(), e.ranked.end(), e.members[r]) - e.ranked.begin());
  return slots;
}

}  // namespace

// ------------------------------------------------------------- collectives

std::string Communicator::Impl::validate(const CollectiveCall& c) const {
  return validate_call(c, view_.rank, view_.size);
}

coll::Call counted_call(const CollectiveCall& c, std::uint64_t seq, const int* slots,
                        const std::vector<std::size_t>& offsets,
                        const std::vector<std::size_t>& recv_offsets) {
  coll::Call call;
  call.kind = c.kind;
  if (c.kind == coll::CollectiveKind::AllgatherV)
    call.allgather = {c.input, c.output, c.count, c.type, seq, slots, c.counts.data(), offsets.data()};
  else
    call.alltoall = {c.input,
                     c.output,
                     c.type,
                     seq,
                     c.counts.data(),
                     offsets.data(),
                     c.recv_counts.data(),
                     recv_offsets.data(),
                     slots};
  return call;
}

const coll::Algorithm& Communicator::Impl::selected(coll::CollectiveKind kind, std::size_t bytes) {
  LastSelection& last = last_selection_;
  const membership::Epoch& e = *epoch_;
  if (last.epoch == &e && last.epoch_number == e.number && last.kind == kind && last.bytes == bytes)
    return *last.algorithm;
  const coll::Algorithm& algorithm = coll::select(kind, bytes, e.layout, tuning());
  last = {&e, e.number, kind, bytes, &algorithm};
  return algorithm;
}

void Communicator::Impl::execute(const CollectiveCall& c, std::uint64_t call_seq) {
  if (c.gpu) {  // its buffers are on a GPU: device_call.cpp runs it, through here again
    execute_device(c, call_seq);
    return;
  }
  if (c.kind == coll::CollectiveKind::Allgather) {
    execute_allgather(c, call_seq);
    return;
  }
  if (c.kind == coll::CollectiveKind::ReduceScatter) {
    execute_reduce_scatter(c, call_seq);
    return;
  }
  if (c.kind == coll::CollectiveKind::AllgatherV || c.kind == coll::CollectiveKind::Alltoall) {
    execute_counted(c, call_seq);
    return;
  }
  const std::size_t bytes = c.bytes();
  const membership::Epoch& e = *epoch_;
  const coll::Algorithm& algorithm = selected(c.kind, bytes);
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
    barrier_in_call(call_seq);
  }
  retained_seq_[call_seq % 2] = call_seq;
  retained_bytes_[call_seq % 2] = bytes;
  if (copy_out) std::memcpy(c.output, out.data(), bytes);
}

// Each rank's block in its slot of the output, the slots in the order of
// the ranks the application sees. A rank returns only once it has every
// block, so every rank has entered the call: survivors stay one call apart.
// A small result is written to the retained buffer and copied out at the
// end (the input may lie inside the output); every rank's result is the
// same, so a survivor that missed the end takes it from one that did not.
// A large one goes straight to the output, and a barrier ends the call (as
// a reduce_scatter's): a survivor that missed the end then has it already,
// and no copy of the whole output is made.
void Communicator::Impl::execute_allgather(const CollectiveCall& c, std::uint64_t call_seq) {
  const membership::Epoch& e = *epoch_;
  const std::size_t total = c.result_bytes(e.size);
  // Spares admitted since the call was made can leave too little room.
  if (total > c.output_bytes)
    throw LocalInputError{"allgather on rank " + std::to_string(e.app_rank()) + ": the group has " +
                          std::to_string(e.size) + " ranks now; " + std::to_string(total) +
                          " bytes of output needed, the output holds " + std::to_string(c.output_bytes)};
  const std::vector<int> slots = slots_of(e);
  const std::size_t retained = c.retained_bytes(e.size);
  void* out = retained > 0 ? scratch_for(call_seq, total).data() : c.output;
  coll::Call call;
  call.kind = coll::CollectiveKind::Allgather;
  call.allgather = {c.input, out, c.count, c.type, call_seq, slots.data()};
  coll::select(call.kind, c.bytes(), e.layout, tuning()).run(call, e.channels(), e.layout, tuning(), *this);
  if (retained == 0) barrier_in_call(call_seq);
  retained_seq_[call_seq % 2] = call_seq;
  retained_bytes_[call_seq % 2] = retained;
  if (retained > 0) std::memcpy(c.output, out, total);
}

void Communicator::Impl::barrier_in_call(std::uint64_t call_seq) {
  const membership::Epoch& e = *epoch_;
  const std::int64_t one = 1;
  std::int64_t members = 0;
  coll::Call sync;
  sync.kind = coll::CollectiveKind::Allreduce;
  sync.allreduce = {&one, &members, 1, DataType::Int64, ReduceOp::Sum, call_seq};
  coll::select(sync.kind, sizeof one, e.layout, tuning()).run(sync, e.channels(), e.layout, tuning(), *this);
}

// Each rank gets the reduction of every rank's block of its slot, written
// straight to its output. The input is laid out for the group's size when
// the application called: a re-run after spares took the lost ranks'
// places (every rank keeps its rank) reads it as it is; a re-run in a group
// of another size cannot, and every survivor gets SizeChanged. A barrier
// ends the call: a rank that returns knows that every rank had its result,
// so a survivor that missed the end of a call another finished has its
// result already (nothing to hand over).
namespace {

// A call laid out for the group's size at the call, in a group of another
// size now: SizeChanged on every survivor.
void require_size_at_call(const CollectiveCall& c, int size, std::uint64_t call_seq) {
  if (size == c.ranks_at_call) return;
  const bool counted = c.kind == coll::CollectiveKind::AllgatherV || c.kind == coll::CollectiveKind::Alltoall;
  throw LocalInputError{std::string(coll::name_of(c.kind)) + " #" + std::to_string(call_seq) +
                            ": the group went from " + std::to_string(c.ranks_at_call) + " to " +
                            std::to_string(size) + " ranks during the call, and its " +
                            (counted ? "counts are" : "input is") + " laid out for " +
                            std::to_string(c.ranks_at_call) +
                            "; the communicator has recovered: lay the call out for its new size "
                            "and call again",
                        Errc::SizeChanged};
}

}  // namespace

void Communicator::Impl::execute_reduce_scatter(const CollectiveCall& c, std::uint64_t call_seq) {
  const membership::Epoch& e = *epoch_;
  require_size_at_call(c, e.size, call_seq);
  const std::vector<int> slots = slots_of(e);
  auto& work = scratch_for(call_seq, c.bytes() * static_cast<std::size_t>(e.size));
  coll::Call call;
  call.kind = coll::CollectiveKind::ReduceScatter;
  call.reduce_scatter = {c.input, c.output, c.count, c.type, c.op, call_seq, slots.data(), work.data()};
  coll::select(call.kind, c.bytes(), e.layout, tuning()).run(call, e.channels(), e.layout, tuning(), *this);
  barrier_in_call(call_seq);
  retained_seq_[call_seq % 2] = call_seq;
  retained_bytes_[call_seq % 2] = 0;
}

// An uneven allgather or an alltoall: sizes per rank, laid out for the
// group's size at the call. As a reduce_scatter's: run again as it is where
// spares took the lost ranks' places, SizeChanged in a group of another
// size; straight to the output, and a barrier ends the call (a survivor
// that missed its end has its result already).
void Communicator::Impl::execute_counted(const CollectiveCall& c, std::uint64_t call_seq) {
  const membership::Epoch& e = *epoch_;
  require_size_at_call(c, e.size, call_seq);
  const std::vector<int> slots = slots_of(e);
  if (c.kind == coll::CollectiveKind::Alltoall && e.layout.multi_node() &&
      e.layout.ring.size() > coll::PairwiseAlltoall::kMaxMeshRanks)
    throw LocalInputError{"alltoall over more than " + std::to_string(coll::PairwiseAlltoall::kMaxMeshRanks) +
                          " ranks on several nodes is not built yet (it needs a connection per pair)"};
  const std::vector<std::size_t> offsets = offsets_of(c.counts), recv_offsets = offsets_of(c.recv_counts);
  const coll::Call call = counted_call(c, call_seq, slots.data(), offsets, recv_offsets);
  coll::select(call.kind, c.bytes(), e.layout, tuning()).run(call, e.channels(), e.layout, tuning(), *this);
  barrier_in_call(call_seq);
  retained_seq_[call_seq % 2] = call_seq;
  retained_bytes_[call_seq % 2] = 0;
}

// One application call through its attempts: what the next attempt needs
// to know of the ones before.
struct Communicator::Impl::CallInProgress {
  CallInProgress(const CollectiveCall& original, std::uint64_t number) : call(original), seq(number) {}
  const CollectiveCall& call;
  // What is executed: the call as made, or a copy with the size at the call
  // noted (the calls laid out for one size) and a broadcast's root
  // renumbered after a membership change. An allreduce runs as made: no
  // copy on the small calls' path.
  std::optional<CollectiveCall> adjusted;
  CollectiveCall& adjust() {
    if (!adjusted) adjusted = call;
    return *adjusted;
  }
  const CollectiveCall& to_run() const { return adjusted ? *adjusted : call; }
  std::uint64_t seq;
  std::string input_error;         // this member's objection to its arguments
  std::string settle_interrupted;  // another member was recovering when this one settled
  // The root (member id) the application chose in its view, else kNoMember.
  membership::MemberId root_id = membership::kNoMember;
  int size_at_start = 0;
  int ranks_in_attempt = 0;                    // the epoch's size when this member last executed the call
  bool catching_up = false;                    // another survivor finished this call: take its result
  bool settled = false;                        // settled since the last attempt (the first one's, by run())
  std::vector<membership::MemberInfo> states;  // the survivors' states after the last recovery
  CollectiveResult result;
};

// Why an attempt failed: a failure to recover from, or an error to raise
// on every member (errc >= 0).
struct Communicator::Impl::CallFailure {
  std::string cause, error_text;
  int errc = -1;
};

// The root's rank in the current epoch, or RootLost on every survivor.
void Communicator::Impl::place_root(CallInProgress& p) {
  if (p.root_id == membership::kNoMember) return;
  const auto& members = epoch_->members;
  const auto it = std::find(members.begin(), members.end(), p.root_id);
  if (it == members.end())
    throw Error(Errc::RootLost, "broadcast #" + std::to_string(p.seq) + ": its root (member " +
                                    std::to_string(p.root_id) + ") failed before any survivor had the data");
  p.adjust().root = static_cast<int>(it - members.begin());
}

// A broadcast whose root died, and that no survivor finished, cannot be
// executed: RootLost, the change announced first (as by every error after
// a recovery), before any spare is admitted, on every survivor alike,
// whether it learns of the death in this call or came from catching up.
void Communicator::Impl::fail_if_root_lost(CallInProgress& p) {
  if (p.root_id == membership::kNoMember || epoch_->contains(p.root_id)) return;
  if (pending_) announce_pending();
  place_root(p);
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
  // Only this thread counts the calls (others read the count): no locked add.
  seq.store(seq.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  CallInProgress p(call, seq.load(std::memory_order_relaxed));
  current_seq_ = p.seq;
  // The progress record: the collective once it executes (membership work
  // before it, where there is any, says so: settle(), recover_in_call()),
  // the application's own code once the call returns, however it ends.
  struct BackToApplication {
    HangDetector& hang;
    std::uint64_t seq;
    ~BackToApplication() { hang.enter(progress::Phase::Application, seq); }
  } const back_to_application{hang_, p.seq};
  p.input_error = validate(call);
  if (!p.input_error.empty() && !fault_tolerant_) throw Error(Errc::InvalidArgument, p.input_error);
  // The application chose the root in its view; a change it has not been
  // told of yet (see recover_in_call()) is announced now, and the root renumbered.
  if (call.kind == coll::CollectiveKind::Broadcast && p.input_error.empty())
    p.root_id = view_.members[static_cast<std::size_t>(call.root)];
  call_root_ = p.root_id;
  p.size_at_start = view_.size;
  if (call.kind != coll::CollectiveKind::Allreduce) p.adjust().ranks_at_call = view_.size;
  p.ranks_in_attempt = epoch_->size;
  fail_if_root_lost(p);
  // A settle() that finds another member recovering (a round of the pool)
  // joins that recovery below, as after a failure in this call.
  if (p.input_error.empty()) {
    try {
      settle(p.result, p.seq);
      p.settled = true;
    } catch (const transport::Interrupted& e) {
      p.settle_interrupted = e.what();
    }
  }
  place_root(p);
  if (p.input_error.empty() && p.settle_interrupted.empty() && call.no_op()) {
    p.result.contributors = epoch_->size;
    p.result.epoch = epoch_->number;
    return std::move(p.result);
  }
  // The deadline covers this call only, however it ends (check() sets it).
  const ScopedFlag deadline_on(has_deadline_);
  deadline_set_ = false;
  for (;;) {
    const std::optional<CallFailure> failed = attempt(p);
    if (!failed) return std::move(p.result);
    recover_in_call(p, *failed);
  }
}

// One attempt of the call in the current epoch: executed, or its result
// taken from a survivor that finished it; nullopt when it completed.
std::optional<Communicator::Impl::CallFailure> Communicator::Impl::attempt(CallInProgress& p) {
  try {
    if (!p.settle_interrupted.empty()) throw transport::Interrupted(std::exchange(p.settle_interrupted, {}));
    if (!p.input_error.empty()) throw LocalInputError{p.input_error};
    if (p.catching_up) {
      // Another survivor finished this collective before the failure: take
      // its result, which contains every original contribution.
      hang_.enter(progress::Phase::Collective, p.seq, signature_of(p.call));
      // (An allgather's result has a block per rank of the epoch it ran in,
      // which this member was in too.)
      const std::size_t bytes = p.call.retained_bytes(p.ranks_in_attempt);
      catch_up(p.seq, p.states, bytes);
      if (p.call.gpu)
        device_result_from(p.call, scratch_[p.seq % 2].data());
      else
        std::memcpy(p.call.output, scratch_[p.seq % 2].data(), bytes);
      retained_seq_[p.seq % 2] = p.seq;
      retained_bytes_[p.seq % 2] = bytes;
      p.result.contributors =
          p.call.kind == coll::CollectiveKind::Allgather ? p.ranks_in_attempt : p.size_at_start;
    } else {
      const bool ahead = std::any_of(p.states.begin(), p.states.end(), [&](const membership::MemberInfo& s) {
        return s.seq < static_cast<std::int64_t>(p.seq) && !s.finalizing;
      });
      if (ahead) catch_up(p.seq - 1, p.states, retained_bytes_[(p.seq - 1) % 2]);
      p.states.clear();
      // Only after the catch-up above: the survivors behind wait for it.
      // (The first attempt comes straight from run()'s settle: nothing
      // happened in between that a second one could find.)
      if (!std::exchange(p.settled, false)) {
        fail_if_root_lost(p);
        settle(p.result, p.seq);
        place_root(p);
      }
      hang_.enter(progress::Phase::Collective, p.seq, signature_of(p.call));
      p.ranks_in_attempt = epoch_->size;
      execute(p.to_run(), p.seq);
      p.result.contributors = epoch_->size;
    }
    // Off the recovery's path: the next worker, the old ones closed.
    ucx_.epoch_in_use();
    p.result.epoch = view_.number;
    return std::nullopt;
  } catch (const transport::Interrupted& e) {
    return CallFailure{e.what(), {}, -1};
  } catch (const transport::Mismatch& e) {
    return CallFailure{"inconsistent call", e.what(), static_cast<int>(Errc::Mismatch)};
  } catch (const LocalInputError& e) {
    return CallFailure{"invalid argument", e.text, static_cast<int>(e.code)};
  }
}

// After a failed attempt: recover with the other survivors, then learn from
// their states how the call goes on (or fails on every one of them alike).
void Communicator::Impl::recover_in_call(CallInProgress& p, const CallFailure& f) {
  if (!fault_tolerant_)
    throw Error(f.errc >= 0 ? static_cast<Errc>(f.errc) : Errc::FaultToleranceUnavailable,
                f.errc >= 0
                    ? f.error_text
                    : "a rank failed (" + f.cause +
                          ") and this job runs without fault tolerance; launch with "
                          "ringmend-run (or mpirun with ringmend's FT arguments) and an MPI with ULFM");
  membership::MemberInfo mine = my_state(p.seq);
  mine.errc = f.errc;
  mine.set_error(f.error_text);
  hang_.enter(progress::Phase::Recovery, p.seq);
  RecoveryOutcome r = recover(mine, f.cause);
  if (native_membership()) hang_.fence_lost(r.lost, epoch_->my_id());
  pending_ = pending_ ? merged(*pending_, r.change) : r.change;
  p.states = std::move(r.infos);
  p.catching_up = std::any_of(p.states.begin(), p.states.end(), [&](const membership::MemberInfo& s) {
    return s.seq > static_cast<std::int64_t>(p.seq);
  });
  // Survivors that had finished this collective see the failure in their
  // next call. Those that take its result from them (catching up) keep
  // the old view until their own next call, so that every survivor sees
  // the change in the same call (and chooses, say, a broadcast root in the
  // same membership). Otherwise the change is announced in this call,
  // once spares are admitted (settle(), before the call is executed).
  // An input error anywhere is raised everywhere.
  auto bad = std::find_if(p.states.begin(), p.states.end(),
                          [](const membership::MemberInfo& s) { return s.errc >= 0; });
  if (bad != p.states.end()) fail_in_step(p.states, p.seq, Error(static_cast<Errc>(bad->errc), bad->error));
  // A result that no survivor can hand over fails the call on every
  // survivor alike, and leaves them all after the newest call.
  if (const std::string why = catch_up_impossible(p.states); !why.empty())
    fail_in_step(p.states, p.seq, Error(Errc::Internal, why));
  // A member that finalized while we are in a collective will never join it.
  for (const auto& s : p.states)
    if (s.finalizing && s.seq == static_cast<std::int64_t>(p.seq))
      throw Error(Errc::Mismatch, "member " + std::to_string(s.id) +
                                      " finalized while this rank called collective #" +
                                      std::to_string(p.seq));
}

// --------------------------------------------------- announcing a change

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
  // A view change of the native membership (a joiner asking in, another
  // member's recovery) is finished by every member's data path taking
  // part; a call that never waits (a small one in shared memory) would
  // never look, and the change would wait for the end of the job. Each
  // call looks first (a cached flag, the group turned at most every ms).
  if (native_membership() && epoch_->failure_noticed())
    throw transport::Interrupted("the native membership: a view change is under way");
  // A request (grow, release) admits after its call instead: a joiner's
  // first call must be one its application makes.
  if (!requesting_ && pool_ && settings_.spare_policy == SparePolicy::Replace &&
      epoch_->size < target_size_ && pool_->spares_left() > 0) {
    hang_.enter(progress::Phase::Recovery, call_seq);
    regroup(call_seq, false, false);
  }
  if (!pending_) return;
  hang_.enter(progress::Phase::Recovery, call_seq);
  const MembershipChange change = announce_pending();
  result.recovered = true;
  result.lost = change.lost;
  result.joined = change.joined;
  result.released = change.released;
}

// An error that every survivor raises alike after a recovery: each is told
// of the change first, and all go on after the newest collective any of
// them was in, so that their next calls match.

}  // namespace ringmend
