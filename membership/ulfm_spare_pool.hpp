// The spare pool (spare_pool.hpp) over ULFM: a communicator of every live
// process of the job, under mpirun.
//
// A spare waits on the communicator (a failure monitor polled between short
// sleeps). A round revokes it (which wakes every spare), shrinks it, and
// allgathers the roster; then the members that stay and the joiners split
// off their communicator, from which the epoch builder makes the Grow
// epoch. When every process of the pool stays or joins, the pool's own
// communicator is lent to that epoch instead (no split to agree on). Either
// way the roster is that epoch's exchange (when every process knows its
// node's host), except for a lent pool without joiners.
//
// The roster is agreed on before its decision is acted on, or all go round
// again; when the decision is a split, the split's agreement stands for
// the roster's, and when the pool is lent to an epoch with joiners, that
// epoch's own agreement does: either is the next agreement on the pool
// for every process (a process whose allgather failed makes the roster's
// with 0, and every process goes round again). A replacement then takes
// as many MPI steps as a shrink-only recovery: shrink, allgather,
// agreement.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "membership/pool_roster.hpp"
#include "membership/spare_pool.hpp"
#include "ulfm/ulfm.hpp"

namespace ringmend::membership {

class UlfmSparePool final : public SparePool {
 public:
  // Every live process of `world` (MPI_COMM_WORLD) enters the pool; the last
  // `spares` ranks of the world are spares. The first live processes up to
  // the job's size (world size - spares) are the members: a spare fills in
  // at once for a member that died while MPI started. `members` is their
  // communicator (null on a spare). Throws Error when MPI fails otherwise
  // than by a process failure.
  UlfmSparePool(MPI_Comm world, int spares, ulfm::CommHandle& members);
  // A pool of the members of `members` alone, for a job started without
  // spares that releases members: the same rounds serve it.
  explicit UlfmSparePool(MPI_Comm members);

  bool is_spare() const override { return spare_; }
  // MPI's MPI_COMM_TYPE_SHARED over the pool as it started.
  int host() const override { return host_; }
  bool one_node() const override { return one_node_; }
  int spares_left() const override { return spares_left_; }
  // Sleeps between polls of the pool's failure monitor.
  SpareWait wait_for_round() override;
  // When joiners come into the pool's own communicator (`grown` shared with
  // the pool, `joiners` > 0), the Grow epoch's build must follow on every
  // process: its agreement completes the round's.
  RoundOutcome round(const PoolEntry& mine, const MemberInfo& info) override;
  std::string laps() const override;
  double shrink_seconds() const override { return shrink_seconds_; }

 private:
  // Replaces the pool by its live processes (`from` is the world at first);
  // false, to go round again, when a process died meanwhile.
  bool shrink_to_live(MPI_Comm from, int attempt);
  // round()'s two ends: the whole pool lent to the new epoch, or the
  // members and joiners split off it.
  RoundOutcome lend_whole_pool(RosterDecision& d, const std::vector<RosterEntry>& roster,
                               bool lend_to_joiners);
  std::optional<RoundOutcome> split_off(RosterDecision& d, const std::vector<RosterEntry>& roster, int rank,
                                        int attempt);
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
