#include "transport/routed_channel.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace ringmend::transport {
namespace {

// Operations of the local channel are marked in the handle's lowest bit
// (handles point to aligned request objects, so the bit is free).
constexpr std::uintptr_t kLocalBit = 1;

Channel::Op mark_local(Channel::Op op) {
  return reinterpret_cast<Channel::Op>(reinterpret_cast<std::uintptr_t>(op) | kLocalBit);
}
bool is_local(Channel::Op op) { return (reinterpret_cast<std::uintptr_t>(op) & kLocalBit) != 0; }
Channel::Op unmark(Channel::Op op) {
  return reinterpret_cast<Channel::Op>(reinterpret_cast<std::uintptr_t>(op) & ~kLocalBit);
}

}  // namespace

RoutedChannel::RoutedChannel(Channel& local, Channel* remote, int rank, std::vector<int> local_index)
    : local_(local), remote_(remote), rank_(rank), local_index_(std::move(local_index)) {
  if (remote_ && local_index_.size() != static_cast<std::size_t>(remote_->size()))
    throw std::logic_error("routed channel: one entry per rank needed");
}

int RoutedChannel::local_of(int peer) const { return local_index_.at(static_cast<std::size_t>(peer)); }

Channel& RoutedChannel::remote_of(int peer) const {
  if (!remote_)
    throw std::logic_error("routed channel: rank " + std::to_string(peer) +
                           " is on another node, but this epoch has no inter-node channel");
  return *remote_;
}

Channel::Op RoutedChannel::send(int peer, std::uint32_t tag, std::span<const Piece> pieces) {
  if (const int l = local_of(peer); l >= 0) return mark_local(local_.send(l, tag, pieces));
  return remote_of(peer).send(peer, tag, pieces);
}

Channel::Op RoutedChannel::recv(int peer, std::uint32_t tag, std::span<const Piece> pieces) {
  if (const int l = local_of(peer); l >= 0) return mark_local(local_.recv(l, tag, pieces));
  return remote_of(peer).recv(peer, tag, pieces);
}

OpState RoutedChannel::test(Op op, std::size_t* bytes) {
  return is_local(op) ? local_.test(unmark(op), bytes) : remote_->test(op, bytes);
}

bool RoutedChannel::progress() {
  const bool local_moved = local_.progress();
  const bool remote_moved = remote_ && remote_->progress();
  return local_moved || remote_moved;
}

void RoutedChannel::abandon() {
  local_.abandon();
  if (remote_) remote_->abandon();
}

std::string RoutedChannel::failure_reason() const {
  return local_.peer_failed() || !remote_ ? local_.failure_reason() : remote_->failure_reason();
}

}  // namespace ringmend::transport
