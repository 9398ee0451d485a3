#include "membership/pool_roster.hpp"

#include <algorithm>

namespace ringmend::membership {

RosterDecision decide(const std::vector<RosterEntry>& roster, int rank, const PoolEntry& mine) {
  const auto entry = [&](int r) -> const PoolEntry& { return roster[static_cast<std::size_t>(r)].entry; };
  const int size = static_cast<int>(roster.size());
  RosterDecision d;
  RoundOutcome& out = d.out;
  out.left = mine.id != kNoMember && mine.leaving;
  for (int r = 0; r < size; ++r) {
    const PoolEntry& e = entry(r);
    if (e.id == kNoMember)
      d.spares.push_back(r);
    else if (e.leaving)
      d.leaving.emplace_back(e.position, e.id);
    else
      d.members.push_back(r);
  }
  // Those that asked to join come first: they are wanted whatever the size.
  std::stable_partition(d.spares.begin(), d.spares.end(), [&](int r) { return entry(r).joining != 0; });
  std::sort(d.members.begin(), d.members.end(),
            [&](int a, int b) { return entry(a).position < entry(b).position; });
  std::sort(d.leaving.begin(), d.leaving.end());
  for (const auto& l : d.leaving) out.released.push_back(l.second);
  int view_size = 0, target = 0;
  bool one_step = true;
  for (int r : d.members) {
    const PoolEntry& m = entry(r);
    out.ending = out.ending || m.ending;
    view_size = std::max(view_size, m.view_size);
    target = std::max(target, m.target_size);
    one_step = one_step && !m.hold && m.seq == entry(d.members.front()).seq;
    out.present.push_back(m.id);
  }
  // Members that recover and members that came for another reason: the
  // latter join the recovery first (RoundOutcome::recovery_first).
  int recovering = 0, present_members = 0;
  for (int r = 0; r < size; ++r)
    if (entry(r).id != kNoMember) ++present_members, recovering += entry(r).recovering != 0;
  if (recovering > 0 && recovering < present_members) {
    out = RoundOutcome{};
    out.recovery_first = true;
    return d;
  }
  for (int r : d.members) {
    const MemberId needed = entry(r).needs;
    if (needed != kNoMember && std::find(out.present.begin(), out.present.end(), needed) == out.present.end())
      one_step = false;
  }
  out.members = static_cast<int>(d.members.size());
  out.target_size = target;
  out.no_members = d.members.empty();
  if (out.ending || out.no_members) return d;
  // Joiners grow the job: each is wanted beyond the size the members keep.
  const int asking = static_cast<int>(
      std::count_if(d.spares.begin(), d.spares.end(), [&](int r) { return entry(r).joining != 0; }));
  target = std::max(target, out.members + asking);
  out.target_size = target;
  const int wanted = std::clamp(target - out.members, 0, static_cast<int>(d.spares.size()));
  out.joiners = one_step ? wanted : 0;
  out.held = wanted > 0 && !one_step;
  out.spares_left = static_cast<int>(d.spares.size()) - out.joiners;
  // Joiners take the positions no staying member holds, lowest first,
  // then the end.
  for (int p = 0; p < view_size; ++p)
    if (std::none_of(d.members.begin(), d.members.end(), [&](int r) { return entry(r).position == p; }))
      d.holes.push_back(p);
  for (int j = static_cast<int>(d.holes.size()); j < out.joiners; ++j) d.holes.push_back(view_size + j);
  if (mine.id != kNoMember) {
    if (!out.left) d.in_grown = true, d.position = mine.position;
  } else {
    const auto me = std::find(d.spares.begin(), d.spares.end(), rank) - d.spares.begin();
    if (me < out.joiners)
      d.in_grown = true, d.position = d.holes[static_cast<std::size_t>(me)], out.joined = true;
  }
  for (int r : d.members) d.grown.emplace_back(entry(r).position, r);
  for (int j = 0; j < out.joiners; ++j)
    d.grown.emplace_back(d.holes[static_cast<std::size_t>(j)], d.spares[static_cast<std::size_t>(j)]);
  std::sort(d.grown.begin(), d.grown.end());
  d.whole_pool = d.leaving.empty() && out.joiners == static_cast<int>(d.spares.size());
  return d;
}

}  // namespace ringmend::membership
