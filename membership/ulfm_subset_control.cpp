#include "membership/ulfm_subset_control.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "ringmend/core/error.hpp"

namespace ringmend::membership {
namespace {

// What every message of a subset starts with: whose it is, and which of
// its operations. A stray message (of an operation a failure cut short, or
// of another subset that drew the same tags) never passes for another's.
struct Header {
  std::uint64_t fingerprint;
  std::uint64_t operation;
};

// A message's header and payload, one buffer to send.
std::vector<std::byte> framed(const Header& header, const void* payload, std::size_t bytes) {
  std::vector<std::byte> out(sizeof header + bytes);
  std::memcpy(out.data(), &header, sizeof header);
  if (bytes > 0) std::memcpy(out.data() + sizeof header, payload, bytes);
  return out;
}

// Whether a received message belongs to operation `expected` of this
// subset: false for a stray of an operation a failure cut short (the
// caller's operation fails, as after a failure); another subset's message
// on these tags is a bug, never taken for this one's.
bool of_operation(const std::byte* message, std::size_t bytes, const Header& expected) {
  Header theirs{};
  if (bytes < sizeof theirs) return false;
  std::memcpy(&theirs, message, sizeof theirs);
  if (theirs.fingerprint != expected.fingerprint)
    throw Error(Errc::Internal,
                "subgroup control: a message of another subgroup arrived on its tags "
                "(two subgroups of these processes drew the same tags)");
  return theirs.operation == expected.operation;
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// Ends a receive still pending without waiting for it (its peer may never
// send, or be dead).
void cancel(MPI_Request& r) {
  if (r == MPI_REQUEST_NULL) return;
  MPI_Cancel(&r);
  MPI_Request_free(&r);
  r = MPI_REQUEST_NULL;
}

// Sends that never completed when their subset went (to a dead peer): MPI
// still owns their buffers, so they are kept, reachable, until the process
// ends.
std::vector<std::vector<std::byte>>& abandoned_send_buffers() {
  static std::vector<std::vector<std::byte>> buffers;
  return buffers;
}

}  // namespace

int UlfmSubsetControl::first_tag(MPI_Comm comm, std::uint64_t fingerprint) {
  int* upper = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm, MPI_TAG_UB, &upper, &found);
  // MPI guarantees 32767; Open MPI's ob1 offers 2^31 - 1.
  const long top = found && upper ? *upper : 32767;
  const long slots = std::max(1L, (top - kFirstTag + 1) / 3);
  return kFirstTag + 3 * static_cast<int>(fingerprint % static_cast<std::uint64_t>(slots));
}

UlfmSubsetControl::UlfmSubsetControl(ulfm::CommHandle comm, std::vector<int> ranks,
                                     std::vector<int> node_keys, int tag, std::uint64_t fingerprint,
                                     double timeout_seconds)
    : comm_(std::move(comm)),
      ranks_(std::move(ranks)),
      node_keys_(std::move(node_keys)),
      tag_(tag),
      fingerprint_(fingerprint),
      timeout_seconds_(timeout_seconds) {
  int me = -1;
  MPI_Comm_rank(comm_.get(), &me);
  const auto at = std::find(ranks_.begin(), ranks_.end(), me);
  if (at == ranks_.end()) throw std::logic_error("subset control: this process is not one of its ranks");
  rank_ = static_cast<int>(at - ranks_.begin());
  if (node_keys_.size() != ranks_.size()) throw std::logic_error("subset control: a node key per rank");
}

UlfmSubsetControl::~UlfmSubsetControl() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  unwatch();
  reap_sends();
  for (Send& s : sends_) {
    MPI_Request_free(&s.request);  // MPI completes it, or drops it with its dead peer
    abandoned_send_buffers().push_back(std::move(s.bytes));
  }
}

std::vector<int> UlfmSubsetControl::world_ranks() const {
  const std::vector<int> all = ulfm::ranks_in(comm_.get(), MPI_COMM_WORLD);
  std::vector<int> mine;
  for (int r : ranks_) mine.push_back(all.at(static_cast<std::size_t>(r)));
  return mine;
}

void UlfmSubsetControl::watch() {
  if (watching_) return;
  watching_ = true;
  watch_.assign(ranks_.size(), MPI_REQUEST_NULL);
  watch_buffer_.assign(ranks_.size(), 0);
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    if (static_cast<int>(i) == rank_) continue;
    if (const int rc =
            MPI_Irecv(&watch_buffer_[i], 1, MPI_INT, ranks_[i], revoke_tag(), comm_.get(), &watch_[i]);
        rc != MPI_SUCCESS) {
      watch_[i] = MPI_REQUEST_NULL;
      if (ulfm::is_process_failure(rc))
        failed_ = true;
      else
        world_revoked_ = true;
    }
  }
}

void UlfmSubsetControl::unwatch() {
  for (MPI_Request& r : watch_) cancel(r);
  watching_ = false;
}

bool UlfmSubsetControl::failure_noticed() {
  if (revoked_ || failed_) return true;
  for (MPI_Request& r : watch_) {
    if (r == MPI_REQUEST_NULL) continue;
    int done = 0;
    const int rc = MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      r = MPI_REQUEST_NULL;  // completed, in error
      if (ulfm::is_process_failure(rc))
        failed_ = true;
      else
        world_revoked_ = true;  // the data path's waits go on; deaths are polled below
    } else if (done) {
      revoked_ = true;  // a member's revocation
    }
  }
  if (world_revoked_ && !failed_) {
    // The watch receives have ended: ULFM's list of the failed instead,
    // now and then (it builds a group each time).
    const std::uint64_t now = now_ns();
    if (now >= next_failed_poll_ns_) {
      next_failed_poll_ns_ = now + 10'000'000;
      failed_ = !known_failed().empty();
    }
  }
  return revoked_ || failed_;
}

void UlfmSubsetControl::revoke() {
  revoked_ = true;
  if (revoke_sent_) return;
  revoke_sent_ = true;
  for (int r = 0; r < size(); ++r)
    if (r != rank_) send(r, revoke_tag(), std::vector<std::byte>(sizeof(int)));
}

bool UlfmSubsetControl::revoked() {
  (void)failure_noticed();
  return revoked_;
}

bool UlfmSubsetControl::send(int to, int tag, std::vector<std::byte> bytes) {
  reap_sends();
  Send s{MPI_REQUEST_NULL, std::move(bytes)};
  const int rc = MPI_Isend(s.bytes.data(), static_cast<int>(s.bytes.size()), MPI_BYTE,
                           ranks_.at(static_cast<std::size_t>(to)), tag, comm_.get(), &s.request);
  if (rc != MPI_SUCCESS) return false;
  sends_.push_back(std::move(s));
  return true;
}

void UlfmSubsetControl::reap_sends() {
  std::erase_if(sends_, [](Send& s) {
    int done = 0;
    const int rc = MPI_Test(&s.request, &done, MPI_STATUS_IGNORE);
    return rc != MPI_SUCCESS || done;
  });
}

bool UlfmSubsetControl::wait_all(std::vector<MPI_Request>& requests) {
  const std::uint64_t start = now_ns();
  for (int spins = 0;; ++spins) {
    int done = 0;
    if (MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE) !=
        MPI_SUCCESS)
      break;
    if (done) return true;
    if (failure_noticed()) break;
    if (timeout_seconds_ > 0 && now_ns() - start > static_cast<std::uint64_t>(timeout_seconds_ * 1e9)) break;
    // A member still on its way (a build is milliseconds): leave the CPU
    // to it after a while, as an oversubscribed node needs.
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  for (MPI_Request& r : requests) cancel(r);
  return false;
}

bool UlfmSubsetControl::allgather(const void* mine, std::size_t bytes, void* all) {
  const Header header{fingerprint_, ++operations_};
  const std::size_t message = sizeof header + bytes;
  std::vector<std::byte> received(message * ranks_.size());
  std::vector<MPI_Request> receives;
  for (int r = 0; r < size(); ++r) {
    if (r == rank_) continue;
    MPI_Request q = MPI_REQUEST_NULL;
    if (MPI_Irecv(received.data() + message * static_cast<std::size_t>(r), static_cast<int>(message),
                  MPI_BYTE, ranks_[static_cast<std::size_t>(r)], gather_tag(), comm_.get(),
                  &q) != MPI_SUCCESS) {
      for (MPI_Request& p : receives) cancel(p);
      return false;
    }
    receives.push_back(q);
  }
  const std::vector<std::byte> out = framed(header, mine, bytes);
  bool sent = true;
  for (int r = 0; r < size() && sent; ++r)
    if (r != rank_) sent = send(r, gather_tag(), out);
  if (!sent || !wait_all(receives)) {
    for (MPI_Request& p : receives) cancel(p);
    return false;
  }
  auto* to = static_cast<std::byte*>(all);
  for (int r = 0; r < size(); ++r) {
    const std::byte* from = received.data() + message * static_cast<std::size_t>(r);
    if (r != rank_ && !of_operation(from, message, header)) return false;
    if (bytes > 0)
      std::memcpy(to + bytes * static_cast<std::size_t>(r), r == rank_ ? mine : from + sizeof header, bytes);
  }
  return true;
}

bool UlfmSubsetControl::agree(int& flag, bool) {
  std::vector<int> flags(ranks_.size());
  if (!allgather(&flag, sizeof flag, flags.data())) return false;
  for (int f : flags) flag &= f;
  return true;
}

bool UlfmSubsetControl::barrier() { return allgather(nullptr, 0, nullptr); }

bool UlfmSubsetControl::exchange(const std::vector<int>& peers, const std::vector<std::byte>& mine,
                                 std::vector<std::vector<std::byte>>& theirs) {
  theirs.assign(peers.size(), {});
  if (peers.empty()) return true;
  const Header header{fingerprint_, ++operations_};
  const std::vector<std::byte> out = framed(header, mine.data(), mine.size());
  for (int peer : peers)
    if (!send(peer, address_tag(), out)) return false;
  // Addresses differ in length: each is probed for, then received.
  std::vector<bool> have(peers.size(), false);
  std::size_t left = peers.size();
  const std::uint64_t start = now_ns();
  for (int spins = 0; left > 0; ++spins) {
    for (std::size_t i = 0; i < peers.size(); ++i) {
      if (have[i]) continue;
      int found = 0;
      MPI_Message msg = MPI_MESSAGE_NULL;
      MPI_Status status;
      if (MPI_Improbe(ranks_.at(static_cast<std::size_t>(peers[i])), address_tag(), comm_.get(), &found, &msg,
                      &status) != MPI_SUCCESS)
        return false;
      if (!found) continue;
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      std::vector<std::byte> in(static_cast<std::size_t>(std::max(count, 0)));
      if (MPI_Mrecv(in.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
      if (!of_operation(in.data(), in.size(), header)) return false;
      theirs[i].assign(in.begin() + sizeof(Header), in.end());
      have[i] = true;
      --left;
    }
    if (left == 0) break;
    if (failure_noticed()) return false;
    if (timeout_seconds_ > 0 && now_ns() - start > static_cast<std::uint64_t>(timeout_seconds_ * 1e9))
      return false;
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

std::optional<Control::Shrunk> UlfmSubsetControl::shrink(std::string& error) {
  error = "a subgroup's control group does not shrink (a failure ends the subgroup)";
  return std::nullopt;
}

std::unique_ptr<Control> UlfmSubsetControl::subset(const SubsetSpec&, std::string& error) {
  error = subsets_unsupported();
  return nullptr;
}

std::vector<int> UlfmSubsetControl::known_failed() {
  std::vector<int> failed;
  for (int world : ulfm::known_failed(comm_.get())) {
    const auto at = std::find(ranks_.begin(), ranks_.end(), world);
    if (at != ranks_.end()) failed.push_back(static_cast<int>(at - ranks_.begin()));
  }
  return failed;
}

}  // namespace ringmend::membership
