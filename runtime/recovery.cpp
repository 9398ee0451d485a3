// The recovery: when a wait is interrupted (a peer died, the control group
// was revoked) or a peer's header shows an inconsistent call, every
// survivor revokes, agrees on the lost members, and has the epoch builder
// (membership/) make the next epoch, through the spare pool when spares wait
// or under the native membership (admission.cpp). Start-up takes the same
// path when a rank dies before the first epoch is agreed. The survivors'
// states say whether the interrupted call can be completed (catch-up).
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
#include "runtime/subgroup.hpp"

namespace ringmend {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

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
  for (const std::weak_ptr<Subgroup>& w : subgroups) {
    const std::shared_ptr<Subgroup> s = w.lock();
    if (!s || !s->running() || mine.subgroups_listed == membership::MemberInfo::kSubgroupsListed) continue;
    mine.subgroups[mine.subgroups_listed++] = {s->identity(), static_cast<std::int64_t>(s->finished())};
  }
  hang_.address_notices(mine);
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
  return fault_tolerant_ && current && !current->ctrl->uniform_outcomes();
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
  if (recovers_through_pool()) {
    all_came = epoch_->ctrl->agree_unless_revoked();
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
  RecoveryRecord rec;
  rec.start = Clock::now();
  if (pool_ && (epoch_ || attempt_)) pool_->settle(attempt_ ? *attempt_->ctrl : *epoch_->ctrl);
  rec.shrink_seconds = seconds_since(rec.start);
  if (recovers_through_pool()) return recover_with_spares(mine, cause, rec.start, rec.shrink_seconds);
  rec.old_epoch = epoch_ ? epoch_->number : 0;
  rec.old_size = epoch_ ? epoch_->size : static_cast<int>(attempt_members_.size());
  // NCCL has no failure detector: its kernels spin until stopped here.
  stop_device_collectives();
  if (epoch_ && !attempt_) attempt_members_ = epoch_->members;
  if (epoch_) {
    rec.old_members = epoch_->members, rec.old_infos = epoch_->infos;
  } else if (attempt_ && attempt_->infos.size() == attempt_->members.size()) {
    // At start-up: the first attempt, if it got as far as its exchange.
    rec.old_members = attempt_->members, rec.old_infos = attempt_->infos;
  }
  log_failure_noticed(mine, cause);
  if (epoch_ && !attempt_) {
    // Counted with the shrink: the failure is agreed on there first.
    const auto meet_start = Clock::now();
    meet_recovering();
    rec.shrink_seconds += seconds_since(meet_start);
  }
  RecoveryOutcome out;
  for (int attempt = 0; !shrink_and_rebuild(mine, attempt, out, rec); ++attempt) {
  }
  attempt_members_.clear();
  out.infos = epoch_->infos;
  std::sort(out.lost.begin(), out.lost.end());
  out.change = recovered(mine, cause, out.lost, rec);
  return out;
}

// One attempt: shrink the control group, then build the next epoch over
// the survivors; true once it is ready on every survivor.
bool Communicator::Impl::shrink_and_rebuild(const membership::MemberInfo& mine, int attempt,
                                            RecoveryOutcome& out, RecoveryRecord& rec) {
  start_recovery_attempt(rec.start, attempt, rec.old_epoch);
  // Stop using the old channels but keep them open until the next epoch
  // is agreed (Fabric::retire says why).
  if (epoch_) epoch_->retire();
  if (attempt_) attempt_->retire();
  membership::Control& ctrl = attempt_ ? *attempt_->ctrl : *epoch_->ctrl;
  const auto shrink_start = Clock::now();
  std::string shrink_error;
  std::optional<membership::Control::Shrunk> shrunk = ctrl.shrink(shrink_error);
  rec.shrink_seconds += seconds_since(shrink_start);
  rec.attempts = attempt + 1;
  if (!shrunk) {
    log("shrink failed (" + shrink_error + "), retrying");
    return false;
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
  if (faults_.armed()) faults_.at(FaultPhase::Rebuild, current_seq_, attempt, rec.old_epoch);
  const auto rebuild_start = Clock::now();
  auto next = builder_.build(epoch_.get(), std::move(transition), mine);
  rec.rebuild_seconds += seconds_since(rebuild_start);
  if (attempt_) retired_.push_back(std::move(attempt_));
  if (!next->ready) {
    attempt_ = std::move(next);
    log("a failure interrupted the rebuild; recovering again");
    return false;
  }
  // Every survivor has left the old epochs: their channels can close.
  retired_.clear();
  epoch_ = std::move(next);
  log("epoch set up: " + builder_.laps());
  return true;
}

MembershipChange Communicator::Impl::change_to_current(std::uint64_t old_epoch, int old_size,
                                                       const std::vector<membership::MemberId>& lost) const {
  MembershipChange change;
  change.old_epoch = old_epoch;
  change.new_epoch = epoch_->number;
  change.lost = lost;
  change.old_size = old_size;
  change.new_size = epoch_->size;
  change.new_rank = epoch_->app_rank();
  return change;
}

// The change a recovery made, and one line for the operator (from the new
// epoch's first rank; the others say it at debug level).
MembershipChange Communicator::Impl::recovered(const membership::MemberInfo& mine, const std::string& cause,
                                               const std::vector<membership::MemberId>& lost,
                                               const RecoveryRecord& rec) {
  MembershipChange change = change_to_current(rec.old_epoch, rec.old_size, lost);
  change.recovery_seconds = seconds_since(rec.start);
  change.shrink_seconds = rec.shrink_seconds;
  change.rebuild_seconds = rec.rebuild_seconds;
  change.attempts = rec.attempts;
  set_log_place(epoch_->my_id(), epoch_->number);
  const std::string lost_text = with_nodes(lost, rec.old_members, rec.old_infos);
  char times[160];
  std::snprintf(times, sizeof times, "in %.1f ms (revoke+shrink %.1f ms, rebuild %.1f ms, %d attempt%s)",
                change.recovery_seconds * 1e3, rec.shrink_seconds * 1e3, rec.rebuild_seconds * 1e3,
                rec.attempts, rec.attempts == 1 ? "" : "s");
  const std::string what = lost.empty() ? "rebuilt the epoch, no member lost,"
                                        : std::string("recovered from the loss of member") +
                                              (lost.size() == 1 ? " " : "s ") + lost_text;
  ringmend::log(epoch_->app_rank() == 0 ? LogLevel::Info : LogLevel::Debug,
                what + " in collective #" + std::to_string(mine.seq) + " (noticed as: " + cause + "): " +
                    std::to_string(rec.old_size) + " -> " + std::to_string(epoch_->size) + " ranks, epoch " +
                    std::to_string(epoch_->number) + ", " + times + "; rebuild steps: " + builder_.laps());
  return change;
}

}  // namespace ringmend
