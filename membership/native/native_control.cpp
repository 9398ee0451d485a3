#include "membership/native/native_control.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>

#include "ringmend/core/error.hpp"
#include "ringmend/core/log.hpp"

namespace ringmend::membership::native {

// ---------------------------------------------------------------- SharedGroup

SharedGroup::SharedGroup(std::unique_ptr<Group> group, double wait_seconds)
    : group_(std::move(group)),
      wait_seconds_(wait_seconds),
      first_epoch_(group_->epoch()),
      first_members_(group_->members()),
      epoch_(group_->epoch()) {
  thread_ = std::thread([this] { turn(); });
}

SharedGroup::~SharedGroup() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void SharedGroup::turn() {
  // Heartbeats go out every quarter of the timeout; a turn every 5 ms also
  // answers a peer's view change while the application computes, and costs
  // a poll() each.
  while (!stop_) {
    {
      std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
      if (lock) turn_locked();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void SharedGroup::turn_locked() {
  group_->progress(0);
  changing_ = group_->changing();
  epoch_ = group_->epoch();
}

bool SharedGroup::changing_since(std::uint64_t epoch) {
  // The data path asks between every two chunks it moves: a turn of the
  // group (a poll() over its sockets and pidfds, its timers) at most every
  // millisecond, the last known state otherwise. Every 100 us cost a 1 MiB
  // allreduce across 3 nodes 10-25 % (3 ranks on 2 cores); a death is
  // still noticed within a millisecond of its notice's arrival.
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  if (now - last_turn_ >= kTurnEveryNs) {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (lock) {
      last_turn_ = now;
      turn_locked();
    }
  }
  return epoch_ != epoch || changing_;
}

void SharedGroup::leave() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  group_->leave();
}

// ---------------------------------------------------------------- NativeControl

std::unique_ptr<NativeControl> NativeControl::first_view(std::shared_ptr<SharedGroup> group) {
  const std::uint64_t epoch = group->first_epoch();
  std::vector<MemberId> members = group->first_members();
  return std::make_unique<NativeControl>(std::move(group), std::move(members), epoch);
}

NativeControl::NativeControl(std::shared_ptr<SharedGroup> group, std::vector<MemberId> members,
                             std::uint64_t epoch)
    : group_(std::move(group)), epoch_(epoch), members_(std::move(members)) {
  const MemberId self = group_->with([](Group& g) { return g.self(); });
  const auto me = std::find(members_.begin(), members_.end(), self);
  if (me == members_.end())
    throw std::logic_error("a native control group without the process that makes it");
  rank_ = static_cast<int>(me - members_.begin());
}

void NativeControl::revoke() {
  group_->with([&](Group& g) {
    if (g.epoch() == epoch_ && !g.changing()) g.request_change();
  });
}

bool NativeControl::allgather(const void* mine, std::size_t bytes, void* all) {
  return group_->with([&](Group& g) {
    if (g.epoch() != epoch_) return false;
    auto got = g.allgather_among(members_, std::string(static_cast<const char*>(mine), bytes),
                                 group_->wait_seconds());
    if (!got) return false;
    for (std::size_t r = 0; r < got->size(); ++r) {
      if ((*got)[r].size() != bytes) return false;  // not the same call on every member
      std::memcpy(static_cast<char*>(all) + r * bytes, (*got)[r].data(), bytes);
    }
    return true;
  });
}

bool NativeControl::agree(int& flag, bool /*sleeping: the group's waits sleep in poll()*/) {
  std::vector<int> flags(members_.size());
  if (!allgather(&flag, sizeof flag, flags.data())) return false;
  for (int f : flags) flag &= f;
  return true;
}

bool NativeControl::barrier() {
  int flag = 1;
  return agree(flag, true);
}

bool NativeControl::exchange(const std::vector<int>& peers, const std::vector<std::byte>& mine,
                             std::vector<std::vector<std::byte>>& theirs) {
  return group_->with([&](Group& g) {
    if (g.epoch() != epoch_) return false;
    std::vector<MemberId> ids;
    for (int r : peers) ids.push_back(members_.at(static_cast<std::size_t>(r)));
    auto got = g.exchange(ids, std::string(reinterpret_cast<const char*>(mine.data()), mine.size()),
                          group_->wait_seconds());
    if (!got) return false;
    theirs.assign(peers.size(), {});
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::string& bytes = got->at(ids[i]);
      theirs[i].resize(bytes.size());
      std::memcpy(theirs[i].data(), bytes.data(), bytes.size());
    }
    return true;
  });
}

std::optional<Control::Shrunk> NativeControl::shrink(std::string& /*error*/) {
  try {
    group_->with([&](Group& g) {
      if (g.epoch() != epoch_) return;  // another control of this process changed the view already
      if (!g.changing()) g.request_change();
      const Group::Change change = g.recover();
      log(LogLevel::Debug, "native membership: view " + std::to_string(change.epoch) + " after " +
                               seconds_text(change.seconds));
    });
  } catch (const MembershipError& e) {
    throw Error(Errc::Internal, e.what());
  }
  // The survivors keep their order.
  std::vector<MemberId> view;
  std::uint64_t epoch = 0;
  group_->with([&](Group& g) {
    view = g.members();
    epoch = g.epoch();
  });
  Shrunk out;
  std::vector<MemberId> survivors;
  for (std::size_t r = 0; r < members_.size(); ++r) {
    if (std::binary_search(view.begin(), view.end(), members_[r]))
      survivors.push_back(members_[r]);
    else
      out.lost.push_back(static_cast<int>(r));
  }
  out.survivors = std::make_unique<NativeControl>(group_, std::move(survivors), epoch);
  return out;
}

std::unique_ptr<Control> NativeControl::subset(const SubsetSpec& /*spec*/, std::string& error) {
  error = subsets_unsupported();
  return nullptr;
}

const char* NativeControl::subsets_unsupported() const {
  return "subgroups are not supported under the native membership yet (a job under plain srun); "
         "launch with mpirun (ringmend-run) for subgroups";
}

std::optional<int> NativeControl::node_key() {
  return group_->with([&](Group& g) -> std::optional<int> {
    const std::string& mine = g.record(members_.at(static_cast<std::size_t>(rank_))).node;
    for (std::size_t r = 0; r < members_.size(); ++r)
      if (g.record(members_[r]).node == mine) return static_cast<int>(r);
    return std::nullopt;
  });
}

// ---------------------------------------------------------------- start-up

namespace {

// One process's record as MPI carries it: fixed size.
struct RecordText {
  char text[256] = {};
};

}  // namespace

std::shared_ptr<SharedGroup> start_over_mpi(MPI_Comm world, const GroupSettings& settings,
                                            const std::string& interface) {
  int rank = 0, size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  // Rank 0's random key names the job on every control connection.
  const std::uint64_t key =
      (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  auto net = std::make_unique<ControlNet>(key, rank, control_ip(interface));
  RecordText mine;
  std::snprintf(mine.text, sizeof mine.text, "%s %s %d %llu", net->address().c_str(), node_name().c_str(),
                static_cast<int>(::getpid()), static_cast<unsigned long long>(key));
  std::vector<RecordText> all(static_cast<std::size_t>(size));
  if (MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, world) != MPI_SUCCESS)
    throw std::runtime_error("native membership start-up: MPI_Allgather of the control addresses failed");
  std::vector<PeerRecord> view;
  std::uint64_t job_key = 0;
  for (int r = 0; r < size; ++r) {
    char address[128] = {}, node[96] = {};
    int pid = 0;
    unsigned long long their_key = 0;
    if (std::sscanf(all[static_cast<std::size_t>(r)].text, "%127s %95s %d %llu", address, node, &pid,
                    &their_key) != 4)
      throw std::runtime_error("native membership start-up: rank " + std::to_string(r) +
                               " sent no usable record");
    if (r == 0) job_key = their_key;
    view.push_back({r, address, node, pid});
  }
  net->set_job_key(job_key);
  auto group = std::make_unique<Group>(std::move(net), std::move(view), settings);
  return std::make_shared<SharedGroup>(std::move(group), settings.recovery_timeout);
}

}  // namespace ringmend::membership::native
