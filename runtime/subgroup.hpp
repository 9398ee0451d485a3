// A subgroup: a communicator over some members of the world
// (Communicator::split, Communicator::group), a view of the world's
// membership rather than a membership of its own (docs/subgroups.md).
//
// Its epoch (control group, shared memory, UCX endpoints) is built over its
// members the first time it is used in a world epoch, by the same
// EpochBuilder, with a control group made by its members only
// (Control::subset): a subgroup that is not used costs nothing, and no
// member outside it takes part. Its calls run the world's algorithms over
// that epoch, with their own numbering, on the thread that runs the
// world's calls.
//
// Failures (this step of the design): a member's death, noticed in a call
// or before one, ends the subgroup with Error(MemberLost) on each of its
// survivors, at that call or at their next one; it runs no more calls. The
// world recovers as always, at its own next call; a subgroup whose members
// all survived the world's recovery goes on (its epoch is rebuilt over the
// new world epoch), unless RINGMEND_SUBGROUP_RECOVERY=step: then a loss
// anywhere in the world ends it too, so that every member leaves its step
// and the application runs the step again over subgroups made anew, with
// the spares in them. Bad input on one rank ends the call on every rank of
// the subgroup with an error, never a hang.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "membership/epoch.hpp"
#include "runtime/communicator_impl.hpp"
#include "transport/progress.hpp"

namespace ringmend {

class Subgroup final : public transport::WaitContext {
 public:
  // `members`: the member ids, in the subgroup's rank order (this process
  // one of them), each a member of the world's current epoch. `name`: how
  // errors name it ("split 2, color 1").
  Subgroup(Communicator::Impl& world, std::weak_ptr<void> world_alive,
           std::vector<membership::MemberId> members, std::string name);
  ~Subgroup() override;  // its epoch goes to the world, kept until the world ends
  Subgroup(const Subgroup&) = delete;
  Subgroup& operator=(const Subgroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(members_.size()); }
  const std::vector<membership::MemberId>& members() const { return members_; }
  std::uint64_t calls() const { return seq_; }
  // Names it the same on each of its members (MemberInfo::subgroups).
  std::uint64_t identity() const { return identity_; }
  // The calls this process finished, and whether it runs more.
  std::uint64_t finished() const { return in_call_ ? seq_ - 1 : seq_; }
  bool running() const { return ended_.empty() && !world_gone(); }
  // The world epoch the subgroup's epoch was last built over (its "epoch").
  std::uint64_t world_epoch() const { return built_on_; }
  Communicator::Impl& world() { return world_; }
  // Its epoch, for the world's end (the subgroup runs no more calls).
  std::unique_ptr<membership::Epoch> take_epoch() {
    if (ended_.empty()) ended_ = name_ + ": the world communicator has ended";
    return std::move(epoch_);
  }
  // The world communicator has ended (the Runtime is gone).
  bool world_gone() const { return world_alive_.expired(); }

  // One call of the application, on the thread that runs the world's calls.
  CollectiveResult call(const CollectiveCall& c);

  // WaitContext: the subgroup's own control group (a failure among its
  // members, or a revocation by one of them), and RINGMEND_TIMEOUT.
  void check() override;
  void on_phase(transport::Phase, int) override {}
  bool oversubscribed() const override { return epoch_ && epoch_->oversubscribed; }

 private:
  // The subgroup's epoch over the world's current one; throws MemberLost
  // when a member is gone from the world or died during the build.
  void ensure_epoch();
  void execute(const CollectiveCall& c);
  // Takes part in the world's recovery that interrupted this call.
  void recover_world();
  // After a recovery of the world: whether the subgroup can go on, from
  // every member's progress in the world epoch's exchange (the same on
  // each): it ends unless every member finished as many of its calls.
  void judge(const membership::Epoch& world);
  // Under RINGMEND_SUBGROUP_RECOVERY=step: ends the subgroup when a member
  // of the world it last saw is gone from `world`.
  void end_if_world_lost_a_member(const membership::Epoch& world);
  // What the application does after a member's loss ended the subgroup.
  std::string remedy() const;
  // Ends the subgroup: every later call throws `code` with `why`.
  [[noreturn]] void end(Errc code, const std::string& why);
  // Why the call was interrupted: the members the control group reports
  // failed, or a revocation by a member that refused its call; nullopt
  // when the world is recovering, or one of its members died (the caller
  // takes part in the world's recovery and runs the call again).
  std::optional<std::pair<Errc, std::string>> interruption(const std::string& what) const;

  Communicator::Impl& world_;
  std::weak_ptr<void> world_alive_;
  std::vector<membership::MemberId> members_;
  std::string name_;
  int rank_ = 0;
  std::uint64_t identity_ = 0;  // of its control groups' messages (Control::subset)
  std::unique_ptr<membership::Epoch> epoch_;
  std::uint64_t built_on_ = 0;
  std::uint64_t seq_ = 0;
  bool in_call_ = false;
  std::uint64_t judged_on_ = 0;  // the world epoch whose members' progress it last judged
  std::vector<membership::MemberId> world_seen_;  // the world as the application saw it when it was made
  Errc ended_code_ = Errc::MemberLost;
  std::string ended_;  // why the subgroup runs no more calls; empty while it does
  std::vector<std::byte> scratch_;
  std::uint64_t deadline_ns_ = 0;
};

}  // namespace ringmend
