#include "transport/fabric.hpp"

#include <stdexcept>
#include <utility>

namespace ringmend::transport {

Fabric::Fabric(UcxContext& ucx, FabricSpec spec)
    : context_(ucx), spec_(std::move(spec)), local_index_(static_cast<std::size_t>(spec_.size), -1) {
  for (std::size_t i = 0; i < spec_.local_ranks.size(); ++i)
    local_index_.at(static_cast<std::size_t>(spec_.local_ranks[i])) = static_cast<int>(i);
  route();
}

Fabric::~Fabric() {
  routed_.reset();  // refers to the others
  p2p_.reset();
  node_.reset();
  // Destroying a worker takes milliseconds: not on the way to the next
  // epoch's first collective (ucx_context.hpp).
  context_.close_later(std::move(ucx_));
}

void Fabric::route() {
  // By the spec, not by what opened: every rank of the epoch must agree on
  // who reaches whom over UCX (the address exchange is pairwise). Without
  // the node's shared memory, every peer goes over UCX.
  remote_peers_.clear();
  for (int p : spec_.peers)
    if (p != spec_.rank && (!spec_.node_shm || local_index_.at(static_cast<std::size_t>(p)) < 0))
      remote_peers_.push_back(p);
}

std::string Fabric::open_node() {
  if (!spec_.node_shm) return {};
  const int local = local_index_.at(static_cast<std::size_t>(spec_.rank));
  try {
    node_ = ShmNode::open(spec_.segment_name, spec_.node_layout, local, spec_.local_pids);
    if (spec_.previous_p2p)
      p2p_ = ShmChannel::for_survivors(*spec_.previous_p2p, spec_.previous_local, local, spec_.local_pids);
    else
      p2p_ = std::make_unique<ShmChannel>(
          ShmSegment::open_shared(spec_.segment_name + "-p2p", spec_.p2p_layout.total), spec_.p2p_layout,
          local, spec_.local_pids);
    // The rings this epoch's algorithms use, now (those reused are ready):
    // a full /dev/shm is then a set-up error, not a failure in the middle
    // of a collective.
    for (int p : spec_.peers)
      if (p != spec_.rank && local_index_.at(static_cast<std::size_t>(p)) >= 0)
        p2p_->prepare(local_index_.at(static_cast<std::size_t>(p)));
  } catch (const std::exception& e) {
    drop_node();
    return e.what();
  }
  return {};
}

void Fabric::unlink_names() const {
  if (!spec_.node_shm) return;
  ShmSegment::unlink_name(spec_.segment_name);
  ShmSegment::unlink_name(spec_.segment_name + "-p2p");
}

void Fabric::drop_node() {
  routed_.reset();
  p2p_.reset();
  node_.reset();
}

std::vector<std::byte> Fabric::local_address() {
  if (!ucx_) ucx_ = std::make_unique<UcxChannel>(context_, spec_.rank, spec_.size, spec_.epoch);
  return ucx_->local_address();
}

void Fabric::connect(const std::vector<std::vector<std::byte>>& addresses) {
  if (addresses.size() != remote_peers_.size())
    throw std::logic_error("fabric: one address per remote peer needed");
  if (!remote_peers_.empty()) {
    local_address();  // the worker, if not made yet
    std::vector<std::vector<std::byte>> by_rank(static_cast<std::size_t>(spec_.size));
    for (std::size_t i = 0; i < remote_peers_.size(); ++i)
      by_rank[static_cast<std::size_t>(remote_peers_[i])] = addresses[i];
    ucx_->connect(by_rank, remote_peers_);
  }
  if (p2p_)
    routed_ = std::make_unique<RoutedChannel>(*p2p_, ucx_.get(), spec_.rank, local_index_);
  else if (!ucx_)
    local_address();  // a lone rank: the flat algorithms still need a channel to run on
}

Channel* Fabric::flat() const {
  if (routed_) return routed_.get();
  return ucx_.get();
}

void Fabric::retire() {
  if (routed_) routed_->abandon();
  routed_.reset();
  // Kept, abandoned: a Shrink's epoch takes its rings over.
  if (p2p_) p2p_->abandon();
  node_.reset();
  if (ucx_) ucx_->abandon();
}

}  // namespace ringmend::transport
