#include "membership/ulfm_spare_pool.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <thread>
#include <utility>

#include "membership/pool_roster.hpp"
#include "membership/ulfm_control.hpp"
#include "ringmend/core/error.hpp"

namespace ringmend::membership {
namespace {

// A round retries while processes keep dying; a real MPI error (not a
// failure) would make it retry for ever, so it is bounded.
constexpr int kMaxAttempts = 1000;

// A spare's sleep between two polls of the pool: a round waits at most this
// long for each spare, and a sleeping spare costs no CPU.
constexpr auto kSparePoll = std::chrono::milliseconds(1);

using Clock = std::chrono::steady_clock;

}  // namespace

bool UlfmSparePool::shrink_to_live(MPI_Comm from, int attempt) {
  int rc = MPI_SUCCESS;
  // The world itself is not revoked: it stays usable to the application;
  // nor is a pool lent to the current epoch (lent_).
  ulfm::ShrinkOutcome live =
      from == pool_.get() && !lent_ ? ulfm::revoke_and_shrink(from, rc) : ulfm::shrink(from, rc);
  if (rc != MPI_SUCCESS) {
    if (!ulfm::is_failure_error(rc) || attempt >= kMaxAttempts)
      throw Error(Errc::Internal, "spare pool: MPIX_Comm_shrink failed: " + ulfm::error_string(rc));
    return false;
  }
  pool_ = std::move(live.comm);
  lent_ = false;
  return true;
}

bool UlfmSparePool::agreed(int ok, int attempt, const char* what) {
  // A collective that failed here may still be waiting elsewhere (a peer
  // of this process in it, not the dead one): the revoke ends it there, so
  // that every process reaches the agreement.
  if (!ok) ulfm::revoke(pool_.get());
  if (ulfm::agree(pool_.get(), ok) == MPI_SUCCESS && ok) return true;
  if (attempt >= kMaxAttempts)
    throw Error(Errc::Internal, std::string("spare pool: ") + what + " kept failing on some process");
  return false;
}

UlfmSparePool::NodePlace UlfmSparePool::place_on_node(MPI_Comm world) {
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(pool_.get(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return {};
  ulfm::CommHandle node_comm(node);
  ulfm::GroupHandle node_group, world_group;
  MPI_Comm_group(node, node_group.out());
  MPI_Comm_group(world, world_group.out());
  // The split keeps the pool's order, which is the world's: its first rank
  // is the node's lowest world rank.
  int first = 0, in_world = MPI_UNDEFINED;
  MPI_Group_translate_ranks(node_group.get(), 1, &first, world_group.get(), &in_world);
  int node_size = 0, pool_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_size(pool_.get(), &pool_size);
  return {in_world == MPI_UNDEFINED ? -1 : in_world, node_size == pool_size};
}

ulfm::CommHandle UlfmSparePool::split(int color, int key, bool& ok) {
  MPI_Comm out = MPI_COMM_NULL;
  ok = MPI_Comm_split(pool_.get(), color, key, &out) == MPI_SUCCESS;
  ulfm::CommHandle comm(out);
  if (comm) MPI_Comm_set_errhandler(comm.get(), MPI_ERRORS_RETURN);
  return comm;
}

UlfmSparePool::UlfmSparePool(MPI_Comm world, int spares, ulfm::CommHandle& members) {
  int world_size = 0;
  MPI_Comm_size(world, &world_size);
  const int job_size = world_size - spares;
  for (int attempt = 0;; ++attempt) {
    if (!shrink_to_live(pool_ ? pool_.get() : world, attempt)) continue;
    int rank = 0, size = 0;
    MPI_Comm_rank(pool_.get(), &rank);
    MPI_Comm_size(pool_.get(), &size);
    const bool member = rank < job_size;
    bool ok = false;
    ulfm::CommHandle mine = split(member ? 0 : MPI_UNDEFINED, rank, ok);
    const NodePlace place = ok ? place_on_node(world) : NodePlace{};
    // The split may fail on some processes only: agree, and go round again.
    if (!agreed(ok && place.host >= 0, attempt, "splitting the members from the spares")) continue;
    host_ = place.host;
    one_node_ = place.whole_pool;
    spare_ = !member;
    spares_left_ = std::max(0, size - job_size);
    member_ranks_.clear();
    for (int r = 0; r < std::min(size, job_size); ++r) member_ranks_.push_back(r);
    members = std::move(mine);
    return;
  }
}

UlfmSparePool::UlfmSparePool(MPI_Comm members) {
  for (int attempt = 0; !shrink_to_live(members, attempt); ++attempt) {
  }
  int size = 0;
  MPI_Comm_size(pool_.get(), &size);
  for (int r = 0; r < size; ++r) member_ranks_.push_back(r);
}

SparePool::SpareWait UlfmSparePool::wait_for_round() {
  ulfm::FailureMonitor monitor(pool_.get());
  for (;;) {
    // Testing drives MPI's progress, which a revoke needs to reach (and be
    // passed on by) this process.
    const bool noticed = monitor.failure_noticed();
    ulfm::progress(pool_.get());
    if (ulfm::is_revoked(pool_.get())) return SpareWait::RoundBegun;
    if (noticed) {
      // A process failed: another spare (removed at the next round), or a
      // member (the members start a round when they need a spare). Only
      // when every member is gone is there nobody to wait for.
      const std::vector<int> failed = ulfm::known_failed(pool_.get());
      const bool all_gone = std::all_of(member_ranks_.begin(), member_ranks_.end(), [&](int r) {
        return std::binary_search(failed.begin(), failed.end(), r);
      });
      if (all_gone) return SpareWait::MembersLost;
      ulfm::ack_failures(pool_.get());
      monitor.rearm();
    }
    std::this_thread::sleep_for(kSparePoll);
  }
}

std::string UlfmSparePool::laps() const {
  char text[96];
  std::snprintf(text, sizeof text, "shrink %.1f ms, roster %.1f ms, split %.1f ms", shrink_seconds_ * 1e3,
                roster_seconds_ * 1e3, split_seconds_ * 1e3);
  return text;
}

// The pool itself is the new epoch's communicator, in its own order, and
// the application's ranks go with it (RoundOutcome::positions). No
// communicator to agree on: across nodes a split cost as much as the shrink.
RoundOutcome UlfmSparePool::lend_whole_pool(RosterDecision& d, const std::vector<RosterEntry>& roster,
                                            bool lend_to_joiners) {
  RoundOutcome& out = d.out;
  const int size = static_cast<int>(roster.size());
  out.positions.resize(static_cast<std::size_t>(size));
  for (int m : d.members)
    out.positions[static_cast<std::size_t>(m)] = roster[static_cast<std::size_t>(m)].entry.position;
  for (int j = 0; j < out.joiners; ++j)
    out.positions[static_cast<std::size_t>(d.spares[static_cast<std::size_t>(j)])] =
        d.holes[static_cast<std::size_t>(j)];
  // The roster as the epoch's exchange, when no agreement was made on
  // it (with joiners, hence spares: every process knows its node's
  // host). A lend without joiners builds its own, if it builds.
  if (lend_to_joiners)
    for (const RosterEntry& e : roster) out.infos.push_back(e.info);
  out.grown = std::make_unique<UlfmControl>(pool_.share());
  lent_ = true;
  member_ranks_.resize(static_cast<std::size_t>(size));
  std::iota(member_ranks_.begin(), member_ranks_.end(), 0);
  spares_left_ = 0;
  return std::move(out);
}

// The members and joiners split off the pool into the new epoch's
// communicator (and the leavers out of the pool); nullopt when the split
// was not agreed on: another round.
std::optional<RoundOutcome> UlfmSparePool::split_off(RosterDecision& d,
                                                     const std::vector<RosterEntry>& roster, int rank,
                                                     int attempt) {
  RoundOutcome& out = d.out;
  const int size = static_cast<int>(roster.size());
  bool ok = false;
  ulfm::CommHandle grown = split(d.in_grown ? 0 : MPI_UNDEFINED, d.position, ok);
  // Members that leave leave the pool too: a later round must not wait
  // for a process that takes no part in it. With no spare left waiting,
  // the processes that stay are exactly the new epoch's: the pool is
  // lent to it (no second communicator of the same processes; after a
  // failure while that epoch was built, Open MPI 5.0.7's shrink of such
  // a second communicator was seen to hang in its context-id agreement).
  const bool lend_after = !d.leaving.empty() && out.spares_left == 0;
  ulfm::CommHandle rest;
  if (!d.leaving.empty() && !lend_after) {
    bool rest_ok = false;
    rest = split(out.left ? MPI_UNDEFINED : 0, rank, rest_ok);
    ok = ok && rest_ok;
  }
  if (!agreed(ok, attempt, "splitting the members and joiners off the pool")) return std::nullopt;
  // The roster as the epoch's exchange, in the split's order (by key: a
  // position, unique), when every process knows its node's host.
  if (grown && host_ >= 0)
    for (const auto& [position, r] : d.grown) out.infos.push_back(roster[static_cast<std::size_t>(r)].info);
  member_ranks_ = d.members;
  member_ranks_.insert(member_ranks_.end(), d.spares.begin(), d.spares.begin() + out.joiners);
  std::sort(member_ranks_.begin(), member_ranks_.end());
  spares_left_ = out.spares_left;
  if (lend_after) {
    // The new epoch's communicator, in its order (by position): every
    // process of it a member.
    pool_ = grown.share();  // null on a member that left
    lent_ = static_cast<bool>(pool_);
    std::iota(member_ranks_.begin(), member_ranks_.end(), 0);
  } else if (!d.leaving.empty()) {
    // Pool ranks renumbered without the leavers (the split kept the order).
    std::vector<int> gone;
    for (int r = 0; r < size; ++r) {
      const PoolEntry& e = roster[static_cast<std::size_t>(r)].entry;
      if (e.id != kNoMember && e.leaving) gone.push_back(r);
    }
    for (int& r : member_ranks_)
      r -= static_cast<int>(std::lower_bound(gone.begin(), gone.end(), r) - gone.begin());
    pool_ = std::move(rest);  // null on a member that left
  }
  if (grown) out.grown = std::make_unique<UlfmControl>(std::move(grown));
  return std::move(out);
}

RoundOutcome UlfmSparePool::round(const PoolEntry& mine, const MemberInfo& info) {
  shrink_seconds_ = roster_seconds_ = split_seconds_ = 0;
  for (int attempt = 0;; ++attempt) {
    auto lap = Clock::now();
    // Adds the time since the last lap to `total`.
    const auto add_lap = [&lap](double& total) {
      const auto now = Clock::now();
      total += std::chrono::duration<double>(now - lap).count();
      lap = now;
    };
    const bool shrunk = shrink_to_live(pool_.get(), attempt);
    add_lap(shrink_seconds_);
    if (!shrunk) continue;
    int rank = 0, size = 0;
    MPI_Comm_rank(pool_.get(), &rank);
    MPI_Comm_size(pool_.get(), &size);
    std::vector<RosterEntry> roster(static_cast<std::size_t>(size));
    const RosterEntry me{mine, info};
    if (MPI_Allgather(&me, sizeof me, MPI_BYTE, roster.data(), sizeof me, MPI_BYTE, pool_.get()) !=
        MPI_SUCCESS) {
      // This process has no roster: it goes round again, and so does
      // every other, whichever agreement on the pool it makes next (see
      // below).
      agreed(0, attempt, "the roster's allgather");
      add_lap(roster_seconds_);
      continue;
    }
    RosterDecision d = decide(roster, rank, mine);
    RoundOutcome& out = d.out;
    // The roster is agreed on only when nothing else follows on the pool.
    // When the pool goes to the grown epoch with joiners, every process of
    // it builds that epoch, and the epoch's own agreement is the next one
    // on the pool; when members and joiners are split off, the split's
    // agreement is (a split makes no agreement of its own: Open MPI
    // allocates its context id with an allreduce; only a shrink's are
    // agreements). One agreement fewer, which across nodes costs as much as
    // the exchange. A process whose allgather failed makes the roster's
    // agreement with 0, which the others meet as the epoch's or the
    // split's (its revoke fails their split or their build): every process
    // goes round again.
    const bool lend_to_joiners = d.whole_pool && out.joiners > 0;
    const bool settled_later =
        !out.recovery_first && !out.ending && !out.no_members && (lend_to_joiners || !d.whole_pool);
    const bool roster_agreed = settled_later || agreed(1, attempt, "the roster's allgather");
    add_lap(roster_seconds_);
    if (!roster_agreed) continue;

    if (out.recovery_first) {
      // The pool's ranks after this round's shrink (a spare watches them).
      member_ranks_.clear();
      for (int r = 0; r < size; ++r)
        if (roster[static_cast<std::size_t>(r)].entry.id != kNoMember) member_ranks_.push_back(r);
      return std::move(out);
    }
    if (out.ending || out.no_members) {
      spares_left_ = static_cast<int>(d.spares.size());
      return std::move(out);
    }
    if (d.whole_pool) return lend_whole_pool(d, roster, lend_to_joiners);
    if (std::optional<RoundOutcome> split_out = split_off(d, roster, rank, attempt))
      return std::move(*split_out);
  }
}

}  // namespace ringmend::membership
