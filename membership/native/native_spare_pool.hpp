// The spare pool (spare_pool.hpp) over the native membership, for jobs under
// plain srun (RINGMEND_SPARES=S makes the last S tasks spares).
//
// The pool is the native group itself: every process of the job is in its
// view, members and spares alike, and an epoch's control group is a
// NativeControl over its members only. A round takes a view of its own:
//
//   1. whoever starts it asks for a change of the view, with nobody
//      suspected, unless the view is changing already (a failure) or this
//      process has made no collective in the view yet (another process
//      started the round); the view change drops the dead, spares too;
//   2. the roster is the first all-gather of the new view, among every
//      process of it (pool_roster.hpp decides from it);
//   3. the grown group is a NativeControl over the staying members and the
//      joiners, in position order, and the roster is its epoch's exchange.
//
// A spare waits by turning the group: a round has begun when the view has
// changed since its last roster and a member has begun the roster of the
// new one (members come at their next call: a spare never times a member
// out for computing).
//
// No agreement on the roster: a process that completed the all-gather has
// every process's entry, hence the decision of every other process that
// completed it. One whose all-gather failed saw the view change, and so
// will every other at its next step: a Grow build made in the old view
// fails (its all-gathers are that view's), and a build that completed
// somewhere meets the change at its first collective. Every process then
// goes round again in the next view; a joiner whose build failed waits as
// a spare again (its half-received state is written whole at the next
// admission).
//
// Joiners (processes started later, join.hpp) are spares that ask to join:
// a round admits them even when the job has its size (it grows by them).
// Every recovery of a native job takes a round (the runtime's
// recovers_through_pool), so that a member that recovers and one that came
// for a request or for spares meet in the same roster, which sends the
// latter to the recovery first (RoundOutcome::recovery_first): the
// native all-gathers are not uniform, and no meeting before a round could
// promise that every member passed it.
//
// Releasing members: when the roster names leavers, every process of it
// asks for a change of the view that leaves them out (Group::release); the
// leavers take part in it, so that releasing most of the job still leaves
// a quorum, and learn that they are out. Everyone else then rounds again in
// the new view, with no leaver in the roster.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "membership/native/native_control.hpp"
#include "membership/pool_roster.hpp"
#include "membership/spare_pool.hpp"

namespace ringmend::membership::native {

class NativeSparePool final : public SparePool {
 public:
  // `first`: the native membership's first view, every process of the job;
  // the last `spares` of it (by id) are spares, the others the members,
  // whose control group `members` becomes (null on a spare). `joining`: this
  // process was started later and `first` is the view that admitted it
  // (join.hpp): it is a spare, and the others are the members.
  NativeSparePool(const NativeControl& first, int spares, bool joining, std::unique_ptr<Control>& members);

  bool is_spare() const override { return spare_; }
  // The lowest id on this process's node (ids are world ranks).
  int host() const override { return host_; }
  bool one_node() const override { return one_node_; }
  int spares_left() const override { return spares_left_; }
  // Moves to a view past `members`' (a change asked for if none began),
  // then counts the processes of the view that are not members: spares
  // and joiners, the same count on every member in that view.
  void settle(Control& members) override;
  SpareWait wait_for_round() override;
  RoundOutcome round(const PoolEntry& mine, const MemberInfo& info) override;
  std::string laps() const override;
  double shrink_seconds() const override { return change_seconds_; }

 private:
  enum class Roster { Begun, Changing, MembersGone };
  // Turns the group until a member begins the roster of this view, the
  // view changes, or no member is left.
  Roster await_roster();
  // Every member of the job is out of the view, said Bye or is suspected.
  bool members_gone(const Group& g) const;
  // A round's end without members: `ending` when the job finished (a
  // member said Bye), `no_members` when they are lost.
  RoundOutcome without_members() const;
  // round()'s steps (native_spare_pool.cpp).
  std::optional<std::vector<RosterEntry>> exchange_roster(const RosterEntry& me, std::vector<MemberId>& view,
                                                          int& rank, std::uint64_t& epoch);
  bool release_leavers(const RosterDecision& d, bool leaving, std::vector<MemberId>& released);
  RoundOutcome grown_outcome(RosterDecision& d, const std::vector<RosterEntry>& roster,
                             const std::vector<MemberId>& view, std::uint64_t epoch);

  std::shared_ptr<SharedGroup> group_;
  bool spare_ = false;
  int host_ = -1;
  bool one_node_ = false;
  int spares_left_ = 0;
  std::vector<MemberId> members_;  // as of the last round
  std::uint64_t roster_view_ = 0;  // the view of this process's last roster
  double change_seconds_ = 0, roster_seconds_ = 0;
};

}  // namespace ringmend::membership::native
