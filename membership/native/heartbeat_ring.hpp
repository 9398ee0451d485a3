// Who watches whom across nodes in a view (docs/membership.md, "The failure
// detector"): only node leaders (the lowest member of each node) send
// heartbeats, each to the next `fanout` leaders of the ring of nodes, and
// each expects them from the `fanout` leaders before it. A node's other
// processes are watched through pidfds inside the node, so heartbeat
// traffic grows with the number of nodes, not of processes, and a silent
// node is noticed by `fanout` others. Pure arithmetic: no clock, no I/O.
#pragma once

#include <string>
#include <vector>

#include "membership/native/view_change.hpp"

namespace ringmend::membership::native {

struct Placement {
  MemberId id = 0;
  std::string node;  // the node's name; members with the same name share a node
};

class HeartbeatRing {
 public:
  HeartbeatRing() = default;
  HeartbeatRing(const std::vector<Placement>& view, MemberId self, int fanout = 2);

  bool is_leader() const { return leader_; }
  const std::vector<MemberId>& send_to() const { return send_to_; }  // leaders after this node's
  const std::vector<MemberId>& watch() const { return watch_; }      // leaders before it
  // The members of `leader`'s node (itself included): a silent leader
  // stands for its whole node.
  std::vector<MemberId> node_of(MemberId leader) const;
  // The other members on this process's node (watched by pidfd).
  const std::vector<MemberId>& node_mates() const { return mates_; }

 private:
  struct Node {
    std::string name;
    std::vector<MemberId> members;  // sorted; the first leads
  };
  std::vector<Node> nodes_;  // ordered by leader
  bool leader_ = false;
  std::vector<MemberId> send_to_, watch_, mates_;
};

}  // namespace ringmend::membership::native
