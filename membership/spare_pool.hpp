// Spare processes, and the pool in which they wait to be admitted.
//
// The pool is a communicator of every live process of the job: the members
// and the spares not yet admitted. A spare waits on it without spinning (a
// failure monitor polled between short sleeps). Every change that involves
// the spares is one *round* of the pool, taken by every live process of it:
//
//   1. whoever starts the round revokes the pool, which wakes every spare;
//   2. every live process shrinks the pool (the dead, spares too, drop out);
//   3. every process says what it is and what it asks for (PoolEntry), and
//      what it would tell the grown epoch's exchange (MemberInfo): one
//      allgather, the roster;
//   4. every process decides alike, from the roster alone: which spares
//      join and at which positions, which members leave (a release), or
//      that the job is over;
//   5. the members that stay and the joiners split off their communicator,
//      from which the epoch builder makes the Grow epoch; when every
//      process of the pool stays or joins, the pool's own communicator is
//      lent to that epoch instead (no split to agree on). Either way the
//      roster is that epoch's exchange (when every process knows its
//      node's host), except for a lent pool without joiners.
//
// The roster is agreed on before its decision is acted on, or all go round
// again; when the decision is a split, the split's agreement stands for
// the roster's, and when the pool is lent to an epoch with joiners, that
// epoch's own agreement does: either is the next agreement on the pool
// for every process (a process whose allgather failed makes the roster's
// with 0, and every process goes round again). A replacement then takes
// as many MPI steps as a shrink-only recovery: shrink, allgather,
// agreement.
//
// Members start a round when they recover from a failure with spares
// waiting (the round drops the dead and replaces them), at a collective-
// call boundary that every member reaches in the same call (spares that
// could not join during a recovery; a grow or release request), and at
// the end (docs/elastic.md). A spare never starts one.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "membership/member.hpp"
#include "ulfm/ulfm.hpp"

namespace ringmend::membership {

// What each process of the pool says in a round. A member gives its id, its
// position (its rank in the membership its application sees) and, like
// every other member, the size the job should have; a spare gives none.
struct PoolEntry {
  MemberId id = kNoMember;       // kNoMember: a spare
  std::int32_t position = -1;    // a member's rank in the application's membership
  std::int32_t view_size = 0;    // the size of that membership
  std::int32_t target_size = 0;  // members wanted after the round (members agree)
  std::int32_t ending = 0;       // the members are done: spares leave
  std::int32_t leaving = 0;      // this member is released: it leaves the job
  // Spares join only when every staying member is at the same collective
  // (`seq`) and none holds them back (`hold`: an input error, finalizing, a
  // request in progress): a joiner resumes inside that collective, so it
  // must be one that every member is in and that its application makes.
  std::int32_t hold = 0;
  std::int64_t seq = 0;
  // The member without which that collective fails on every survivor (a
  // broadcast's root), if any: when it is lost, nobody joins either.
  MemberId needs = kNoMember;
  // This member recovers from a failure. A member that came for another
  // reason (spares to admit, a request) must join that recovery first: the
  // round decides nothing (RoundOutcome::recovery_first).
  std::int32_t recovering = 0;
};

// What a round decided, the same on every process.
struct RoundOutcome {
  bool ending = false;      // the job is over: a spare leaves
  bool no_members = false;  // no member is left: a spare leaves, with an error
  int members = 0;          // members present
  int target_size = 0;      // the size the members want (the largest any gave)
  int joiners = 0;          // spares admitted in this round
  bool held = false;        // spares were wanted, but the members could not take them now
  // Some members recover and others came for another reason: nothing was
  // decided; the others recover too, and all go round again.
  bool recovery_first = false;
  int spares_left = 0;  // spares still waiting after it
  bool joined = false;  // this process is a spare admitted now
  bool left = false;    // this process is a member that leaves (released)
  // Members that stay and joiners, ordered by position (joiners take the
  // positions no staying member holds, lowest first, then the end); null on
  // a spare that stays in the pool and on a member that leaves.
  ulfm::CommHandle grown;
  // The application's rank of each rank of `grown` when `grown` is the
  // pool's own communicator (every process of the pool stays or joins);
  // empty when `grown` is in that order already (split off the pool).
  std::vector<int> positions;
  std::vector<MemberId> present;   // ids of the members that stay, in position order
  std::vector<MemberId> released;  // ids of the members that leave, in position order
  // The grown epoch's exchange, gathered with the roster, in `grown`'s
  // order (membership::Grow::infos); empty when `grown` is the pool's own
  // communicator without joiners, or no process knows its node's host (a
  // pool of members made later).
  std::vector<MemberInfo> infos;
};

class SparePool {
 public:
  // Every live process of `world` (MPI_COMM_WORLD) enters the pool; the last
  // `spares` ranks of the world are spares. The first live processes up to
  // the job's size (world size - spares) are the members: a spare fills in
  // at once for a member that died while MPI started. `members` is their
  // communicator (null on a spare). Throws Error when MPI fails otherwise
  // than by a process failure.
  SparePool(MPI_Comm world, int spares, ulfm::CommHandle& members);
  // A pool of the members of `members` alone, for a job started without
  // spares that releases members: the same rounds serve it.
  explicit SparePool(MPI_Comm members);

  // Started as a spare (what it is after a round: RoundOutcome::joined).
  bool is_spare() const { return spare_; }
  // The world rank of the first process on this process's node (MPI's
  // MPI_COMM_TYPE_SHARED over the pool as it started), the same for every
  // process of the node: an epoch builder's host (EpochBuilder::set_host).
  // -1 for a pool of members made later (a release without spares).
  int host() const { return host_; }
  // Every process of the pool started on this process's node: no epoch of
  // the job will ever need a channel to another node.
  bool one_node() const { return one_node_; }
  int spares_left() const { return spares_left_; }

  // A spare's wait for the next round: sleeps between polls of the pool.
  // Returns true when a round has begun; false when every member is gone
  // (failures of all the members the last round named), which ends the job.
  bool wait_for_round();

  // One round (see the top of this file), retried until the roster is
  // agreed by every live process; `mine` as above, `info` what this
  // process would tell the grown epoch's exchange
  // (EpochBuilder::identify). A joiner and the members then build the
  // Grow epoch on `grown`; when joiners come into the pool's own
  // communicator (`grown` shared with the pool, `joiners` > 0), that build
  // must follow on every process: its agreement completes the round's.
  RoundOutcome round(const PoolEntry& mine, const MemberInfo& info);
  // Where the last round's time went, for the log: "shrink 1.2 ms, roster
  // 0.4 ms, split 0.9 ms" (summed over its attempts).
  std::string laps() const;
  // Of which the revoke and shrink of the pool, in seconds.
  double shrink_seconds() const { return shrink_seconds_; }

 private:
  // Replaces the pool by its live processes (`from` is the world at first);
  // false, to go round again, when a process died meanwhile.
  bool shrink_to_live(MPI_Comm from, int attempt);
  // An agreement over the pool on `ok`: true when every process had it.
  bool agreed(int ok, int attempt, const char* what);
  ulfm::CommHandle split(int color, int key, bool& ok);
  // This process's node in the pool: see host() (-1 when MPI failed) and
  // one_node().
  struct NodePlace {
    int host = -1;
    bool whole_pool = false;
  };
  NodePlace place_on_node(MPI_Comm world);

  // The last round's time in its three MPI steps, in seconds.
  double shrink_seconds_ = 0, roster_seconds_ = 0, split_seconds_ = 0;
  ulfm::CommHandle pool_;
  // pool_ is also the current epoch's communicator (every process of the
  // pool a member): the next round shrinks it without revoking it, since a
  // revoke would stop the members' collectives on it. No spare waits then
  // to be woken, and members only come to a round at a call boundary.
  bool lent_ = false;
  bool spare_ = false;  // started as a spare
  int host_ = -1;
  bool one_node_ = false;
  int spares_left_ = 0;
  std::vector<int> member_ranks_;  // pool ranks of the members, as of the last round
};

}  // namespace ringmend::membership
