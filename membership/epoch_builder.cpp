#include "membership/epoch_builder.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "coll/selector.hpp"
#include "ringmend/core/error.hpp"
#include "ringmend/core/log.hpp"

namespace ringmend::membership {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The kernel's boot id identifies a machine (hashed to 64 bits); 0 when
// unreadable. Read once: every epoch needs it.
std::uint64_t machine_id() {
  static const std::uint64_t id = [] {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string text;
    std::getline(in, text);
    return text.empty() ? std::uint64_t{0} : std::hash<std::string>{}(text) | 1;
  }();
  return id;
}

}  // namespace

std::string segment_prefix(int pid) { return "ringmend-" + std::to_string(pid) + "-"; }

const char* name_of(BuildStep step) {
  switch (step) {
    case BuildStep::Exchange:
      return "exchange";
    case BuildStep::Plan:
      return "plan";
    case BuildStep::Fabric:
      return "fabric";
    case BuildStep::Agreement:
      return "agreement";
  }
  return "?";
}

EpochBuilder::EpochBuilder(const Settings& settings, transport::UcxContext& ucx, int world_rank,
                           int world_size, const topo::Location& where)
    : settings_(settings), ucx_(ucx), world_rank_(world_rank), world_size_(world_size), where_(where) {}

void EpochBuilder::step_done(BuildStep step, const Epoch& e) {
  const double t = now_seconds();
  char text[64];
  std::snprintf(text, sizeof text, "%s%s %.1f ms", laps_.empty() ? "" : ", ", name_of(step),
                (t - lap_start_) * 1e3);
  laps_ += text;
  lap_start_ = t;
  if (after_step) after_step(step, e);
}

namespace {

// The work before an epoch's agreement (a grow's state transfer); false
// when it failed here, which fails the build on every member.
bool run_before_agreement(Epoch& e, const EpochBuilder::BeforeAgreement& hook, bool& took_part) {
  try {
    took_part = hook(e);
    return true;
  } catch (const transport::Interrupted&) {
    return false;
  } catch (const transport::Mismatch&) {
    return false;
  } catch (const Error&) {  // a deadline: a failed build, not one rank gone with the others waiting
    return false;
  }
}

// RINGMEND_DEBUG=topo: the epoch's data path, from its first rank.
void print_data_path(const Epoch& e) {
  std::vector<topo::Location> where;
  for (const auto& i : e.infos) where.push_back(i.where);
  std::fprintf(stderr, "[ringmend topo] epoch %llu, %s data path\n%s",
               static_cast<unsigned long long>(e.number),
               e.layout.node_shm ? "hierarchical (shared memory + UCX rails)" : "flat UCX ring",
               topo::describe(e.plan, where, e.members).c_str());
}

}  // namespace

std::unique_ptr<Epoch> EpochBuilder::build(const Epoch* from, Transition transition, MemberInfo mine,
                                           const BeforeAgreement& before_agreement) {
  auto e = std::make_unique<Epoch>();
  laps_.clear();
  lap_start_ = now_seconds();
  const bool start = std::holds_alternative<Start>(transition);
  const std::vector<MemberId>* lost = nullptr;
  e->ctrl = take_control(transition, lost);
  Control& ctrl = *e->ctrl;
  e->rank = ctrl.rank();
  e->size = ctrl.size();

  auto* grow = std::get_if<Grow>(&transition);
  bool ok = exchange(*e, from, mine, start, grow != nullptr, grow && grow->spare, lost,
                     grow && !grow->infos.empty() ? &grow->infos : nullptr);
  if (ok) rank_for_application(*e, from, lost, grow ? &grow->positions : nullptr);
  step_done(BuildStep::Exchange, *e);
  std::string shm_error;
  bool want_shm = false;
  if (ok) {
    const bool shm_everywhere =
        std::none_of(e->infos.begin(), e->infos.end(), [](const MemberInfo& i) { return i.no_shm != 0; });
    plan(*e, settings_.shm && shm_everywhere);
    want_shm = e->layout.node_shm;
    step_done(BuildStep::Plan, *e);
    ok = connect(*e, lost ? from : nullptr, shm_error);
    step_done(BuildStep::Fabric, *e);
  }
  bool took_part = true;
  if (ok && before_agreement) {
    // Without its shared memory this rank cannot serve the work, and its
    // peers in it would wait for it: it fails the build (see no_shm_).
    ok = shm_error.empty();
    ctrl.watch();
    if (ok) ok = run_before_agreement(*e, before_agreement, took_part);
  }
  if (!ok) ctrl.revoke();  // make sure nobody waits for this rank
  // Agreement makes the outcome uniform: either every member goes on with
  // this epoch, or every member builds again. Bit 1: this rank is ready;
  // bit 2: it has the shared memory its plan asked for.
  int flag = (ok ? 1 : 0) | (want_shm && shm_error.empty() ? 2 : 0);
  bool agreed = ctrl.agree(flag, !took_part && e->oversubscribed);
  if (e->fabric) e->fabric->unlink_names();  // every local rank has attached, or given up
  if (before_agreement && agreed && want_shm && !(flag & 2)) {
    no_shm_ = true;
    if (!shm_error.empty() || e->rank == 0)
      log(LogLevel::Warn, "shared memory unavailable (" +
                              (shm_error.empty() ? std::string("on another node") : shm_error) +
                              "); the next membership uses UCX inside nodes too");
  }
  if (agreed && (flag & 1) && want_shm && !(flag & 2)) {
    // Some node could not open its shared memory: the same members, flat.
    if (!shm_error.empty() || e->rank == 0)
      log(LogLevel::Warn, "shared memory unavailable (" +
                              (shm_error.empty() ? std::string("on another node") : shm_error) +
                              "); using UCX inside nodes too");
    e->fabric.reset();
    plan(*e, false);
    ok = connect(*e, nullptr, shm_error);
    if (!ok) ctrl.revoke();
    flag = ok ? 1 : 0;
    agreed = ctrl.agree(flag);
  }
  step_done(BuildStep::Agreement, *e);
  e->ready = agreed && (flag & 1);
  if (!e->ready) return e;
  ctrl.watch();
  if (settings_.debug_topo && e->rank == 0) print_data_path(*e);
  return e;
}

// The new epoch's control group, taken from the transition (and, after a
// failure, the members lost).
std::unique_ptr<Control> EpochBuilder::take_control(Transition& transition,
                                                    const std::vector<MemberId>*& lost) {
  std::unique_ptr<Control> ctrl;
  if (auto* first = std::get_if<Start>(&transition)) {
    ctrl = std::move(first->members);
  } else if (auto* shrink = std::get_if<Shrink>(&transition)) {
    ctrl = std::move(shrink->survivors);
    lost = &shrink->lost;
  } else {
    ctrl = std::move(std::get<Grow>(transition).grown);
  }
  if (!ctrl) throw std::logic_error("epoch builder: a transition without its control group");
  return ctrl;
}

namespace {

// This rank's node key in a Shrink's communicator, from the previous epoch:
// the new rank of the first survivor placed on this rank's node. -1 when
// the survivors do not match the previous epoch less the lost members.
int node_key_after_shrink(const Epoch& from, const std::vector<MemberId>& lost, int new_size) {
  std::vector<int> new_rank(from.members.size(), -1);
  int next = 0;
  for (std::size_t r = 0; r < from.members.size(); ++r)
    if (std::find(lost.begin(), lost.end(), from.members[r]) == lost.end()) new_rank[r] = next++;
  const int mine = from.rank;
  if (next != new_size || new_rank[static_cast<std::size_t>(mine)] < 0) return -1;
  const auto node = from.infos.at(static_cast<std::size_t>(mine)).node_key;
  for (std::size_t r = 0; r < new_rank.size(); ++r)
    if (new_rank[r] >= 0 && from.infos[r].node_key == node) return new_rank[r];
  return -1;
}

// Ranks sharing a node, from the backend (for MPI: not from host names,
// which two "nodes" of one machine may share; it costs collectives among
// all ranks, so only a first epoch and a Grow pay it, and neither when the
// processes know their node's host: a job with spares, SparePool::host).
// `ranks_per_node` > 0 (a test setting): groups of that many ranks instead.
bool node_key_from_ranks(Epoch& e, MemberInfo& mine, std::size_t ranks_per_node) {
  if (ranks_per_node > 0) {
    const int k = static_cast<int>(ranks_per_node);
    mine.node_key = e.rank / k * k;
    return true;
  }
  const std::optional<int> key = e.ctrl->node_key();
  if (!key) return false;
  mine.node_key = *key;
  return true;
}

}  // namespace

MemberInfo EpochBuilder::identify(const Epoch* from, MemberInfo mine, bool joining, bool spare) const {
  const int world_rank = world_rank_, world_size = world_size_;
  // Without a previous epoch, a process is a first member (its Start, or the
  // shrink after a Start that failed) unless it joins.
  mine.id = from ? from->my_id() : joining && !spare ? kNoMember : world_rank;
  mine.next_id = from ? from->next_id : joining ? 0 : world_size;
  mine.joining = !from && joining;
  mine.epoch = from ? from->number : 0;
  mine.pid = static_cast<std::int32_t>(::getpid());
  mine.nonce = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  mine.where = where_;
  mine.machine = machine_id();
  std::snprintf(mine.node, sizeof mine.node, "%s", node_name().c_str());
  mine.host = host_;
  mine.no_shm = no_shm_ ? 1 : 0;
  return mine;
}

bool EpochBuilder::exchange(Epoch& e, const Epoch* from, MemberInfo mine, bool start, bool joining,
                            bool spare, const std::vector<MemberId>* lost,
                            std::vector<MemberInfo>* gathered) {
  if (gathered) {
    // Made with the round that admitted the joiners, over this communicator.
    if (gathered->size() != static_cast<std::size_t>(e.size) || host_ < 0)
      throw std::logic_error("epoch builder: a Grow's exchange does not match its communicator");
    e.infos = std::move(*gathered);
  } else {
    mine = identify(from, mine, joining, spare);
    // Every rank takes the same branch: all have `from` after a Shrink of
    // a ready epoch (the survivors all come from it), none at start-up.
    if (from && lost) {
      mine.node_key = node_key_after_shrink(*from, *lost, e.size);
      if (mine.node_key < 0)
        throw std::logic_error(
            "epoch builder: a Shrink's survivors are not the previous epoch less the lost");
    } else if (host_ < 0 && !node_key_from_ranks(e, mine, settings_.test_ranks_per_node)) {
      return false;
    }
    e.infos.assign(static_cast<std::size_t>(e.size), MemberInfo{});
    if (!e.ctrl->allgather(&mine, sizeof mine, e.infos.data())) return false;
  }
  if (!(from && lost) && host_ >= 0) {
    // The node key from the hosts: the first rank on the same node (one
    // pass, so that a build of thousands of ranks stays linear).
    std::unordered_map<std::int32_t, std::int32_t> first_rank_of;
    for (std::size_t r = 0; r < e.infos.size(); ++r) {
      MemberInfo& info = e.infos[r];
      if (info.host < 0)
        throw std::logic_error("epoch builder: a process without its node's host took part in a build");
      info.node_key = first_rank_of.try_emplace(info.host, static_cast<std::int32_t>(r)).first->second;
    }
  }
  // Ids: kept by members, new ones for joiners in rank order; the epoch
  // number follows the newest epoch any member comes from.
  std::uint64_t newest = 0;
  MemberId next = 0;
  for (const auto& i : e.infos) {
    newest = std::max(newest, i.epoch);
    next = std::max(next, i.next_id);
  }
  e.members.resize(static_cast<std::size_t>(e.size));
  for (std::size_t r = 0; r < e.infos.size(); ++r) {
    if (e.infos[r].id == kNoMember) e.infos[r].id = next++;
    e.members[r] = e.infos[r].id;
  }
  e.next_id = next;
  e.number = start ? 0 : newest + 1;
  return true;
}

void EpochBuilder::rank_for_application(Epoch& e, const Epoch* from, const std::vector<MemberId>* lost,
                                        const std::vector<int>* positions) {
  if (from && lost) {
    // A Shrink keeps the order the application saw, less the lost.
    e.ranked.clear();
    for (MemberId id : from->ranked)
      if (std::find(lost->begin(), lost->end(), id) == lost->end()) e.ranked.push_back(id);
    return;
  }
  e.ranked = e.members;
  if (!positions || positions->empty()) return;
  if (positions->size() != e.members.size())
    throw std::logic_error("epoch builder: a Grow's positions do not match its communicator");
  std::vector<int> by_position(e.members.size());
  std::iota(by_position.begin(), by_position.end(), 0);
  std::sort(by_position.begin(), by_position.end(), [&](int a, int b) {
    return (*positions)[static_cast<std::size_t>(a)] < (*positions)[static_cast<std::size_t>(b)];
  });
  for (std::size_t i = 0; i < by_position.size(); ++i)
    e.ranked[i] = e.members[static_cast<std::size_t>(by_position[i])];
}

void EpochBuilder::plan(Epoch& e, bool allow_shm) {
  std::vector<int> node_of(static_cast<std::size_t>(e.size));
  std::vector<topo::Location> where(static_cast<std::size_t>(e.size));
  for (std::size_t i = 0; i < node_of.size(); ++i) {
    node_of[i] = e.infos[i].node_key;
    where[i] = e.infos[i].where;
  }
  e.plan = topo::make_plan(node_of, where, e.rank);
  std::vector<int> everyone(static_cast<std::size_t>(e.size));
  std::iota(everyone.begin(), everyone.end(), 0);
  e.oversubscribed = e.crowd_this_machine(everyone);

  coll::Layout& l = e.layout;
  l = {};
  l.ring = e.plan.ring;
  const bool some_node_shared = std::any_of(e.plan.nodes.begin(), e.plan.nodes.end(),
                                            [](const std::vector<int>& n) { return n.size() > 1; });
  l.node_shm = allow_shm && some_node_shared;
  if (!l.node_shm) return;
  l.local_ranks = e.plan.nodes[static_cast<std::size_t>(e.plan.node)];
  for (std::size_t i = 0; i < e.plan.nodes.size(); ++i)
    l.leaders.push_back(e.plan.leader(static_cast<int>(i)));
  if (e.plan.rail >= 0) l.rail_ring = e.plan.rails[static_cast<std::size_t>(e.plan.rail)];
  l.rails = static_cast<int>(e.plan.rails.size());
}

namespace {

// For each rank of `local_ranks` (this epoch's communicator ranks on this
// node), its local rank in `from`'s node; empty when `from` has no
// point-to-point channel here or one of them was not on this node then.
std::vector<int> previous_local_ranks(const Epoch& e, const std::vector<int>& local_ranks,
                                      const Epoch& from) {
  if (!from.fabric || !from.fabric->p2p() || !from.layout.node_shm) return {};
  std::vector<int> before;
  for (int r : local_ranks) {
    const MemberId id = e.members[static_cast<std::size_t>(r)];
    const auto was = std::find(from.members.begin(), from.members.end(), id);
    if (was == from.members.end()) return {};
    const int old_rank = static_cast<int>(was - from.members.begin());
    const auto& old_local = from.layout.local_ranks;
    const auto at = std::find(old_local.begin(), old_local.end(), old_rank);
    if (at == old_local.end()) return {};
    before.push_back(static_cast<int>(at - old_local.begin()));
  }
  return before;
}

}  // namespace

bool EpochBuilder::connect(Epoch& e, const Epoch* shrunk_from, std::string& shm_error) {
  transport::FabricSpec spec;
  spec.rank = e.rank;
  spec.size = e.size;
  spec.epoch = static_cast<std::uint32_t>(e.number + 1);
  spec.peers = coll::peers_needed(e.layout, e.rank);
  // The state goes from a survivor to each joiner directly.
  const std::vector<int> receivers = e.state_receivers_of(e.rank);
  spec.peers.insert(spec.peers.end(), receivers.begin(), receivers.end());
  if (const int source = e.state_source_of(e.rank); source >= 0) spec.peers.push_back(source);
  std::sort(spec.peers.begin(), spec.peers.end());
  spec.peers.erase(std::unique(spec.peers.begin(), spec.peers.end()), spec.peers.end());
  spec.node_shm = e.layout.node_shm;
  if (spec.node_shm) {
    spec.local_ranks = e.layout.local_ranks;
    for (int r : spec.local_ranks) spec.local_pids.push_back(e.infos[static_cast<std::size_t>(r)].pid);
    const MemberInfo& leader = e.infos[static_cast<std::size_t>(spec.local_ranks.front())];
    char name[64];
    std::snprintf(name, sizeof name, "%016llx-e%llu", static_cast<unsigned long long>(leader.nonce),
                  static_cast<unsigned long long>(e.number));
    // append(), not "/" + ...: GCC 12 at -O3 reports a false -Wrestrict on the latter.
    spec.segment_name = std::string("/").append(segment_prefix(leader.pid)).append(name);
    const int local = static_cast<int>(spec.local_ranks.size());
    spec.node_layout = transport::ShmLayout::make(local, settings_.shm_buffer_bytes, settings_.small_bytes);
    spec.p2p_layout =
        transport::ShmChannelLayout::make(local, settings_.shm_p2p_slot_bytes, settings_.shm_p2p_slots);
    if (shrunk_from) {
      spec.previous_local = previous_local_ranks(e, spec.local_ranks, *shrunk_from);
      if (!spec.previous_local.empty()) spec.previous_p2p = shrunk_from->fabric->p2p();
    }
  }
  e.fabric = std::make_unique<transport::Fabric>(ucx_, std::move(spec));
  shm_error = e.fabric->open_node();
  // Peers are exchanged with whatever the node's memory gave: the epoch is
  // built again without shared memory if any rank lacks it.
  const std::vector<int>& remote = e.fabric->remote_peers();
  std::vector<std::vector<std::byte>> addresses;
  if (!e.ctrl->exchange(remote, e.fabric->local_address(), addresses)) return false;
  if (!shm_error.empty()) return true;  // connected to nobody: the agreement sends everyone round again
  e.fabric->connect(addresses);
  return true;
}

}  // namespace ringmend::membership
