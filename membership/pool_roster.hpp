// What a round of the spare pool decides (spare_pool.hpp), from the roster
// alone: every process of the pool has the same roster, so every process
// decides alike, whichever backend gathered it. Pure: no MPI, no network.
#pragma once

#include <utility>
#include <vector>

#include "membership/spare_pool.hpp"

namespace ringmend::membership {

// What each process says in a round: its pool entry, and what it would tell
// the grown epoch's exchange (the roster then serves as that exchange: one
// all-gather for both). Plain bytes: backends send it as it is.
struct RosterEntry {
  PoolEntry entry;
  MemberInfo info;
};

// The decision, before any group is made.
struct RosterDecision {
  RoundOutcome out;                               // all but `grown`, `positions` and `infos`
  std::vector<int> members, spares;               // roster indexes: members that stay (by position), spares
  std::vector<std::pair<int, MemberId>> leaving;  // position, id
  std::vector<int> holes;                         // the positions the joiners take, in order
  // This process stays or joins: it is in the grown group, at `position`.
  bool in_grown = false;
  int position = 0;
  // Every process of the pool stays or joins (no spare waits on, nobody
  // leaves): the whole pool becomes the grown group.
  bool whole_pool = false;
  // The grown group (staying members and joiners) in position order:
  // each one's position and roster index.
  std::vector<std::pair<int, int>> grown;
};

// `rank`: this process's index in `roster`; `mine`: its own entry.
RosterDecision decide(const std::vector<RosterEntry>& roster, int rank, const PoolEntry& mine);

}  // namespace ringmend::membership
