// One membership epoch: who the members are, how they are placed, and the
// channels they talk over. Made only by the EpochBuilder; replaced whole by
// the next epoch after every membership change.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "coll/algorithm.hpp"
#include "membership/control.hpp"
#include "membership/member.hpp"
#include "topo/plan.hpp"
#include "transport/fabric.hpp"

namespace ringmend::membership {

struct Epoch {
  std::uint64_t number = 0;       // 0 for the first, +1 per change
  std::unique_ptr<Control> ctrl;  // the members' control group (ULFM or native)
  int rank = 0, size = 0;         // this process in ctrl
  std::vector<MemberId> members;  // member id of every rank
  // The members in the order of the ranks the application sees. Usually
  // `members`; an epoch made on the spare pool's own communicator keeps the
  // pool's order, while a joiner takes a lost member's rank.
  std::vector<MemberId> ranked;
  int app_rank() const {
    return static_cast<int>(std::find(ranked.begin(), ranked.end(), my_id()) - ranked.begin());
  }
  std::vector<MemberInfo> infos;  // what every member said when the epoch was built
  MemberId next_id = 0;           // the id the next joiner will get
  topo::Plan plan;
  coll::Layout layout;  // the plan, as the algorithms see it
  std::unique_ptr<transport::Fabric> fabric;
  // Whether a member failed or the group was revoked (the data path's
  // check; false until the build arms the watch).
  bool failure_noticed() const { return ctrl && ctrl->failure_noticed(); }
  bool oversubscribed = false;  // more ranks on this machine than CPUs to run them
  bool ready = false;           // every step done and agreed by every member

  MemberId my_id() const { return members.at(static_cast<std::size_t>(rank)); }
  bool contains(MemberId id) const { return std::find(members.begin(), members.end(), id) != members.end(); }
  // The ranks admitted in this epoch (MemberInfo::joining).
  std::vector<int> joiner_ranks() const {
    std::vector<int> out;
    for (int r = 0; r < static_cast<int>(infos.size()); ++r)
      if (infos[static_cast<std::size_t>(r)].joining) out.push_back(r);
    return out;
  }
  // The member that hands the registered state to joiner `j`, straight
  // (coll/direct_transfer.hpp): the first member on j's node that is not
  // joining (the state then crosses the node's shared memory, not the
  // network), else the first member that is not joining; -1 when `j` does
  // not join or nobody else is there.
  int state_source_of(int j) const {
    if (!infos.at(static_cast<std::size_t>(j)).joining) return -1;
    int first = -1;
    for (int r = 0; r < static_cast<int>(infos.size()); ++r) {
      const MemberInfo& m = infos[static_cast<std::size_t>(r)];
      if (m.joining) continue;
      if (m.node_key == infos[static_cast<std::size_t>(j)].node_key) return r;
      if (first < 0) first = r;
    }
    return first;
  }
  // The joiners member `r` hands the state to.
  std::vector<int> state_receivers_of(int r) const {
    std::vector<int> out;
    for (int j : joiner_ranks())
      if (state_source_of(j) == r) out.push_back(j);
    return out;
  }
  // Whether `ranks` put more processes on this rank's machine than it has
  // CPUs (two "nodes" may be one machine: the local Slurm cluster).
  bool crowd_this_machine(const std::vector<int>& ranks) const {
    const auto mine = infos.at(static_cast<std::size_t>(rank)).machine;
    const auto here = std::count_if(ranks.begin(), ranks.end(), [&](int r) {
      return infos.at(static_cast<std::size_t>(r)).machine == mine;
    });
    return here > static_cast<long>(std::thread::hardware_concurrency());
  }
  coll::Channels channels() const {
    if (!fabric) return {};
    return {fabric->node(), fabric->inter(), fabric->flat()};
  }
  // Stops using the channels after a failure (they stay open; see Fabric::retire).
  void retire() {
    if (ctrl) ctrl->unwatch();
    if (fabric) fabric->retire();
  }
};

}  // namespace ringmend::membership
