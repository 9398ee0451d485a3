// Spare processes, and the pool in which they wait to be admitted.
//
// The pool holds every live process of the job: the members and the spares
// not yet admitted. A spare waits in it without spinning. Every change that
// involves the spares is one *round* of the pool, taken by every live
// process of it:
//
//   1. whoever starts the round wakes every spare (ULFM: a revoke of the
//      pool; native: a view change of the group);
//   2. the dead, spares too, drop out (a shrink; the view change);
//   3. every process says what it is and what it asks for (PoolEntry), and
//      what it would tell the grown epoch's exchange (MemberInfo): one
//      all-gather, the roster;
//   4. every process decides alike, from the roster alone (pool_roster.hpp):
//      which spares join and at which positions, which members leave (a
//      release), or that the job is over;
//   5. the members that stay and the joiners get their control group, from
//      which the epoch builder makes the Grow epoch; the roster is that
//      epoch's exchange.
//
// Members start a round when they recover from a failure with spares
// waiting (the round drops the dead and replaces them), at a collective-
// call boundary that every member reaches in the same call (spares that
// could not join during a recovery; a grow or release request), and at
// the end (docs/elastic.md). A spare never starts one.
//
// Two backends: ulfm_spare_pool.hpp (a communicator of the pool, under
// mpirun) and native/native_spare_pool.hpp (the native membership's group,
// under srun).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "membership/control.hpp"
#include "membership/member.hpp"

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
  // A spare that was started after the job and asked to join (RINGMEND_JOIN):
  // admitted even when the job has its size, which then grows by it.
  std::int32_t joining = 0;
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
  // Members that stay and joiners, the control group of the Grow epoch
  // (joiners take the positions no staying member holds, lowest first,
  // then the end); null on a spare that stays in the pool and on a member
  // that leaves.
  std::unique_ptr<Control> grown;
  // The application's rank of each rank of `grown` when `grown` is not in
  // position order (ULFM: the pool's own communicator, every process of
  // the pool staying or joining); empty when it is.
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
  virtual ~SparePool() = default;

  // Started as a spare (what it is after a round: RoundOutcome::joined).
  virtual bool is_spare() const = 0;
  // The world rank of the first process on this process's node, the same
  // for every process of the node: an epoch builder's host
  // (EpochBuilder::set_host). -1 when not known (a pool of members made
  // later).
  virtual int host() const = 0;
  // Every process of the pool started on this process's node: no epoch of
  // the job will ever need a channel to another node.
  virtual bool one_node() const = 0;
  virtual int spares_left() const = 0;

  // At the start of a recovery, on every member alike: the native pool
  // moves to a view past `members`' (the members' control group), whose
  // processes beyond the members (spares, joiners) spares_left() counts
  // then; ULFM's needs nothing (its recovery decides between a round and
  // a plain shrink by spares_left(); the native one always takes a round).
  virtual void settle(Control& members) { (void)members; }

  // A spare's wait for the next round, without spinning: until a round has
  // begun, or every member of the job is gone. They finished (JobFinished)
  // when the pool can tell (the native one: a member said goodbye); else
  // they are lost (MembersLost). Either ends the spare.
  enum class SpareWait { RoundBegun, JobFinished, MembersLost };
  virtual SpareWait wait_for_round() = 0;

  // One round (see the top of this file), retried until the roster is
  // agreed by every live process; `mine` as above, `info` what this
  // process would tell the grown epoch's exchange
  // (EpochBuilder::identify). A joiner and the members then build the
  // Grow epoch on `grown`.
  virtual RoundOutcome round(const PoolEntry& mine, const MemberInfo& info) = 0;
  // Where the last round's time went, for the log: "shrink 1.2 ms, roster
  // 0.4 ms, split 0.9 ms" (summed over its attempts).
  virtual std::string laps() const = 0;
  // Of which dropping the dead (a shrink, a view change), in seconds.
  virtual double shrink_seconds() const = 0;
};

}  // namespace ringmend::membership
