#include "runtime/subgroup.hpp"

#include <signal.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
#include <utility>

#include "coll/selector.hpp"
#include "ringmend/core/log.hpp"
#include "ringmend/core/progress_record.hpp"
#include "transport/peer_watch.hpp"

namespace ringmend {
namespace {

// The same on every member of the subgroup, different for each subgroup of
// the same members this process made before: names its control groups'
// messages (with the world epoch each is built over).
std::uint64_t identity_of(const std::vector<membership::MemberId>& members, int made_before) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over the ids, then the count
  for (membership::MemberId id : members) h = (h ^ static_cast<std::uint32_t>(id)) * 1099511628211ULL;
  return (h ^ static_cast<std::uint64_t>(made_before)) * 1099511628211ULL;
}

bool same_node(const membership::MemberInfo& m, const membership::MemberInfo& me) {
  return m.machine == me.machine && std::strncmp(m.node, me.node, sizeof m.node) == 0;
}

// The ranks of `e` among `ranks` known to be dead: those its control group
// reports failed (ULFM, once it has heard), and the node mates whose pidfd
// or /proc shows their death (at once).
std::vector<int> dead_among(membership::Epoch& e, const std::vector<int>& ranks) {
  (void)e.failure_noticed();  // drives MPI's progress: how ULFM hears of a remote death
  std::vector<int> dead;
  for (int r : e.ctrl->known_failed())
    if (std::find(ranks.begin(), ranks.end(), r) != ranks.end()) dead.push_back(r);
  const membership::MemberInfo& me = e.infos.at(static_cast<std::size_t>(e.rank));
  std::vector<pid_t> pids;
  std::vector<int> rank_of_pid;
  for (int r : ranks) {
    const membership::MemberInfo& m = e.infos.at(static_cast<std::size_t>(r));
    if (r == e.rank || !same_node(m, me)) continue;
    pids.push_back(m.pid);
    rank_of_pid.push_back(r);
  }
  const transport::PeerWatch mates(pids);
  for (std::size_t i = 0; i < pids.size(); ++i)
    if (mates.has_exited(static_cast<int>(i)) || (::kill(pids[i], 0) != 0 && errno == ESRCH))
      dead.push_back(rank_of_pid[i]);
  std::sort(dead.begin(), dead.end());
  dead.erase(std::unique(dead.begin(), dead.end()), dead.end());
  return dead;
}

// "2, 5": member ids, for errors.
std::string listed(const std::vector<membership::MemberId>& ids) {
  std::string text;
  for (membership::MemberId id : ids) text += (text.empty() ? "" : ", ") + std::to_string(id);
  return text;
}

// The member ids of ranks `ranks` of `e`, listed.
std::string ids_of(const membership::Epoch& e, const std::vector<int>& ranks) {
  std::vector<membership::MemberId> ids;
  for (int r : ranks) ids.push_back(e.members.at(static_cast<std::size_t>(r)));
  return listed(ids);
}

}  // namespace

Subgroup::Subgroup(Communicator::Impl& world, std::weak_ptr<void> world_alive,
                   std::vector<membership::MemberId> members, std::string name)
    : world_(world),
      world_alive_(std::move(world_alive)),
      members_(std::move(members)),
      name_(std::move(name)) {
  const membership::MemberId me = world_.epoch().my_id();
  rank_ = static_cast<int>(std::find(members_.begin(), members_.end(), me) - members_.begin());
  identity_ = identity_of(members_, world_.subgroups_made[members_]++);
  judged_on_ = world_.epoch().number;
  // The membership the application saw at its last world call, not the
  // epoch: a loss recovered since (from inside another subgroup's call)
  // is announced at the next world call, on every member in the same one,
  // and a subgroup made before that call ends at the loss on every member
  // alike, whether this one made it before or after the recovery.
  world_seen_ = world_.view().members;
}

Subgroup::~Subgroup() {
  // A peer may still read this process's part of the last call (its node
  // segment, its UCX endpoints): the world's end, which meets every member,
  // closes them. After the world's end nothing may be closed any more.
  if (!epoch_ || world_alive_.expired()) return;  // the world's end took it (take_epoch)
  world_.keep_until_end(std::move(epoch_));
}

std::optional<std::pair<Errc, std::string>> Subgroup::interruption(const std::string& what) const {
  // A survivor that saw a node mate die (its pidfd, before ULFM knows)
  // revokes the subgroup at once: the others may hear of the revocation
  // before the death. A moment for the death to show, before the call
  // counts as ended by a rank that refused it. A death elsewhere in the
  // world also cuts a subgroup's build or call short (the world's
  // communicator, which the subgroup's control group talks on, is revoked
  // by its recovery): that is no refusal, and the caller joins the
  // recovery (nullopt).
  if (!epoch_) return std::pair{Errc::MemberLost, name_ + ": " + what};
  std::vector<int> others;
  for (int r = 0; r < epoch_->size; ++r)
    if (r != epoch_->rank) others.push_back(r);
  const membership::MemberInfo& me = epoch_->infos.at(static_cast<std::size_t>(epoch_->rank));
  // Where every other member is a node mate, a death shows within a
  // fraction of a millisecond of the kill (transport/peer_watch.hpp): 20 ms
  // are plenty; ULFM may take a second to hear of a remote one.
  const bool all_mates = std::all_of(others.begin(), others.end(), [&](int r) {
    return same_node(epoch_->infos.at(static_cast<std::size_t>(r)), me);
  });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(all_mates ? 20 : 1500);
  membership::Epoch& world = world_.epoch();
  std::vector<int> world_ranks;
  for (int r = 0; r < world.size; ++r)
    if (r != world.rank) world_ranks.push_back(r);
  std::vector<int> failed;
  for (;;) {
    failed = dead_among(*epoch_, others);
    if (!failed.empty()) break;
    if (world.failure_noticed() || !dead_among(world, world_ranks).empty()) return std::nullopt;
    if (std::chrono::steady_clock::now() > give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (failed.empty())
    return std::pair{Errc::InvalidArgument,
                     name_ + ": call #" + std::to_string(seq_) +
                         " ended: another rank of the subgroup ended it (its error says "
                         "why: bad input, a mismatch or a time limit) [" +
                         what + "]"};
  return std::pair{Errc::MemberLost, name_ + ": member " + ids_of(*epoch_, failed) + " failed during call #" +
                                         std::to_string(seq_) + "; " + remedy()};
}

std::string Subgroup::remedy() const {
  if (world_.settings().subgroup_recovery == SubgroupRecovery::Step)
    return "every subgroup ends at a loss in the world (RINGMEND_SUBGROUP_RECOVERY=step): make the "
           "subgroups again and run the step again";
  return "subgroups do not recover yet (docs/subgroups.md): the world communicator recovers at its next "
         "call; split it again";
}

void Subgroup::end_if_world_lost_a_member(const membership::Epoch& world) {
  if (world_.settings().subgroup_recovery != SubgroupRecovery::Step) return;
  // Members never come back: one missing now was lost (or released) in a
  // world epoch since, and every member of the world sees the same epochs.
  std::vector<membership::MemberId> lost;
  for (membership::MemberId id : world_seen_)
    if (!world.contains(id)) lost.push_back(id);
  world_seen_ = world.members;
  if (!lost.empty())
    end(Errc::MemberLost,
        name_ + ": ended by the loss of member " + listed(lost) + " in the world; " + remedy());
}

void Subgroup::end(Errc code, const std::string& why) {
  if (ended_.empty()) {
    ended_ = why;
    ended_code_ = code;
  }
  if (epoch_) {
    epoch_->ctrl->revoke();  // the others stop waiting for this rank
    epoch_->retire();
  }
  throw Error(code, why);
}

void Subgroup::ensure_epoch() {
  membership::Epoch& world = world_.epoch();
  if (epoch_ && built_on_ == world.number) return;
  end_if_world_lost_a_member(world);
  std::vector<int> ranks;
  std::vector<membership::MemberId> lost;
  for (membership::MemberId id : members_) {
    const auto at = std::find(world.members.begin(), world.members.end(), id);
    if (at == world.members.end())
      lost.push_back(id);
    else
      ranks.push_back(static_cast<int>(at - world.members.begin()));
  }
  if (!lost.empty())
    end(Errc::MemberLost, name_ + ": member " + listed(lost) +
                              " left the world's membership (failed or released); " + remedy());
  if (epoch_) {
    epoch_->retire();
    world_.keep_until_end(std::move(epoch_));
  }
  if (judged_on_ != world.number) judge(world);
  // A member already known dead ends the subgroup before its build waits
  // for it.
  if (const std::vector<int> dead = dead_among(world, ranks); !dead.empty()) {
    end(Errc::MemberLost, name_ + ": member " + ids_of(world, dead) + " failed; " + remedy());
  }
  membership::Control::SubsetSpec spec;
  spec.ranks = ranks;
  for (int r : ranks) {
    // Its node key in the subgroup: the subgroup rank of its first node mate.
    const int world_key = world.infos.at(static_cast<std::size_t>(r)).node_key;
    int key = 0;
    while (world.infos.at(static_cast<std::size_t>(ranks[static_cast<std::size_t>(key)])).node_key !=
           world_key)
      ++key;
    spec.node_keys.push_back(key);
  }
  spec.identity = (identity_ ^ world.number) * 1099511628211ULL;
  spec.timeout_seconds = world_.settings().timeout_seconds;
  std::string error;
  std::unique_ptr<membership::Control> ctrl = world.ctrl->subset(spec, error);
  if (!ctrl) end(Errc::MemberLost, name_ + ": its control group could not be made: " + error);
  membership::MemberInfo mine;
  mine.seq = static_cast<std::int64_t>(seq_);
  // The world's fault rules name the world's builds: not this one.
  membership::EpochBuilder& builder = world_.epoch_builder();
  auto after_step = std::exchange(builder.after_step, {});
  std::unique_ptr<membership::Epoch> built;
  try {
    built = builder.build(&world, membership::Start{std::move(ctrl)}, mine);
  } catch (...) {
    builder.after_step = std::move(after_step);
    throw;
  }
  builder.after_step = std::move(after_step);
  epoch_ = std::move(built);
  built_on_ = world.number;
  if (!epoch_->ready) {
    // The world's recovery under way revokes the communicator the build
    // talks on: the caller joins that recovery and builds again.
    if (world_.epoch().failure_noticed()) throw transport::Interrupted(name_ + ": the world is recovering");
    const auto why = interruption("its epoch could not be built");
    if (!why) throw transport::Interrupted(name_ + ": the world is recovering");
    end(why->first, why->second);
  }
  log(LogLevel::Debug, name_ + ": epoch over world epoch " + std::to_string(built_on_) + ", " +
                           std::to_string(size()) + " ranks (" + builder.laps() + ")");
}

void Subgroup::recover_world() {
  if (epoch_) {
    epoch_->retire();
    world_.keep_until_end(std::move(epoch_));
  }
  world_.recover_between_calls();
}

void Subgroup::judge(const membership::Epoch& world) {
  // Every survivor of the subgroup reads the same table (the world epoch's
  // exchange), so every one decides alike, at its next use of the subgroup.
  judged_on_ = world.number;
  std::int64_t least = INT64_MAX, most = -1;
  std::string unlisted, counts;
  for (membership::MemberId id : members_) {
    const auto at = std::find(world.members.begin(), world.members.end(), id);
    if (at == world.members.end()) continue;  // lost: ensure_epoch() says so
    const membership::MemberInfo& info = world.infos.at(static_cast<std::size_t>(at - world.members.begin()));
    const auto* end = info.subgroups +
                      std::max(0, std::min(info.subgroups_listed, membership::MemberInfo::kSubgroupsListed));
    const auto* mine = std::find_if(
        info.subgroups, end, [&](const membership::SubgroupProgress& p) { return p.identity == identity_; });
    if (mine == end) {
      unlisted += (unlisted.empty() ? "" : ", ") + std::to_string(id);
      continue;
    }
    least = std::min(least, mine->finished);
    most = std::max(most, mine->finished);
    counts += (counts.empty() ? "" : ", ") + std::to_string(id) + ": " + std::to_string(mine->finished);
  }
  if (!unlisted.empty())
    end(Errc::MemberLost, name_ + ": ended by the world's recovery: member " + unlisted +
                              " no longer runs it (it ended there, or it is one of more than " +
                              std::to_string(membership::MemberInfo::kSubgroupsListed) +
                              " subgroups of that process); split the world communicator again");
  if (least != most)
    end(Errc::MemberLost,
        name_ + ": ended by the world's recovery: some members had finished call #" + std::to_string(most) +
            " while others had not (calls finished by member " + counts +
            "), and subgroups do not hand a finished call's result over yet (docs/subgroups.md); split the "
            "world communicator again");
}

void Subgroup::check() {
  // A recovery of the world needs every survivor, this one too: its waits
  // give way to it, and the call goes on after it (call()).
  if (world_.epoch().failure_noticed()) throw transport::Interrupted(name_ + ": the world is recovering");
  if (epoch_->failure_noticed())
    throw transport::Interrupted(name_ + ": a member failed or the subgroup was ended");
  const std::uint64_t now = progress::monotonic_ns();
  world_.hang_detector().progressing(now);
  const double limit = world_.settings().timeout_seconds;
  if (limit <= 0) return;
  if (deadline_ns_ == 0) {
    deadline_ns_ = now + static_cast<std::uint64_t>(limit * 1e9);
  } else if (now > deadline_ns_) {
    throw Error(Errc::Timeout, name_ + ": call #" + std::to_string(seq_) + " did not complete within " +
                                   std::to_string(limit) +
                                   " s (RINGMEND_TIMEOUT); is every rank calling it?");
  }
}

CollectiveResult Subgroup::call(const CollectiveCall& c) {
  if (!ended_.empty()) throw Error(ended_code_, ended_);
  ++seq_;
  const ScopedFlag in_call(in_call_);
  std::string bad = validate_call(c, rank_, size());
  if (bad.empty() && c.kind == coll::CollectiveKind::Allreduce &&
      (c.memory == MemoryKind::Cuda ||
       (c.count > 0 && (is_gpu_pointer(c.input) || is_gpu_pointer(c.output)))))
    bad = name_ + ": GPU buffers are not taken on subgroups yet (the world communicator takes them)";
  // A recovery of the world interrupts the call: this process takes part in
  // it, then the subgroup judges whether it can go on (judge()) and runs
  // the call again over its new epoch; its inputs are intact (the
  // algorithms only read them).
  bool ran_again = false;
  for (;; ran_again = true) {  // each `continue` runs it again
    deadline_ns_ = 0;
    try {
      ensure_epoch();
    } catch (const transport::Interrupted&) {
      recover_world();
      continue;
    }
    // Bad input ends the subgroup on every rank: this one revokes it, and the
    // others, waiting for its part, are interrupted (interruption() words it).
    if (!bad.empty()) end(Errc::InvalidArgument, name_ + ": " + bad);
    try {
      execute(c);
      break;
    } catch (const transport::Interrupted& e) {
      if (world_.epoch().failure_noticed()) {
        recover_world();
        continue;
      }
      // A death in the world outside the subgroup, not yet noticed as a
      // failure of the world, is one too (interruption() says so).
      const auto why = interruption(e.what());
      if (!why) {
        recover_world();
        continue;
      }
      end(why->first, why->second);
    } catch (const transport::Mismatch& e) {
      end(Errc::Mismatch, name_ + ": " + e.what());
    } catch (const Error& e) {
      end(e.code(), e.what());
    }
  }
  world_.ucx_in_use();
  CollectiveResult result;
  result.contributors = size();
  result.epoch = built_on_;
  result.recovered = ran_again;
  return result;
}

void Subgroup::execute(const CollectiveCall& c) {
  const membership::Epoch& e = *epoch_;
  const coll::Tuning tuning = world_.tuning();
  const std::size_t bytes = c.bytes();
  if (c.no_op()) return;  // nothing to send: every rank returns at once
  coll::Call call;
  call.kind = c.kind;
  // Channel ranks are the subgroup's ranks: blocks go to slot r (null slots).
  const auto run = [&](const coll::Call& what, std::size_t size_bytes) {
    coll::select(what.kind, size_bytes, e.layout, tuning).run(what, e.channels(), e.layout, tuning, *this);
  };
  switch (c.kind) {
    case coll::CollectiveKind::Allreduce: {
      // The algorithms never write their input: in place, the result goes
      // through a buffer of the subgroup's.
      const bool in_place = c.input == c.output;
      if (in_place && scratch_.size() < bytes) scratch_.resize(bytes);
      call.allreduce = {c.input, in_place ? scratch_.data() : c.output, c.count, c.type, c.op, seq_};
      // Where it can (one node, large messages), the call finishes on every
      // member or on none: a recovery of the world that interrupts it then
      // finds the members even, and the subgroup goes on (judge()).
      call.allreduce.finish_together =
          coll::select(call.kind, bytes, e.layout, tuning).finishes_together(e.layout, e.channels());
      run(call, bytes);
      if (in_place) std::memcpy(c.output, scratch_.data(), bytes);
      return;
    }
    case coll::CollectiveKind::Broadcast:
      call.broadcast = {c.output, bytes, c.root, seq_};
      run(call, bytes);
      return;
    case coll::CollectiveKind::Allgather: {
      const std::size_t total = c.result_bytes(e.size);
      // The input may lie inside the output: then gathered aside.
      const bool aside = overlaps(c.input, bytes, c.output, total);
      if (aside && scratch_.size() < total) scratch_.resize(total);
      void* out = aside ? scratch_.data() : c.output;
      call.allgather = {c.input, out, c.count, c.type, seq_, nullptr};
      run(call, bytes);
      if (aside) std::memcpy(c.output, out, total);
      return;
    }
    case coll::CollectiveKind::ReduceScatter: {
      const std::size_t work = bytes * static_cast<std::size_t>(e.size);
      if (scratch_.size() < work) scratch_.resize(work);
      call.reduce_scatter = {c.input, c.output, c.count, c.type, c.op, seq_, nullptr, scratch_.data()};
      run(call, bytes);
      return;
    }
    case coll::CollectiveKind::AllgatherV:
    case coll::CollectiveKind::Alltoall: {
      // Counts lie end to end; an uneven allgather in place is the input at
      // its own block, which no other block overwrites.
      const std::vector<std::size_t> offsets = offsets_of(c.counts), recv_offsets = offsets_of(c.recv_counts);
      run(counted_call(c, seq_, nullptr, offsets, recv_offsets), bytes);
      return;
    }
  }
}

}  // namespace ringmend

// ----------------------------------------------- the Communicator's calls

namespace ringmend {

std::unique_ptr<Communicator> Communicator::make_subgroup(std::vector<int> members, const std::string& name) {
  Impl& world = *impl_;
  return world.serially([&] {
    if (const char* why = world.epoch().ctrl->subsets_unsupported())
      throw Error(Errc::InvalidArgument, name + ": " + why);
    auto sub = std::make_shared<Subgroup>(world, world.alive, std::move(members), name);
    std::erase_if(world.subgroups, [](const std::weak_ptr<Subgroup>& w) { return w.expired(); });
    world.subgroups.push_back(sub);
    return std::unique_ptr<Communicator>(new Communicator(world, std::move(sub)));
  });
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  world_only("split");
  // Every rank's (member id, color, key), by one collective of the world:
  // a rank that dies in it is left out of the table on every survivor.
  const std::array<std::int64_t, 3> mine{member_id(), color, key};
  std::vector<std::int64_t> table(3 * static_cast<std::size_t>(size()));
  const CollectiveResult gathered = allgather(mine.data(), 3, DataType::Int64, table.data(), table.size());
  const std::uint64_t number = impl_->splits_made++;
  if (color < 0) return nullptr;
  struct Entry {
    std::int64_t key;
    int rank;
    int id;
  };
  std::vector<Entry> same;
  for (int r = 0; r < gathered.contributors; ++r) {
    const std::int64_t* e = &table[3 * static_cast<std::size_t>(r)];
    if (e[1] == color) same.push_back({e[2], r, static_cast<int>(e[0])});
  }
  std::sort(same.begin(), same.end(),
            [](const Entry& a, const Entry& b) { return a.key != b.key ? a.key < b.key : a.rank < b.rank; });
  std::vector<int> members;
  for (const Entry& e : same) members.push_back(e.id);
  return make_subgroup(std::move(members), "subgroup (split #" + std::to_string(number) + ", color " +
                                               std::to_string(color) + ")");
}

std::unique_ptr<Communicator> Communicator::group(std::span<const int> ranks) {
  world_only("group");
  const std::vector<int> world_members = member_ids();
  std::string listed;
  for (std::size_t i = 0; i < ranks.size() && i < 16; ++i)
    listed += (i ? "," : "") + std::to_string(ranks[i]);
  if (ranks.size() > 16) listed += ",...";
  const std::string name = "subgroup (ranks " + listed + ")";
  std::vector<int> members;
  for (int r : ranks) {
    if (r < 0 || r >= static_cast<int>(world_members.size()))
      throw Error(Errc::InvalidArgument, name + ": rank " + std::to_string(r) +
                                             " is not a rank of the world (size " +
                                             std::to_string(world_members.size()) + ")");
    const int id = world_members[static_cast<std::size_t>(r)];
    if (std::find(members.begin(), members.end(), id) != members.end())
      throw Error(Errc::InvalidArgument, name + ": rank " + std::to_string(r) + " is listed twice");
    members.push_back(id);
  }
  if (std::find(members.begin(), members.end(), member_id()) == members.end())
    throw Error(Errc::InvalidArgument, name + ": called on rank " + std::to_string(rank()) +
                                           ", which is not listed (only the listed ranks call it)");
  return make_subgroup(std::move(members), name);
}

}  // namespace ringmend
