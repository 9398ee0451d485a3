// The one way a membership epoch is made, from a transition, in named steps:
//
//   1. exchange   every member tells the others who and where it is, and
//                 where its collectives stand (MemberInfo, one allgather);
//                 ids are kept, joiners get new ones; which ranks share a
//                 node comes from MPI at Start and Grow, and from the
//                 previous epoch at a Shrink
//   2. plan       the topology plan (topo/), computed alike everywhere, and
//                 the algorithms' view of it (coll::Layout)
//   3. fabric     the channels this rank's algorithms need (transport/
//                 fabric.hpp): the node's shared memory, UCX endpoints to
//                 the remote peers only, addresses fetched from those peers
//   4. agreement  a fault-tolerant agreement: every member goes on with this
//                 epoch, or every member learns that it failed
//
// The same steps serve every transition: the first epoch (Start), the
// survivors of a failure (Shrink) and an epoch that admits joiners (Grow).
// A failure at any step, start-up included, returns an epoch that is not
// ready; the caller shrinks its control communicator and builds again.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "membership/epoch.hpp"
#include "ringmend/core/options.hpp"
#include "topo/location.hpp"
#include "transport/ucx_channel.hpp"

namespace ringmend::membership {

// The first epoch: the members' control group, made by the caller with
// the backend of the job (UlfmControl::first_members: the live processes of
// MPI_COMM_WORLD; the spare pool's first members; the native membership's
// first view).
struct Start {
  std::unique_ptr<Control> members;
};
// The survivors of a failure (or the members that stay after a release):
// `lost` names every member of the previous epoch that is gone (over all
// the attempts since it), `survivors` is the others' control group, in the
// previous epoch's order (Control::shrink makes it). Their placement is
// known from the previous epoch: a Shrink creates no communicator of its
// own.
struct Shrink {
  std::vector<MemberId> lost;
  std::unique_ptr<Control> survivors;
};
// The members of `from` and `joiners` new processes, in one control group
// `grown` (made by whatever admitted them: spares, a spawn, a connect). The
// joiners call build() with no previous epoch. A pre-launched spare keeps
// its world rank as member id (no member has it: the job's processes are
// numbered alike); any other joiner gets a new id.
struct Grow {
  int joiners = 0;
  std::unique_ptr<Control> grown;
  bool spare = false;  // set by a joiner that is one of the world's spares
  // The rank the application sees of each rank of `grown` (ascending when
  // empty or when `grown` is in that order already).
  std::vector<int> positions;
  // The exchange, when whatever admitted the joiners made it already, over
  // `grown`, from each process's identify() (the spare pool's roster):
  // the build skips its own. Empty: the build makes it.
  std::vector<MemberInfo> infos;
};
using Transition = std::variant<Start, Shrink, Grow>;

enum class BuildStep { Exchange, Plan, Fabric, Agreement };
const char* name_of(BuildStep step);

// The node segments of an epoch whose node leader is process `pid` are
// named /dev/shm/<segment_prefix(pid)>... (ringmend-rank removes the names
// of a rank that died with the same prefix).
std::string segment_prefix(int pid);

class EpochBuilder {
 public:
  // `world_rank` and `world_size`: this process's number in the job and the
  // job's processes at launch (the first members' ids, and the first id of
  // a joiner); `where` this process's placement, read once.
  EpochBuilder(const Settings& settings, transport::UcxContext& ucx, int world_rank, int world_size,
               const topo::Location& where);

  // Called after each step, on every member (fault injection, timing).
  std::function<void(BuildStep, const Epoch&)> after_step;

  // Work done over the new epoch's channels before its agreement, so that
  // the agreement covers it too (a Grow: the state sent to the joiners; one
  // agreement fewer, which across nodes costs tens of milliseconds). It
  // throws transport::Interrupted or Mismatch when it fails, and returns
  // whether this rank took part (one that did not sleeps in the agreement
  // on a machine with fewer CPUs than ranks). The epoch's failure monitor
  // is armed by then.
  using BeforeAgreement = std::function<bool(Epoch&)>;

  // What this process tells the others in a build's exchange: `mine` (its
  // collective state) with its identity and placement. `from` is its
  // previous epoch (null at Start and for a joiner); `joining`: it joins in
  // a Grow, `spare`: as one of the world's spares. Public for a Grow whose
  // exchange is gathered before the build (Grow::infos); that needs the
  // node's host (set_host): the node key is left to the build.
  MemberInfo identify(const Epoch* from, MemberInfo mine, bool joining, bool spare) const;

  // Builds the epoch that follows `from` (null at Start and for a joiner)
  // by `transition`. `mine` carries this member's collective state (seq,
  // finalizing, an input error); the builder fills in its identity.
  std::unique_ptr<Epoch> build(const Epoch* from, Transition transition, MemberInfo mine,
                               const BeforeAgreement& before_agreement = {});

  // Where the last build's time went, step by step (for logs).
  const std::string& laps() const { return laps_; }

  // The world rank of the first process on this process's node, known to
  // every process of the job (SparePool::host). With it, an epoch finds
  // which ranks share a node from its exchange alone, without making a
  // node communicator (a context id agreed by every rank: across nodes it
  // cost as much as the rest of a Grow). Every process of a build must
  // have it, or none.
  void set_host(int host) { host_ = host; }

 private:
  static std::unique_ptr<Control> take_control(Transition& transition, const std::vector<MemberId>*& lost);
  // `joining`: a Grow's joiner; `spare`: one of the world's spares;
  // `gathered`: the exchange made already (Grow::infos, taken), or null.
  bool exchange(Epoch& e, const Epoch* from, MemberInfo mine, bool start, bool joining, bool spare,
                const std::vector<MemberId>* lost, std::vector<MemberInfo>* gathered);
  // Epoch::ranked: as `from` less the `lost` after a Shrink, else by the
  // Grow's `positions`, else the epoch's own order.
  static void rank_for_application(Epoch& e, const Epoch* from, const std::vector<MemberId>* lost,
                                   const std::vector<int>* positions);
  void plan(Epoch& e, bool allow_shm);
  // `shrunk_from`: the epoch a Shrink comes from (its node rings are
  // reused), else null.
  bool connect(Epoch& e, const Epoch* shrunk_from, std::string& shm_error);
  void step_done(BuildStep step, const Epoch& e);

  const Settings& settings_;
  transport::UcxContext& ucx_;
  int world_rank_ = 0, world_size_ = 0;
  topo::Location where_;
  std::string laps_;
  double lap_start_ = 0;
  int host_ = -1;
  // A build with work before its agreement cannot fall back to UCX inside
  // a node that lacks shared memory (that needs a second agreement): it
  // fails, and this process's later builds plan without shared memory, as
  // do those of everyone it builds with (MemberInfo::no_shm).
  bool no_shm_ = false;
};

}  // namespace ringmend::membership
