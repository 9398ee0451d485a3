// The channels of one membership epoch, and the one place that chooses the
// channel for each peer (as NCCL's transport selection does):
//
//   * a rank of this node  -> shared memory: the node's segment (ShmNode,
//                             for the shared-memory algorithms) and its
//                             point-to-point rings (ShmChannel);
//   * a rank of another node -> UCX (UcxChannel), endpoints only to the
//                             peers the epoch's algorithms name;
//   * flat()               -> one Channel reaching any peer, routed between
//                             the two (RoutedChannel).
//
// Nothing is set up that the epoch does not use: no UCX worker when every
// peer is on this node, no point-to-point ring mapped before its pair talks.
// A GPU channel (NCCL inside the node, host-staged UCX across) plugs in
// here: one more kind of peer link chosen per peer, and one more member of
// coll::Channels.
//
// The membership layer drives it in order: open_node() -> local_address()
// of this rank, exchanged with remote_peers() -> connect().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/routed_channel.hpp"
#include "transport/shm_channel.hpp"
#include "transport/shm_node.hpp"
#include "transport/ucx_channel.hpp"

namespace ringmend::transport {

struct FabricSpec {
  int rank = 0, size = 1;  // this rank in the epoch's communicator
  std::uint32_t epoch = 0;
  // The node's shared memory: opened when node_shm. local_ranks lists the
  // communicator ranks of this node in local order (this rank among them),
  // local_pids their processes; whichever local rank comes first creates
  // the segments.
  bool node_shm = false;
  std::vector<int> local_ranks;
  std::vector<pid_t> local_pids;
  std::string segment_name;
  ShmLayout node_layout;
  ShmChannelLayout p2p_layout;
  // After a Shrink: the previous epoch's point-to-point channel on this
  // node, and each local rank's rank in it. Its rings are reused
  // (ShmChannel::for_survivors): no new segment, no new pages. Null: a new
  // segment.
  const ShmChannel* previous_p2p = nullptr;
  std::vector<int> previous_local;
  // Every rank this rank exchanges with under the epoch's algorithms.
  std::vector<int> peers;
};

class Fabric {
 public:
  Fabric(UcxContext& ucx, FabricSpec spec);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  // Opens this node's segments when the spec asks for them; empty text on
  // success, otherwise why it failed (the fabric then has no shared memory,
  // and the epoch must be rebuilt without: peers are routed by the spec).
  // The caller removes the segment names (unlink_names) once every local
  // rank has attached.
  std::string open_node();
  void unlink_names() const;

  // The peers reached over UCX, and this rank's UCX address for them (the
  // UCX worker is created on the first call; no call, no worker).
  const std::vector<int>& remote_peers() const { return remote_peers_; }
  std::vector<std::byte> local_address();
  // `addresses[i]` is remote_peers()[i]'s local_address().
  void connect(const std::vector<std::vector<std::byte>>& addresses);

  // The channels. node() is null without shared memory, inter() without
  // remote peers.
  ShmNode* node() const { return node_.get(); }
  const ShmChannel* p2p() const { return p2p_.get(); }
  Channel* inter() const { return ucx_.get(); }
  Channel* flat() const;

  // Stops using every channel (after a failure). The UCX worker stays open,
  // still accepting connections, until the fabric is destroyed: a survivor
  // still connecting to it (it has not noticed the failure yet) must not be
  // refused, which UCX's TCP transport treats as fatal. The point-to-point
  // channel stays too, abandoned: the next epoch's survivors on this node
  // take its rings over (FabricSpec::previous_p2p).
  void retire();

 private:
  void route();
  void drop_node();

  UcxContext& context_;
  FabricSpec spec_;
  std::vector<int> local_index_;  // by communicator rank: index in local_ranks, or -1
  std::vector<int> remote_peers_;
  std::unique_ptr<UcxChannel> ucx_;
  std::unique_ptr<ShmNode> node_;
  std::unique_ptr<ShmChannel> p2p_;
  std::unique_ptr<RoutedChannel> routed_;
};

}  // namespace ringmend::transport
