// The native membership (group.hpp) as the runtime's control group
// (membership/control.hpp): what makes a job launched by plain `srun` fault
// tolerant, without MPI's runtime. One SharedGroup per process holds the
// group, serializes its users and keeps it turning from a thread of its own
// while the application computes (a node leader that sends no heartbeat is
// suspected); each epoch's NativeControl is one view of it.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "membership/control.hpp"
#include "membership/native/group.hpp"

namespace ringmend::membership::native {

class SharedGroup {
 public:
  SharedGroup(std::unique_ptr<Group> group, double wait_seconds);
  ~SharedGroup();  // stops the thread (leave() first for a normal end)
  SharedGroup(const SharedGroup&) = delete;
  SharedGroup& operator=(const SharedGroup&) = delete;

  // Runs `f(group)` alone with the group.
  template <typename F>
  auto with(F&& f) {
    std::lock_guard<std::mutex> lock(mutex_);
    return f(*group_);
  }
  // Whether the view `epoch` is changing or over, without waiting for the
  // group when another thread holds it (its last known state then).
  bool changing_since(std::uint64_t epoch);
  // The view the group started with, and its members.
  std::uint64_t first_epoch() const { return first_epoch_; }
  const std::vector<MemberId>& first_members() const { return first_members_; }
  // How long an operation of a view may wait for its members before the
  // view counts as stalled (RINGMEND_RECOVERY_TIMEOUT).
  double wait_seconds() const { return wait_seconds_; }
  // A normal end: the peers are told (Bye); the thread stops.
  void leave();

 private:
  void turn();         // the thread's loop
  void turn_locked();  // one turn of the group, its state kept for readers without the lock
  std::mutex mutex_;
  std::unique_ptr<Group> group_;
  double wait_seconds_;
  std::uint64_t first_epoch_;
  std::vector<MemberId> first_members_;
  std::atomic<std::uint64_t> epoch_{0};
  std::atomic<bool> changing_{false}, stop_{false};
  static constexpr std::int64_t kTurnEveryNs = 1'000'000;
  std::atomic<std::int64_t> last_turn_{0};  // steady clock, ns
  std::thread thread_;
};

class NativeControl final : public Control {
 public:
  // The group's first view, every process of the job: the same on every
  // process even when the view has changed meanwhile (this control then
  // fails at its first call, and its recovery finds the later view).
  static std::unique_ptr<NativeControl> first_view(std::shared_ptr<SharedGroup> group);
  // Some processes of the group's view `epoch`, ranked in the order given
  // (this process one of them): the members of an epoch when spares wait
  // in the same group (native_spare_pool.hpp). The view is named, not
  // taken as the group's current one, which may have changed meanwhile
  // (this control then fails at its first call, as it should).
  NativeControl(std::shared_ptr<SharedGroup> group, std::vector<MemberId> members, std::uint64_t epoch);

  const std::shared_ptr<SharedGroup>& group() const { return group_; }
  std::uint64_t epoch() const { return epoch_; }  // the view

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  std::vector<int> world_ranks() const override { return {members_.begin(), members_.end()}; }
  const char* backend() const override { return "the native membership"; }
  bool uniform_outcomes() const override { return false; }
  void watch() override { watching_ = true; }
  void unwatch() override { watching_ = false; }
  bool failure_noticed() override { return watching_ && group_->changing_since(epoch_); }
  void revoke() override;
  bool revoked() override { return group_->changing_since(epoch_); }
  bool agree(int& flag, bool sleeping) override;
  bool allgather(const void* mine, std::size_t bytes, void* all) override;
  bool exchange(const std::vector<int>& peers, const std::vector<std::byte>& mine,
                std::vector<std::vector<std::byte>>& theirs) override;
  bool barrier() override;
  std::optional<Shrunk> shrink(std::string& error) override;
  // Not yet: the view's all-gathers are numbered per view, the same count
  // on every process of it, which a subset's own would break.
  std::unique_ptr<Control> subset(const SubsetSpec& spec, std::string& error) override;
  const char* subsets_unsupported() const override;
  std::optional<int> node_key() override;
  std::vector<int> known_failed() override { return {}; }

 private:
  std::shared_ptr<SharedGroup> group_;
  std::uint64_t epoch_;
  std::vector<MemberId> members_;  // in rank order
  int rank_ = 0;
  bool watching_ = false;
};

// The first view of a job whose processes are the ranks of `world` (an MPI
// job started by srun: MPI serves the start-up only): each process opens
// its control network, one MPI_Allgather tells everyone the others'
// addresses, nodes and pids, and MPI is not used again. Member id = world
// rank. `interface`: RINGMEND_CONTROL_INTERFACE (bootstrap.hpp). Throws
// std::runtime_error.
std::shared_ptr<SharedGroup> start_over_mpi(MPI_Comm world, const GroupSettings& settings,
                                            const std::string& interface);

}  // namespace ringmend::membership::native
