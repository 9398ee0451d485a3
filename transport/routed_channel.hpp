// A channel that reaches the ranks of this node through one channel (shared
// memory) and the other ranks through another (UCX).
//
// The algorithms written against Channel (chain broadcast, ring, recursive
// doubling) then use shared memory between local neighbours and the network
// only where it is needed, without knowing which is which.
#pragma once

#include <string>
#include <vector>

#include "transport/channel.hpp"

namespace ringmend::transport {

class RoutedChannel final : public Channel {
 public:
  // `local_index[r]`: the rank of communicator rank r in `local`, or -1 for
  // ranks reached through `remote` (whose ranks are communicator ranks);
  // `remote` may be null when every peer is local. `rank` is this process's
  // communicator rank. The channels must outlive this one.
  RoutedChannel(Channel& local, Channel* remote, int rank, std::vector<int> local_index);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(local_index_.size()); }
  Op send(int peer, std::uint32_t tag, std::span<const Piece> pieces) override;
  Op recv(int peer, std::uint32_t tag, std::span<const Piece> pieces) override;
  OpState test(Op op, std::size_t* bytes = nullptr) override;
  bool progress() override;
  bool peer_failed() const override { return local_.peer_failed() || (remote_ && remote_->peer_failed()); }
  void abandon() override;
  std::string failure_reason() const override;

 private:
  int local_of(int peer) const;

  Channel& remote_of(int peer) const;

  Channel& local_;
  Channel* remote_;
  int rank_;
  std::vector<int> local_index_;
};

}  // namespace ringmend::transport
