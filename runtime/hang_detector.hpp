// The hang detector (docs/recovery.md, "Stuck members"): a member that is
// alive but neither comes to the collective the others wait in nor shows
// progress inside one is found by the members of its node that wait, from
// its progress record (core/progress_record.hpp), and excluded: killed
// through its pidfd, so that the membership recovers from it exactly as
// from a death (spares take its place), and it can never complete a
// collective with the survivors should it wake up. With the policy `fail`
// the waiting call fails instead, naming it.
//
// Every member of a node that waits judges the same evidence (the stuck
// process's own record, on the node's one clock), so no slow observer can
// exclude a healthy member: a member that progresses stamps its record
// while it waits. The members it cannot see (on other nodes) are told that
// it waits (hang_notices.hpp) and judge themselves by the same rule; a
// process stopped, which cannot, is left to its launcher (ringmend-rank
// kills a process stopped or stuck inside a collective for the hang
// timeout) and, under the native membership, to the node's heartbeat.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "membership/epoch.hpp"
#include "ringmend/core/options.hpp"
#include "ringmend/core/progress_record.hpp"
#include "runtime/hang_notices.hpp"

namespace ringmend {

class HangDetector {
 public:
  // `control_ip`: where this process hears hang notices.
  HangDetector(double hang_timeout_seconds, HangPolicy policy, const std::string& control_ip);

  // Where this process is (its progress record; nothing without one).
  void set_member(int id);
  // Where this process hears hang notices, into its MemberInfo.
  void address_notices(membership::MemberInfo& mine) const {
    if (!notices_) return;
    mine.notice_ip = notices_->ip();
    mine.notice_port = notices_->port();
  }
  // `call`: the collective's call, when `phase` is Collective.
  void enter(progress::Phase phase, std::uint64_t seq, progress::CallSignature call = {});
  // A new wait begins (a collective, or its re-execution after a recovery).
  void restart() { waiting_since_ns_ = next_call_look_ns_ = 0; }
  // Polled by every wait of collective `seq` in epoch `e`: stamps this
  // process's record and, once this member has waited the hang timeout,
  // looks at the records of the other members of its node. Throws
  // Error(Timeout) for a stuck member under the policy `fail`. Whatever the
  // hang timeout, after kCallLookAfterNs of waiting it compares the calls
  // of the node's members in this collective: throws transport::Mismatch
  // when one made another call (they would wait for each other until the
  // call's timeout).
  void waiting(std::uint64_t now_ns, std::uint64_t seq, const membership::Epoch& e);
  // Polled by the waits of a subgroup's calls (runtime/subgroup.hpp): the
  // record is stamped, so that node mates waiting in the world's calls see
  // this member progress; nobody is judged (the node's other members may
  // be in other calls, rightly).
  void progressing(std::uint64_t now_ns);
  static constexpr std::uint64_t kCallLookAfterNs = 50'000'000, kCallLookEveryNs = 100'000'000;

  // The processes of this node in epoch `e` (for fence_lost()), added to
  // those of the epochs before.
  void remember(const membership::Epoch& e);
  // After a view change of the native membership: the members it left out
  // that still live on this node (stopped, stuck: the view change found
  // them silent) are killed, so that none of them can come back. (A member
  // ULFM reports lost is dead already.)
  void fence_lost(const std::vector<membership::MemberId>& lost, membership::MemberId me);

 private:
  void look_for_stuck(std::uint64_t seq, double waited, const membership::Epoch& e);
  void look_for_other_calls(const membership::Epoch& e) const;
  void tell_other_nodes(std::uint64_t now_ns, std::uint64_t seq, double waited, const membership::Epoch& e);

  double hang_timeout_;
  HangPolicy policy_;
  progress::OwnRecord* record_;  // the process's (one per process), or null
  std::uint64_t waiting_since_ns_ = 0, last_stamp_ns_ = 0, next_look_ns_ = 0, last_poll_ns_ = 0;
  // The collective this process is in and its call (unknown outside one),
  // and when its calls are next compared with the node's (0: not waiting).
  std::uint64_t call_seq_ = 0;
  progress::CallSignature call_;
  std::uint64_t next_call_look_ns_ = 0;
  std::map<membership::MemberId, pid_t> mates_;  // this node's other members (ever), by id
  // Off under the policy `fail` (nobody is excluded) and without a timeout.
  std::unique_ptr<HangNotices> notices_;
  std::uint64_t next_notice_ns_ = 0;
};

}  // namespace ringmend
