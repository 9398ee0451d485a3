#include "membership/native/native_spare_pool.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "membership/pool_roster.hpp"
#include "ringmend/core/error.hpp"

namespace ringmend::membership::native {
namespace {

using Clock = std::chrono::steady_clock;

// How long a waiting spare lets the group wait for the network in one turn:
// it sleeps in poll(), costing no CPU, and holds the group no longer.
constexpr int kSpareTurnMs = 20;

// Turns the group under `f`; a process that must leave the job (fenced,
// or no view decided in time) ends the round with an error.
template <class F>
void with_group(SharedGroup& group, F&& f) {
  try {
    group.with(std::forward<F>(f));
  } catch (const MembershipError& e) {
    throw Error(Errc::Internal, e.what());
  }
}

}  // namespace

NativeSparePool::NativeSparePool(const NativeControl& first, int spares, bool joining,
                                 std::unique_ptr<Control>& members)
    : group_(first.group()) {
  const std::vector<int> ids = first.world_ranks();  // sorted: the group's view
  const int job_size = static_cast<int>(ids.size()) - spares;
  members_.assign(ids.begin(), ids.begin() + job_size);
  spares_left_ = spares;
  group_->with([&](Group& g) {
    // A joiner takes part in the roster of the view that admitted it.
    roster_view_ = joining ? first.epoch() - 1 : first.epoch();
    if (joining) std::erase(members_, g.self());
    spare_ = joining || std::find(members_.begin(), members_.end(), g.self()) == members_.end();
    const std::string& node = g.record(g.self()).node;
    one_node_ = true;
    for (MemberId id : ids) {
      if (g.record(id).node != node)
        one_node_ = false;
      else if (host_ < 0)
        host_ = id;
    }
  });
  const std::uint64_t view = first.epoch();
  members.reset();  // `first` with it
  if (!spare_) members = std::make_unique<NativeControl>(group_, members_, view);
}

NativeSparePool::Roster NativeSparePool::await_roster() {
  for (;;) {
    const std::optional<Roster> state = group_->with([&](Group& g) -> std::optional<Roster> {
      g.progress(kSpareTurnMs);
      // Before a change: one among the spares alone has no quorum, and
      // would hold this spare until the recovery timeout.
      if (members_gone(g)) return Roster::MembersGone;
      if (g.changing()) return Roster::Changing;
      if (g.epoch() != roster_view_ && g.gather_begun()) return Roster::Begun;
      return std::nullopt;
    });
    if (state) return *state;
  }
}

void NativeSparePool::settle(Control& members) {
  const auto* control = dynamic_cast<const NativeControl*>(&members);
  if (!control) return;
  with_group(*group_, [&](Group& g) {
    if (g.epoch() == control->epoch() && !g.changing()) g.request_change();
    if (g.changing()) g.recover();
    spares_left_ = static_cast<int>(std::count_if(g.members().begin(), g.members().end(), [&](MemberId m) {
      return !std::binary_search(members_.begin(), members_.end(), m);
    }));
  });
}

bool NativeSparePool::members_gone(const Group& g) const {
  return std::all_of(members_.begin(), members_.end(), [&](MemberId m) { return g.gone(m); });
}

RoundOutcome NativeSparePool::without_members() const {
  RoundOutcome out;
  // A member says Bye only once the job's last roster (the members' end)
  // is complete at it: one that did means the job finished, and this spare
  // was not needed; none did, and the members died.
  group_->with([&](Group& g) {
    out.ending = std::any_of(members_.begin(), members_.end(), [&](MemberId m) { return g.said_bye(m); });
  });
  out.no_members = !out.ending;
  return out;
}

SparePool::SpareWait NativeSparePool::wait_for_round() {
  if (await_roster() != Roster::MembersGone) return SpareWait::RoundBegun;
  return without_members().ending ? SpareWait::JobFinished : SpareWait::MembersLost;
}

std::string NativeSparePool::laps() const {
  char text[96];
  std::snprintf(text, sizeof text, "view change %.1f ms, roster %.1f ms", change_seconds_ * 1e3,
                roster_seconds_ * 1e3);
  return text;
}

// Every process's entry of this round, in the view's order; nullopt when
// the view changes meanwhile. `view`, `rank` and `epoch`: the view's.
std::optional<std::vector<RosterEntry>> NativeSparePool::exchange_roster(const RosterEntry& me,
                                                                         std::vector<MemberId>& view,
                                                                         int& rank, std::uint64_t& epoch) {
  const auto got = group_->with([&](Group& g) {
    view = g.members();
    rank = g.rank();
    epoch = g.epoch();
    return g.allgather(std::string(reinterpret_cast<const char*>(&me), sizeof me), group_->wait_seconds());
  });
  if (!got) return std::nullopt;
  roster_view_ = epoch;
  std::vector<RosterEntry> roster(got->size());
  for (std::size_t r = 0; r < got->size(); ++r) {
    if ((*got)[r].size() != sizeof(RosterEntry))
      throw Error(Errc::Internal, "spare pool: process " + std::to_string(view[r]) +
                                      " sent a roster entry of another size (another build of ringmend?)");
    std::memcpy(&roster[r], (*got)[r].data(), sizeof(RosterEntry));
  }
  return roster;
}

// A release: the leavers leave the view first, by a change that every
// process of the roster asks for and the leavers take part in (they count
// toward its quorums: releasing most of the job must not leave the rest
// without one). Then everyone rounds again in the new view, where the
// roster has no leaver; a process whose roster failed here (the change
// began before the last entry came) comes to the same roster. A leader that
// did not see this roster keeps the leavers: the next roster releases them
// again. Adds the leavers gone to `released`; true when this process left.
bool NativeSparePool::release_leavers(const RosterDecision& d, bool leaving,
                                      std::vector<MemberId>& released) {
  std::vector<MemberId> leavers;
  for (const auto& [position, id] : d.leaving) leavers.push_back(id);
  std::vector<MemberId> next;
  bool gone = false;
  with_group(*group_, [&](Group& g) {
    g.release(leavers);
    gone = g.recover(leaving).left;
    next = g.members();
  });
  for (MemberId id : leavers)
    if (!std::binary_search(next.begin(), next.end(), id) &&
        std::find(released.begin(), released.end(), id) == released.end())
      released.push_back(id);
  return gone;
}

// The members and joiners of the round's decision, as the new epoch's group.
RoundOutcome NativeSparePool::grown_outcome(RosterDecision& d, const std::vector<RosterEntry>& roster,
                                            const std::vector<MemberId>& view, std::uint64_t epoch) {
  RoundOutcome& out = d.out;
  std::vector<MemberId> grown;
  for (const auto& [position, r] : d.grown) {
    grown.push_back(view[static_cast<std::size_t>(r)]);
    out.infos.push_back(roster[static_cast<std::size_t>(r)].info);
  }
  members_ = grown;
  std::sort(members_.begin(), members_.end());
  spares_left_ = out.spares_left;
  if (d.in_grown)
    out.grown = std::make_unique<NativeControl>(group_, std::move(grown), epoch);
  else
    out.infos.clear();
  return std::move(out);
}

RoundOutcome NativeSparePool::round(const PoolEntry& mine, const MemberInfo& info) {
  change_seconds_ = roster_seconds_ = 0;
  const bool spare = mine.id == kNoMember;
  const bool leaving = mine.leaving != 0;
  const RosterEntry me{mine, info};
  std::vector<MemberId> released;  // left the view in this round, in position order
  const auto left_out = [&] {
    RoundOutcome out;
    out.left = true;
    out.released = released;
    if (std::find(out.released.begin(), out.released.end(), mine.id) == out.released.end())
      out.released.push_back(mine.id);
    return out;
  };
  for (;;) {
    auto lap = Clock::now();
    const auto add_lap = [&lap](double& total) {
      const auto now = Clock::now();
      total += std::chrono::duration<double>(now - lap).count();
      lap = now;
    };
    // 1. A view of the round's own, without the dead. A leaver whose
    // roster failed here while it completed elsewhere is left out by it.
    bool gone = false, abandoned = false;
    with_group(*group_, [&](Group& g) {
      if (!g.changing() && !g.fresh_view()) g.request_change();
      if (!g.changing()) return;
      const Group::Change change = g.recover(leaving, spare ? members_ : std::vector<MemberId>{});
      gone = change.left;
      abandoned = change.abandoned;
    });
    add_lap(change_seconds_);
    if (gone) return left_out();
    if (abandoned) return without_members();
    // A spare answers the members' roster; it never starts one.
    if (spare) {
      const Roster state = await_roster();
      if (state == Roster::Changing) continue;
      if (state == Roster::MembersGone) return without_members();
    }
    // 2. The roster.
    std::vector<MemberId> view;
    int rank = 0;
    std::uint64_t epoch = 0;
    const std::optional<std::vector<RosterEntry>> got = exchange_roster(me, view, rank, epoch);
    add_lap(roster_seconds_);
    if (!got) continue;  // the view changes: round again
    const std::vector<RosterEntry>& roster = *got;
    // 3. The decision, and the grown group.
    RosterDecision d = decide(roster, rank, mine);
    RoundOutcome& out = d.out;
    if (out.recovery_first) {
      members_.clear();
      for (std::size_t r = 0; r < roster.size(); ++r)
        if (roster[r].entry.id != kNoMember) members_.push_back(view[r]);
      return std::move(out);
    }
    spares_left_ = static_cast<int>(d.spares.size());
    if (out.ending || out.no_members) return std::move(out);
    if (!d.leaving.empty()) {
      gone = release_leavers(d, leaving, released);
      add_lap(change_seconds_);
      if (gone) return left_out();
      continue;
    }
    out.released = released;
    return grown_outcome(d, roster, view, epoch);
  }
}

}  // namespace ringmend::membership::native
