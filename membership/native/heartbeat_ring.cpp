#include "membership/native/heartbeat_ring.hpp"

#include <algorithm>
#include <map>

namespace ringmend::membership::native {

HeartbeatRing::HeartbeatRing(const std::vector<Placement>& view, MemberId self, int fanout) {
  std::map<std::string, std::vector<MemberId>> by_node;
  for (const Placement& p : view) by_node[p.node].push_back(p.id);
  for (auto& [name, members] : by_node) {
    std::sort(members.begin(), members.end());
    nodes_.push_back({name, members});
  }
  std::sort(nodes_.begin(), nodes_.end(),
            [](const Node& a, const Node& b) { return a.members.front() < b.members.front(); });
  const auto n = static_cast<int>(nodes_.size());
  int mine = -1;
  for (int i = 0; i < n; ++i) {
    const auto& members = nodes_[static_cast<std::size_t>(i)].members;
    if (std::binary_search(members.begin(), members.end(), self)) {
      mine = i;
      for (MemberId m : members)
        if (m != self) mates_.push_back(m);
      leader_ = members.front() == self;
    }
  }
  if (mine < 0 || !leader_) return;
  // With fewer nodes than 2 * fanout + 1 the successors and predecessors
  // overlap: each leader is listed once.
  for (int k = 1; k <= fanout && k < n; ++k) {
    const MemberId after = nodes_[static_cast<std::size_t>((mine + k) % n)].members.front();
    const MemberId before = nodes_[static_cast<std::size_t>((mine - k + n) % n)].members.front();
    if (std::find(send_to_.begin(), send_to_.end(), after) == send_to_.end()) send_to_.push_back(after);
    if (std::find(watch_.begin(), watch_.end(), before) == watch_.end()) watch_.push_back(before);
  }
}

std::vector<MemberId> HeartbeatRing::node_of(MemberId leader) const {
  for (const Node& node : nodes_)
    if (node.members.front() == leader) return node.members;
  return {leader};
}

}  // namespace ringmend::membership::native
