// The control group of a subgroup under ULFM (Control::subset): some ranks
// of the world's communicator, talking point-to-point on it, with tags of
// their own, instead of an MPI communicator made for them.
//
// Why no communicator of its own: MPI_Comm_create_group, made by the
// subset's ranks only, waits for ever for a partner that died before or
// inside it, and Open MPI 5.0.7's ULFM did not always survive a world
// revoked and shrunk while such communicators existed
// (docs/subgroups.md). Point-to-point operations on the world's
// communicator end with an error when their peer dies or that
// communicator is revoked, and make nothing that ULFM has to tear down.
//
// What it offers: the operations the epoch builder asks for (all-gather,
// the address exchange, agreement as an all-gather of flags: not uniform,
// which a subgroup does not need: a failure ends it), and a failure
// notice limited to its own members: a member's death, or a member's
// revocation of the subset (one message to each other member). A world
// revoked under it ends its waits on messages; the data path's waits go on
// (a subgroup's call is independent of the world's recovery).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "membership/control.hpp"
#include "ulfm/ulfm.hpp"

namespace ringmend::membership {

class UlfmSubsetControl final : public Control {
 public:
  // `comm`: the world's communicator (shared: the subset's epoch may
  // outlive the world's); `ranks`: the subset's ranks in it, this process
  // one of them; `node_keys`: each subset rank's node key in the subset
  // (the subset rank of its first node mate); `tag`: the same on every
  // member, different for every subset of the same processes;
  // `fingerprint`: the subset's identity, which every message carries and
  // every receiver checks; `timeout_seconds` (0: none) bounds each wait
  // for a member that is alive but does not come (RINGMEND_TIMEOUT).
  UlfmSubsetControl(ulfm::CommHandle comm, std::vector<int> ranks, std::vector<int> node_keys, int tag,
                    std::uint64_t fingerprint, double timeout_seconds);
  ~UlfmSubsetControl() override;
  UlfmSubsetControl(const UlfmSubsetControl&) = delete;
  UlfmSubsetControl& operator=(const UlfmSubsetControl&) = delete;

  // The first of the three tags on `comm` of the subset `fingerprint`
  // names (the world's own messages use tags below kFirstTag).
  static int first_tag(MPI_Comm comm, std::uint64_t fingerprint);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(ranks_.size()); }
  std::vector<int> world_ranks() const override;
  const char* backend() const override { return "ULFM"; }
  void watch() override;
  void unwatch() override;
  bool failure_noticed() override;
  void revoke() override;
  bool revoked() override;
  bool agree(int& flag, bool sleeping) override;
  bool uniform_outcomes() const override { return false; }
  bool allgather(const void* mine, std::size_t bytes, void* all) override;
  bool exchange(const std::vector<int>& peers, const std::vector<std::byte>& mine,
                std::vector<std::vector<std::byte>>& theirs) override;
  bool barrier() override;
  std::optional<Shrunk> shrink(std::string& error) override;
  std::unique_ptr<Control> subset(const SubsetSpec& spec, std::string& error) override;
  const char* subsets_unsupported() const override {
    return "subgroups of subgroups are not made yet: split the world communicator";
  }
  std::optional<int> node_key() override { return node_keys_.at(static_cast<std::size_t>(rank_)); }
  std::vector<int> known_failed() override;

  static constexpr int kFirstTag = 1 << 16;

 private:
  // The three tags of this subset: a revocation, the all-gathers, the
  // address exchange.
  int revoke_tag() const { return tag_; }
  int gather_tag() const { return tag_ + 1; }
  int address_tag() const { return tag_ + 2; }
  // Waits for `requests` (receives), polling the failure notice: false
  // when a request failed or a member died or revoked the subset; the
  // receives still pending are cancelled.
  bool wait_all(std::vector<MPI_Request>& requests);
  // Sends `bytes` to subset rank `to`: the buffer is the control's until
  // the send completes (a send to a dead peer may never).
  bool send(int to, int tag, std::vector<std::byte> bytes);
  void reap_sends();

  ulfm::CommHandle comm_;
  std::vector<int> ranks_;      // in the world's communicator
  std::vector<int> node_keys_;  // subset ranks
  int rank_ = 0;
  int tag_ = 0;
  std::uint64_t fingerprint_ = 0;
  double timeout_seconds_ = 0;
  std::uint64_t operations_ = 0;  // all-gathers and exchanges so far: every message says which
  bool revoked_ = false;          // by this process, or a member's message
  bool revoke_sent_ = false;
  std::uint64_t next_failed_poll_ns_ = 0;  // once the world is revoked, ULFM's list of the failed
  bool failed_ = false;                    // a member died (a watch receive failed with it)
  bool world_revoked_ = false;             // the watch receives ended with the world's revocation
  bool watching_ = false;
  std::vector<MPI_Request> watch_;  // one receive of a revocation per other member
  std::vector<int> watch_buffer_;
  struct Send {
    MPI_Request request;
    std::vector<std::byte> bytes;
  };
  std::vector<Send> sends_;
};

}  // namespace ringmend::membership
