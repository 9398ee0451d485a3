// Spares admitted into the membership, members released from it, and the
// state the joiners receive.
//
// A recovery with spares waiting (recover_with_spares) takes one round of
// the spare pool (membership/spare_pool.hpp) instead of shrinking the
// members' communicator: the round drops the dead and decides which spares
// take their places. Members also regroup at a collective-call boundary
// that every member reaches in the same call (settle(), see
// call_path.cpp, for spares that could not join during the recovery;
// a request: grow or release, resize.cpp). Either way the epoch builder
// makes the Grow epoch, and before its agreement one survivor sends the
// registered state straight to each joiner over that epoch's channels: the
// agreement makes the epoch and the state current on every member, or on
// none (then the members go round again and the joiners wait as spares
// again). docs/elastic.md tells the story.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "coll/direct_transfer.hpp"
#include "ringmend/core/log.hpp"
#include "runtime/communicator_impl.hpp"

namespace ringmend {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<int> missing_from(const std::vector<int>& these, const std::vector<int>& those) {
  std::vector<int> out;
  for (int id : these)
    if (std::find(those.begin(), those.end(), id) == those.end()) out.push_back(id);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

membership::PoolEntry Communicator::Impl::first_member_entry(const membership::Epoch& first,
                                                             std::int64_t seq_in) const {
  // A first member's id is its world rank, its position its rank among the
  // first members.
  membership::PoolEntry entry;
  entry.id = first.ctrl->world_ranks().at(static_cast<std::size_t>(first.ctrl->rank()));
  entry.position = first.ctrl->rank();
  entry.view_size = first.ctrl->size();
  entry.target_size = target_size_;
  entry.seq = seq_in;
  return entry;
}

membership::PoolEntry Communicator::Impl::member_entry(std::int64_t seq_in) const {
  // Positions are ranks in the membership the application sees: a joiner
  // takes a lost member's.
  const auto& seen = view_.members;
  const auto at = std::find(seen.begin(), seen.end(), epoch_->my_id());
  membership::PoolEntry entry;
  entry.id = epoch_->my_id();
  entry.position = at != seen.end() ? static_cast<int>(at - seen.begin()) : view_.size + epoch_->rank;
  entry.view_size = view_.size;
  entry.target_size = target_size_;
  entry.seq = seq_in;
  return entry;
}

// The state transfer's waits, in an epoch not yet agreed on: its failure
// monitor, the call's deadline and the fault rules at its number, yielding
// the CPU only when the ranks that take part on this machine (the sender
// and the joiners) outnumber its CPUs. The epoch may be oversubscribed
// while they are not: the other members sleep in the agreement meanwhile
// (ulfm::agree_sleeping), and a wait that sleeps between chunks would make
// the transfer ten times slower than the link.
struct Communicator::Impl::TransferWait final : transport::WaitContext {
  TransferWait(Impl& impl, const membership::Epoch& e, bool crowded)
      : impl_(impl), e_(e), crowded_(crowded) {}
  void check() override {
    if (e_.failure_noticed())
      throw transport::Interrupted(std::string(e_.ctrl->backend()) +
                                   " reported a failed process or a revoked group");
    impl_.check_deadline();
  }
  void on_phase(transport::Phase phase, int step) override { impl_.fault_at(phase, step, e_.number); }
  bool oversubscribed() const override { return crowded_; }

 private:
  Impl& impl_;
  const membership::Epoch& e_;
  bool crowded_;
};

bool Communicator::Impl::regroup(std::uint64_t joiner_next_seq, bool leaving, bool after_request) {
  const auto start = Clock::now();
  const Watchdog watchdog = recovery_watchdog(leaving ? "releasing members" : "a change of membership");
  std::vector<int> released;  // members that left in this regroup
  double pool_seconds = 0;    // in the pool's rounds (MPI: shrink, allgather, agreement, split)
  for (int attempt = 0;; ++attempt) {
    if (past_recovery_bound(start))
      throw Error(Errc::Internal,
                  std::string(leaving || !released.empty() ? "releasing members" : "admitting spares") +
                      " did not complete within " + std::to_string(settings_.recovery_timeout_seconds) +
                      " s (RINGMEND_RECOVERY_TIMEOUT)");
    membership::PoolEntry entry = member_entry(static_cast<std::int64_t>(joiner_next_seq));
    entry.leaving = leaving ? 1 : 0;
    const membership::MemberInfo mine = my_state(seq);
    const auto round_start = Clock::now();
    membership::RoundOutcome round = pool_round(entry, mine);
    pool_seconds += seconds_since(round_start);
    if (round.recovery_first) {
      // Another member recovers from a failure: this one takes part.
      // Before a call, as a failure in that call (the caller recovers);
      // after a request's call, here (the request returns after it).
      if (!after_request) throw transport::Interrupted("another member is recovering from a failure");
      join_recovery(joiner_next_seq);
      continue;
    }
    target_size_ = round.target_size;
    released.insert(released.end(), round.released.begin(), round.released.end());
    if (round.left) return false;
    std::vector<membership::MemberId> present = round.present, members = epoch_->members;
    std::sort(present.begin(), present.end());
    std::sort(members.begin(), members.end());
    if (round.joiners == 0 && present == members) {
      // Nothing changed. Under the native membership the round had a view
      // of its own, in which the epoch's control group (named for its view)
      // would fail at its first use and cost a rebuild: the epoch goes on
      // with the round's group over the same members instead. (A member
      // whose roster failed meanwhile changes the view again: the others
      // then recover as from any failure.)
      if (native_membership() && round.grown && round.grown->world_ranks() == epoch_->ctrl->world_ranks()) {
        round.grown->watch();
        epoch_->ctrl = std::move(round.grown);
      }
      return true;
    }
    if (faults_.armed()) faults_.at(FaultPhase::Admit, current_seq_, attempt, epoch_->number);
    if (build_grown(round, joiner_next_seq, mine)) break;
    log("a failure interrupted a round of the pool; another round");
  }
  announce_regroup(released, start, pool_seconds, joiner_next_seq);
  return true;
}

// One change for the application, from the membership it saw to the one a
// regroup made, and the operator's line.
void Communicator::Impl::announce_regroup(std::vector<int> released, Clock::time_point start,
                                          double pool_seconds, std::uint64_t joiner_next_seq) {
  MembershipChange change = pending_.value_or(MembershipChange{});
  if (!pending_) change.old_epoch = view_.number, change.old_size = view_.size;
  change.new_epoch = epoch_->number;
  change.new_size = epoch_->size;
  change.new_rank = epoch_->app_rank();
  std::sort(released.begin(), released.end());
  change.lost = missing_from(missing_from(view_.members, epoch_->members), released);
  change.joined = missing_from(epoch_->members, view_.members);
  change.released = released;
  change.admit_seconds = seconds_since(start);
  change.state_seconds = state_seconds_;
  change.state_bytes = state_bytes_;
  pending_ = change;
  set_log_place(epoch_->my_id(), epoch_->number);
  char took[256];
  if (change.joined.empty())
    std::snprintf(took, sizeof took, "%.1f ms (pool round %.1f ms: %s)", change.admit_seconds * 1e3,
                  pool_seconds * 1e3, pool_->laps().c_str());
  else
    std::snprintf(took, sizeof took,
                  "%.1f ms (pool round %.1f ms: %s; state %.1f ms, sent before collective #%llu)",
                  change.admit_seconds * 1e3, pool_seconds * 1e3, pool_->laps().c_str(), state_seconds_ * 1e3,
                  static_cast<unsigned long long>(joiner_next_seq));
  const auto ids = [](const std::vector<int>& v) {
    std::string s;
    for (int id : v) s += (s.empty() ? "" : ", ") + std::to_string(id);
    return s;
  };
  const LogLevel level = epoch_->app_rank() == 0 ? LogLevel::Info : LogLevel::Debug;
  const std::string size =
      std::to_string(change.new_size) + " ranks, epoch " + std::to_string(epoch_->number);
  if (!released.empty())
    ringmend::log(level, "released member" + std::string(released.size() == 1 ? " " : "s ") + ids(released) +
                             " in " + took + ": " + size);
  if (!change.joined.empty()) {
    const int spares = pool_->spares_left();
    ringmend::log(level, "admitted spare" + std::string(change.joined.size() == 1 ? " " : "s ") +
                             ids(change.joined) + " in " + took + ": " + size + ", " +
                             std::to_string(spares) + (spares == 1 ? " spare" : " spares") +
                             " left; rebuild steps: " + builder_.laps());
  }
}

Communicator::Impl::RecoveryOutcome Communicator::Impl::recover_with_spares(
    const membership::MemberInfo& mine, const std::string& cause, Clock::time_point start, double settled) {
  // From the first attempt at start-up (recovers_through_pool), which
  // stays open until the next epoch is agreed.
  membership::Epoch* from = epoch_.get();
  if (attempt_) {  // a build that failed here (recovers_through_pool says when)
    if (!from) from = attempt_.get();
    retired_.push_back(std::move(attempt_));
  }
  RecoveryRecord r;
  r.old_epoch = from->number;
  r.old_members = from->members;
  r.old_infos = from->infos;
  if (!epoch_ && (r.old_members.empty() || r.old_infos.size() != r.old_members.size())) {
    r.old_members = from->ctrl->world_ranks();  // its exchange failed: the first members are world ranks
    r.old_infos.clear();
  }
  r.old_size = from->ctrl->size();
  r.start = start;
  r.shrink_seconds = r.pool_seconds = settled;
  stop_device_collectives();
  log_failure_noticed(mine, cause);
  for (int attempt = 0; !pool_recovery_round(mine, *from, attempt, r); ++attempt) {
  }
  RecoveryOutcome out;
  out.infos = epoch_->infos;
  // A joiner has no collective state of its own: it starts in the members'.
  for (auto& info : out.infos)
    if (info.joining) info.seq = mine.seq, info.held[0] = info.held[1] = 0;
  out.lost = missing_from(r.old_members, epoch_->members);
  out.change = recovered_through_pool(mine, cause, out.lost, r);
  return out;
}

// One round of the pool in a recovery and the epoch it makes; true once
// that epoch is ready on every member.
bool Communicator::Impl::pool_recovery_round(const membership::MemberInfo& mine, membership::Epoch& from,
                                             int attempt, RecoveryRecord& r) {
  start_recovery_attempt(r.start, attempt, r.old_epoch);
  // Stop using the epoch's channels (kept open until the next epoch is
  // agreed), and revoke it: a member waiting in them learns of the
  // recovery from the revoke, and the spares from the pool's (the round).
  from.retire();
  from.ctrl->revoke();
  membership::PoolEntry entry = epoch_ ? member_entry(mine.seq) : first_member_entry(from, mine.seq);
  // A joiner resumes inside this collective: not one that errs, that some
  // member has finished or that the application did not make itself.
  // At start-up (no epoch yet: the native membership's first build
  // failed here) the application has registered no state for a joiner.
  entry.hold = mine.errc >= 0 || mine.finalizing || requesting_ || holding_spares_ || !epoch_ ? 1 : 0;
  entry.needs = call_root_;
  entry.recovering = 1;
  // Policy shrink (the native membership recovers through the pool with
  // it too): a spare replaces nobody; joiners still grow the job.
  if (settings_.spare_policy != SparePolicy::Replace) entry.target_size = 0;
  const auto round_start = Clock::now();
  membership::RoundOutcome round = pool_round(entry, mine);
  r.pool_seconds += seconds_since(round_start);
  r.shrink_seconds += pool_->shrink_seconds();
  r.attempts = attempt + 1;
  // Members that came for something else join this recovery: again.
  if (round.recovery_first) return false;
  if (!round.grown)
    throw Error(Errc::Internal, "recovery: the spare pool's round gave this member no membership");
  target_size_ = round.target_size;
  r.held = round.held;
  if (faults_.armed()) faults_.at(FaultPhase::Rebuild, current_seq_, attempt, r.old_epoch);
  if (round.joiners > 0 && faults_.armed()) faults_.at(FaultPhase::Admit, current_seq_, attempt, r.old_epoch);
  const auto rebuild_start = Clock::now();
  // The joiners' first call is the one the members are in.
  const bool built = build_grown(round, static_cast<std::uint64_t>(mine.seq), mine);
  r.rebuild_seconds += seconds_since(rebuild_start);
  if (!built) log("a failure interrupted the rebuild; recovering again");
  return built;
}

// The change a recovery through the pool made, and the operator's line.
// Split as a recovery and an admission made one after the other would be:
// the recovery proper (the round, the new epoch), then what admitting
// added (the state sent to the joiners, inside the epoch's build).
MembershipChange Communicator::Impl::recovered_through_pool(const membership::MemberInfo& mine,
                                                            const std::string& cause,
                                                            const std::vector<membership::MemberId>& lost,
                                                            const RecoveryRecord& r) {
  MembershipChange change = change_to_current(r.old_epoch, r.old_size, lost);
  change.joined = missing_from(epoch_->members, r.old_members);
  change.admit_seconds = change.joined.empty() ? 0 : state_seconds_;
  change.recovery_seconds = seconds_since(r.start) - change.admit_seconds;
  change.shrink_seconds = r.shrink_seconds;
  change.rebuild_seconds = change.recovery_seconds - r.shrink_seconds;
  change.state_seconds = state_seconds_;
  change.state_bytes = state_bytes_;
  change.attempts = r.attempts;
  set_log_place(epoch_->my_id(), epoch_->number);
  const std::string what = lost.empty() ? "rebuilt the epoch, no member lost,"
                                        : std::string("recovered from the loss of member") +
                                              (lost.size() == 1 ? " " : "s ") +
                                              with_nodes(lost, r.old_members, r.old_infos);
  std::string joiner_ids;
  for (int id : change.joined) joiner_ids += (joiner_ids.empty() ? "" : ", ") + std::to_string(id);
  const int spares = pool_->spares_left();
  const std::string admitted = change.joined.empty()
                                   ? (r.held ? "; spares wait for the next call every member is in" : "")
                                   : "; spare" + std::string(change.joined.size() == 1 ? " " : "s ") +
                                         joiner_ids + " admitted, " + std::to_string(spares) +
                                         (spares == 1 ? " spare" : " spares") + " left";
  char times[256];
  std::snprintf(
      times, sizeof times,
      "in %.1f ms (pool round %.1f ms: %s; new epoch %.1f ms, of which sending the state %.1f ms here; %d "
      "attempt%s)",
      (change.recovery_seconds + change.admit_seconds) * 1e3, r.pool_seconds * 1e3, pool_->laps().c_str(),
      r.rebuild_seconds * 1e3, state_seconds_ * 1e3, r.attempts, r.attempts == 1 ? "" : "s");
  ringmend::log(epoch_->app_rank() == 0 ? LogLevel::Info : LogLevel::Debug,
                what + " in collective #" + std::to_string(mine.seq) + " (noticed as: " + cause +
                    "): " + std::to_string(r.old_size) + " -> " + std::to_string(epoch_->size) +
                    " ranks, epoch " + std::to_string(epoch_->number) + admitted + ", " + times +
                    "; rebuild steps: " + builder_.laps());
  return change;
}

void Communicator::Impl::serve_as_spare() {
  static constexpr const char* kNotNeeded = "the job finished without needing this spare";
  // Dead, or out of reach (this spare's node cut off): either way no
  // member will ever admit it.
  static constexpr const char* kMembersLost =
      "every member of the job is gone or out of reach, and none said goodbye";
  ringmend::log(LogLevel::Debug, "spare: waiting to be admitted");
  // Membership work until its first call (a waiting spare stamps nothing:
  // its admission, however long, must not look like a member that does not
  // come to the call).
  hang_.enter(progress::Phase::Recovery, 0);
  for (int rounds = 0;; ++rounds) {
    if (faults_.armed()) faults_.at(FaultPhase::Spare, 0, rounds, 0);
    const auto wait = pool_->wait_for_round();
    if (wait == membership::SparePool::SpareWait::JobFinished) throw SpareDismissed{0, kNotNeeded};
    if (wait == membership::SparePool::SpareWait::MembersLost) throw SpareDismissed{1, kMembersLost};
    // A process started later (RINGMEND_JOIN) asks to join, and takes the
    // member id the members give it; a spare of the job keeps its world rank.
    membership::PoolEntry entry;
    entry.joining = settings_.join ? 1 : 0;
    membership::RoundOutcome round =
        pool_->round(entry, builder_.identify(nullptr, membership::MemberInfo{}, true, !settings_.join));
    if (round.ending) throw SpareDismissed{0, kNotNeeded};
    if (round.no_members) throw SpareDismissed{1, kMembersLost};
    if (!round.joined) continue;
    // The size the job keeps (grow and release change it): a joiner
    // decides as the members do when the next member is lost.
    target_size_ = round.target_size;
    if (build_grown(round, 0, membership::MemberInfo{})) break;
    // The epoch failed: a spare again, until the members' next round.
  }
  joined = true;
  update_view();
  if (!state_mismatch_.empty()) throw Error(Errc::InvalidArgument, state_mismatch_);
  set_log_place(epoch_->my_id(), epoch_->number);
  ringmend::log(LogLevel::Debug, "spare admitted as member " + std::to_string(epoch_->my_id()) + ", rank " +
                                     std::to_string(epoch_->app_rank()) + " of " +
                                     std::to_string(epoch_->size) + "; its first collective is #" +
                                     std::to_string(seq + 1));
}

membership::RoundOutcome Communicator::Impl::pool_round(const membership::PoolEntry& entry,
                                                        const membership::MemberInfo& mine) {
  return pool_->round(entry, builder_.identify(epoch_.get(), mine, false, false));
}

bool Communicator::Impl::build_grown(membership::RoundOutcome& round, std::uint64_t joiner_next_seq,
                                     const membership::MemberInfo& mine) {
  // A joiner here is one of the world's spares (no previous epoch).
  const bool joiner = round.joined;
  // The state goes to the joiners before the epoch's agreement; an epoch
  // without joiners keeps the builder's fallback to UCX inside a node.
  membership::EpochBuilder::BeforeAgreement send_state;
  if (round.joiners > 0)
    send_state = [&](const membership::Epoch& e) { return transfer_state(e, joiner_next_seq); };
  auto next = builder_.build(joiner ? nullptr : epoch_.get(),
                             membership::Grow{round.joiners, std::move(round.grown), joiner,
                                              std::move(round.positions), std::move(round.infos)},
                             mine, send_state);
  if (!next->ready) {
    // Revoked, whatever made it fail: a failure that no step here saw (a
    // process that died before the agreement, with no traffic to it) fails
    // the agreement alone, and when the pool was lent to this epoch the
    // spares that go back to waiting learn of the next round from this.
    next->ctrl->revoke();
    next->retire();
    retired_.push_back(std::move(next));
    return false;
  }
  // Every member is in the new epoch: the old one's channels can close.
  std::unique_ptr<membership::Epoch> previous = std::exchange(epoch_, std::move(next));
  if (previous) previous->retire();
  retired_.clear();
  return true;
}

bool Communicator::Impl::transfer_state(const membership::Epoch& e, std::uint64_t joiner_next_seq) {
  state_seconds_ = 0;
  state_bytes_ = 0;
  state_mismatch_.clear();
  // Each joiner receives from one survivor (Epoch::state_source_of: one on
  // its node if there is one); the other survivors take no part and go on
  // to the epoch's agreement, which waits for them (EpochBuilder::build).
  const std::vector<int> joiners = e.state_receivers_of(e.rank);
  const int source = e.state_source_of(e.rank);
  const bool joining = source >= 0;
  if (joiners.empty() && !joining) return false;
  const auto start = Clock::now();
  transport::Channel& channel = *e.channels().flat;
  // Chunks of at least 4 MiB: every chunk is one operation posted and
  // matched on each side, and the channel pipelines inside a message
  // anyway; with the ring's 256 KiB chunks, 64 MiB of state crossed shared
  // memory at 6 GB/s, with 4 MiB at 10 (the link's own rate: 15).
  const std::size_t chunk = std::max(tuning().chunk_bytes, std::size_t{4} << 20);
  std::vector<int> taking_part;
  for (int j : e.joiner_ranks()) taking_part.push_back(j), taking_part.push_back(e.state_source_of(j));
  std::sort(taking_part.begin(), taking_part.end());
  taking_part.erase(std::unique(taking_part.begin(), taking_part.end()), taking_part.end());
  TransferWait wait(*this, e, e.crowd_this_machine(taking_part));
  // First the description (the joiners' next call, names and sizes), then
  // each entry, straight from the application's buffers to every joiner.
  std::string passes;  // each pass's time, for the debug log
  const auto pass = [&](void* data, std::size_t bytes) {
    const auto pass_start = Clock::now();
    if (!joining)
      coll::send_direct(channel, joiners, data, bytes, wait, chunk);
    else
      coll::receive_direct(channel, source, data, bytes, wait, chunk);
    char text[64];
    std::snprintf(text, sizeof text, "%s%zu B %.1f ms", passes.empty() ? "" : ", ", bytes,
                  seconds_since(pass_start) * 1e3);
    passes += text;
  };
  std::vector<StateRegistry::Part> parts;
  std::vector<std::byte> description;
  if (!joining) {
    parts = state.parts();
    description = StateRegistry::describe(parts, joiner_next_seq);
  }
  std::uint64_t length = description.size();
  pass(&length, sizeof length);
  description.resize(length);
  pass(description.data(), length);
  const StateRegistry::Description d = StateRegistry::parse(description);
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    const auto& [name, bytes] = d.entries[i];
    if (bytes == 0) {
      if (joining) state.stage(name, ReceivedBytes());
      continue;
    }
    if (!joining) {
      pass(parts[i].data, bytes);
      continue;
    }
    // Registered before the Runtime started (StateBuffer): no copy after.
    // A transfer cut short leaves it half written, which is harmless: this
    // process goes back to waiting as a spare, and the next admission
    // writes it whole before the application sees it.
    if (void* into = state.buffer_for(name, bytes)) {
      pass(into, bytes);
      continue;
    }
    ReceivedBytes received(bytes);
    pass(received.data(), bytes);
    try {
      state.stage(name, std::move(received));
    } catch (const Error& mismatch) {
      if (state_mismatch_.empty()) state_mismatch_ = mismatch.what();
    }
  }
  for (const auto& entry : d.entries) state_bytes_ += entry.second;
  state_seconds_ = seconds_since(start);
  log(std::string(joining ? "state received: " : "state sent: ") + passes);
  if (joining) seq = current_seq_ = d.next_seq - 1;
  return true;
}

void Communicator::Impl::join_recovery(std::uint64_t next_seq) {
  // Outside a call no joiner can start: its first call would be one the
  // members do not make now.
  const ScopedFlag holding(holding_spares_);
  for (;;) {
    try {
      // Idle, before call `next_seq`: a member still in the call before it
      // takes this one's result of it (a catch-up), and every member raises
      // an error the others raise there, as in run().
      RecoveryOutcome r = recover(my_state(next_seq), "another member is recovering from a failure");
      pending_ = pending_ ? merged(*pending_, r.change) : r.change;
      const auto& states = r.infos;
      const auto bad = std::find_if(states.begin(), states.end(),
                                    [](const membership::MemberInfo& s) { return s.errc >= 0; });
      if (bad != states.end())
        fail_in_step(states, next_seq - 1, Error(static_cast<Errc>(bad->errc), bad->error));
      if (const std::string why = catch_up_impossible(states); !why.empty())
        fail_in_step(states, next_seq - 1, Error(Errc::Internal, why));
      const bool behind = std::any_of(states.begin(), states.end(), [&](const membership::MemberInfo& s) {
        return s.seq < static_cast<std::int64_t>(next_seq) && !s.finalizing;
      });
      if (behind) catch_up(next_seq - 1, states, retained_bytes_[(next_seq - 1) % 2]);
      return;
    } catch (const transport::Interrupted&) {
      // Another failure meanwhile: recover again.
    } catch (const transport::Mismatch& e) {
      throw Error(Errc::Mismatch, e.what());
    }
  }
}

bool Communicator::Impl::ending_round() {
  membership::PoolEntry entry;
  entry.id = epoch_->my_id();
  entry.position = epoch_->app_rank();
  entry.view_size = epoch_->size;
  entry.target_size = target_size_;
  entry.ending = 1;
  membership::MemberInfo mine = my_state(seq + 1);
  mine.finalizing = 1;
  return !pool_round(entry, mine).recovery_first;
}

void Communicator::Impl::dismiss_spares() {
  // No spare waits (and the pool may be the epoch's own communicator).
  if (!pool_ || !epoch_ || native_membership() || pool_->spares_left() == 0) return;
  while (!ending_round()) {
    membership::MemberInfo mine = my_state(seq + 1);
    mine.finalizing = 1;
    recover(mine, "another member is recovering from a failure");
  }
}

}  // namespace ringmend
