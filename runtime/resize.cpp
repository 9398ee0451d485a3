// Membership changes the application asks for: grow (waiting spares join)
// and release (members leave the job), between two collective calls.
//
// A request is one collective call of its own. It first checks that every
// member asks for the same thing (an allreduce of the request's
// description), so that a member that asks for something else, or passes a
// bad argument, makes every member fail alike instead of leaving them in
// different calls; a failure during it is recovered as in any call. Then
// one round of the pool makes the new epoch (regroup(), admission.cpp),
// and the change is announced in the same call on every member.
#include <algorithm>
#include <vector>

#include "ringmend/core/log.hpp"
#include "runtime/communicator_impl.hpp"

namespace ringmend {
namespace {

enum class RequestKind : std::int64_t { Grow = 1, Release = 2 };

std::int64_t describe(RequestKind kind, std::int64_t count) {
  return static_cast<std::int64_t>(kind) << 32 | (count & 0xffffffff);
}

}  // namespace

void Communicator::Impl::agree_on_request(const std::string& what, std::int64_t a,
                                          const std::vector<int>& ids, const std::string& local_error,
                                          CollectiveResult& result) {
  // One allreduce with Max gives both the largest and the smallest of each
  // value (the smallest as the largest of its negation), and whether any
  // member objected: the request and each id it names, compared exactly.
  // Members that name different numbers of ids call it with different
  // counts, which the collective refuses on every member alike.
  const std::size_t k = ids.size();
  std::vector<std::int64_t> v(3 + 2 * k);
  v[0] = local_error.empty() ? 0 : 1;
  v[1] = a;
  v[2] = -a;
  for (std::size_t i = 0; i < k; ++i) v[3 + i] = ids[i], v[3 + k + i] = -std::int64_t{ids[i]};
  const ScopedFlag requesting(requesting_);
  try {
    result = run(
        {coll::CollectiveKind::Allreduce, v.data(), v.data(), v.size(), DataType::Int64, ReduceOp::Max, -1});
  } catch (const Error& e) {
    if (e.code() != Errc::Mismatch) throw;
    throw Error(Errc::Mismatch,
                what + ": the members did not all ask for the same change (" + e.what() + ")");
  }
  if (v[0])
    throw Error(Errc::InvalidArgument,
                local_error.empty() ? what + ": another member's arguments are invalid" : local_error);
  bool same = v[1] == -v[2];
  for (std::size_t i = 0; i < k; ++i) same = same && v[3 + i] == -v[3 + k + i];
  if (!same) throw Error(Errc::Mismatch, what + ": the members did not all ask for the same change");
}

int Communicator::Impl::kept_size() const {
  // Under policy replace the job keeps its size: members lost during the
  // request (or earlier, while no spare waited) are replaced too.
  return settings_.spare_policy == SparePolicy::Replace ? std::max(target_size_, view_.size) : view_.size;
}

void add_ids(std::vector<int>& to, const std::vector<int>& from) {
  to.insert(to.end(), from.begin(), from.end());
  std::sort(to.begin(), to.end());
  to.erase(std::unique(to.begin(), to.end()), to.end());
}

void Communicator::Impl::report_pending(CollectiveResult& result) {
  if (pending_) {
    const MembershipChange change = announce_pending();
    result.recovered = true;
    add_ids(result.lost, change.lost);
    add_ids(result.joined, change.joined);
    add_ids(result.released, change.released);
  }
  result.epoch = view_.number;
  result.contributors = view_.size;
}

void Communicator::Impl::meet_before_round() {
  // A member that returned from the request's call while another failed in
  // it (and recovers) joins that recovery here, instead of waiting in the
  // pool's round for a member that waits in its recovery. The meeting's
  // agreement waits for every member, however long one is stuck: bounded
  // as a recovery is.
  const Watchdog watchdog = recovery_watchdog("the meeting before a change of membership");
  if (native_membership()) {
    // Its all-gathers are not uniform: the round's roster is the meeting
    // (a recovering member's entry sends the others to its recovery,
    // RoundOutcome::recovery_first). This barrier only lets every member
    // finish the request's call before the round's view change would
    // interrupt it; whether it passed here or not, every member goes on.
    int flag = 1;
    (void)epoch_->ctrl->agree(flag, true);
    return;
  }
  while (!meet()) join_recovery(seq + 1);
}

CollectiveResult Communicator::Impl::grow(int count) {
  const std::string what = "grow(" + std::to_string(count) + ")";
  std::string bad;
  if (count < 0)
    bad = what + ": the count must not be negative";
  else if (settings_.spares == 0 || !pool_)
    bad = what +
          ": the job has no spares to admit (start it with ringmend-run --spares S, RINGMEND_SPARES or "
          "Options::spares)";
  CollectiveResult result;
  agree_on_request(what, describe(RequestKind::Grow, count), {}, bad, result);
  // Every member, then (a recovery there changes the pool's count and the
  // size the job keeps alike on all).
  meet_before_round();
  // The size asked for: the job keeps it (policy replace) until a release.
  target_size_ = kept_size() + count;
  // Decided alike on every member: the view and the pool's count are the
  // same on all after the meeting. Under the native membership a round
  // always (a member may have recovered meanwhile, and the pool's count is
  // the roster's to say).
  if (native_membership() || (target_size_ > view_.size && pool_->spares_left() > 0))
    regroup(seq + 1, false, true);
  if (count > 0) {
    const int admitted = pending_ ? static_cast<int>(pending_->joined.size()) : 0;
    if (admitted < count && view_.rank == 0)
      ringmend::log(LogLevel::Warn, what + ": " + std::to_string(admitted) + " of " + std::to_string(count) +
                                        " spares joined; no other spare was waiting");
  }
  report_pending(result);
  return result;
}

CollectiveResult Communicator::Impl::release(std::span<const int> ranks, const std::string& what,
                                             std::string bad) {
  // Releasing needs the pool's rounds, which need a fault-tolerant
  // membership (ULFM or the native one); every member has the same launch,
  // so every member throws here alike.
  if (!fault_tolerant_)
    throw Error(Errc::FaultToleranceUnavailable,
                what +
                    ": releasing members needs fault tolerance (ringmend-run, plain srun, or mpirun with "
                    "ringmend's FT arguments and an MPI with ULFM)");
  std::vector<int> ids;
  for (int r : ranks) {
    if (!bad.empty()) break;
    if (r < 0 || r >= view_.size)
      bad = what + ": rank " + std::to_string(r) + " is not a rank of the " + std::to_string(view_.size) +
            " ranks";
    else
      ids.push_back(view_.members[static_cast<std::size_t>(r)]);
  }
  std::sort(ids.begin(), ids.end());
  if (bad.empty() && std::adjacent_find(ids.begin(), ids.end()) != ids.end())
    bad = what + ": a rank is named twice";
  if (bad.empty() && static_cast<int>(ids.size()) >= view_.size)
    bad =
        what + ": every member would leave; release fewer than the " + std::to_string(view_.size) + " ranks";
  return release_members(bad.empty() ? std::move(ids) : std::vector<int>{}, ranks.size(), what, bad);
}

CollectiveResult Communicator::Impl::release_members(std::vector<int> ids, std::size_t named_count,
                                                     const std::string& what, const std::string& bad) {
  CollectiveResult result;
  // With bad arguments, as many placeholders as ranks named: the members
  // that named as many call with one count, and learn of the error.
  const std::vector<int> named = bad.empty() ? ids : std::vector<int>(named_count, -1);
  agree_on_request(what, describe(RequestKind::Release, static_cast<std::int64_t>(named.size())), named, bad,
                   result);
  if (ids.empty()) {
    report_pending(result);
    return result;
  }
  meet_before_round();
  // A job started without spares gets a pool of its members: the same
  // rounds release them.
  if (!pool_) pool_ = std::make_unique<membership::UlfmSparePool>(membership::mpi_comm_of(*epoch_->ctrl));
  target_size_ = kept_size() - static_cast<int>(ids.size());
  const bool leaving = std::binary_search(ids.begin(), ids.end(), view_.my_id);
  if (!regroup(seq + 1, leaving, true)) {
    left = true;
    result.left = true;
    result.released = ids;
    ringmend::log(LogLevel::Debug, what + ": this member leaves the job");
    return result;
  }
  // A member asked to leave that is gone now left, whether by the round or
  // by dying meanwhile: every member says so alike (under the native
  // membership one whose roster failed while the others' completed never
  // saw the leavers go, and would call them lost).
  if (pending_) {
    auto& lost = pending_->lost;
    for (int id : ids) {
      const auto at = std::find(lost.begin(), lost.end(), id);
      if (at == lost.end()) continue;
      lost.erase(at);
      pending_->released.push_back(id);
    }
    std::sort(pending_->released.begin(), pending_->released.end());
    pending_->released.erase(std::unique(pending_->released.begin(), pending_->released.end()),
                             pending_->released.end());
  }
  report_pending(result);
  return result;
}

}  // namespace ringmend
