// A group of processes under the native membership protocol
// (docs/membership.md): the failure detector, the view changes and an
// all-gather of the current view, over the control network. It needs
// neither MPI nor its runtime: a job started by plain `srun` uses it.
//
// The event loop is the caller's: progress() turns it once, and every wait
// of this class (allgather, recover) turns it until done, bounded. Between
// calls nothing happens, so a process that computes for long must call
// progress() (a runtime does it from its progress thread): a node leader
// that sends no heartbeat for the heartbeat timeout is suspected.
//
//   while (true) {
//     auto all = group.allgather(mine, timeout);   // nothing: the view changes
//     if (all) break;
//     group.recover();                              // the next view, or an error
//   }
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "membership/native/control_net.hpp"
#include "membership/native/heartbeat_ring.hpp"
#include "membership/native/view_change.hpp"
#include "transport/peer_watch.hpp"

namespace ringmend::membership::native {

// What a process tells the others about itself at start-up.
struct PeerRecord {
  MemberId id = 0;
  std::string address;  // its control network's "IP:PORT"
  std::string node;     // its node's name
  int pid = 0;          // watched by pidfd from its node
};

// A record as one line of text, "id address node pid", and back (nothing
// for a line that is not one).
std::string to_text(const PeerRecord& record);
std::optional<PeerRecord> record_from_text(const std::string& line);

struct GroupSettings {
  double heartbeat_timeout = 1.0;  // RINGMEND_HEARTBEAT_TIMEOUT
  // How long a view change's leader waits for answers before it suspects
  // the silent; a member waiting for a leader waits three times as long.
  double round_timeout = 0.2;
  double recovery_timeout = 120;  // RINGMEND_RECOVERY_TIMEOUT: a view change, at most
  // How long a fenced process keeps answering (it may be the only one that
  // knows the decision) before it leaves.
  double fenced_grace = 0.5;
};

// Why a process must leave the job.
class MembershipError : public std::runtime_error {
 public:
  enum class Kind { Fenced, GaveUp };
  MembershipError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

class Group {
 public:
  using Clock = std::chrono::steady_clock;

  // `view`: every process of view `epoch` (itself included), each with the
  // address its `net` reaches it at.
  Group(std::unique_ptr<ControlNet> net, std::vector<PeerRecord> view, GroupSettings settings,
        std::uint64_t epoch = 0);

  std::uint64_t epoch() const { return epoch_; }
  const std::vector<MemberId>& members() const { return members_; }  // sorted
  MemberId self() const { return net_->self(); }
  std::uint64_t job_key() const { return net_->job_key(); }
  // This process's index in members().
  int rank() const;

  // One turn of the event loop: waits at most `timeout_ms` for the network,
  // a watched process or a timer, and handles what came.
  void progress(int timeout_ms);
  // A change of the view has begun here: no collective of this view may
  // complete at this process any more.
  bool changing() const { return change_->changing(); }

  struct Change {
    std::uint64_t epoch = 0;
    std::vector<MemberId> lost;
    double seconds = 0;      // from the first suspicion (or the call) to the new view
    bool left = false;       // recover(true): this process was left out, as it asked
    bool abandoned = false;  // every one of recover()'s `needed` is gone: no view installed
  };
  // Takes part in the view change until the next view is installed.
  // Throws MembershipError when this process is left out (Fenced, after
  // the grace period) or no view was decided within the recovery timeout.
  // `leaving`: this process is released from the job (release()); left
  // out, it returns at once with Change::left set, still in the old view,
  // and serves its grace period in leave().
  // `needed`: processes without which the change is pointless (a spare's
  // job members); once every one of them is gone() it returns at once with
  // Change::abandoned set, still in the old view, instead of waiting out
  // the recovery timeout for a quorum the rest may not have.
  Change recover(bool leaving = false, const std::vector<MemberId>& needed = {});
  // `id` is not in this view, said Bye (left the job normally) or is
  // suspected in it: either way it takes part in no change of this view.
  bool gone(MemberId id) const {
    return departed_.count(id) != 0 || suspected_.count(id) != 0 ||
           !std::binary_search(members_.begin(), members_.end(), id);
  }
  bool said_bye(MemberId id) const { return departed_.count(id) != 0; }
  // Asks for a change of the view that leaves `leavers` out: members
  // released from the job (ViewChange::release). Every process that knows
  // of the release calls it; the leavers take part in the change.
  void release(const std::vector<MemberId>& leavers);

  // Every member's `mine`, in members() order, once all arrived; nothing
  // when the view begins to change meanwhile (or `timeout_seconds` pass:
  // the call then counts as stalled and a view change follows).
  std::optional<std::vector<std::string>> allgather(const std::string& mine, double timeout_seconds);
  // The same among some members of the view only (`among`, in the order
  // of the result; this process one of them): every one of them calls it,
  // and every process of the view has made as many all-gathers in this
  // view as each of them (the rounds are numbered per view).
  std::optional<std::vector<std::string>> allgather_among(const std::vector<MemberId>& among,
                                                          const std::string& mine, double timeout_seconds);
  // This process took part in no all-gather or exchange of this view yet.
  bool fresh_view() const { return gather_round_ == 0 && exchange_round_ == 0; }
  // Another process has begun the all-gather this process would make next.
  bool gather_begun() const;

  // Each of `peers`' bytes for this process, after sending them `mine`
  // (a symmetric relation: every peer names this process too); nothing as
  // for allgather. Every member calls it the same number of times per view,
  // with or without peers.
  std::optional<std::map<MemberId, std::string>> exchange(const std::vector<MemberId>& peers,
                                                          const std::string& mine, double timeout_seconds);
  // Asks for a change of the view with nobody suspected (ViewChange::request).
  void request_change();
  // What `id` said about itself at start-up (or when it asked to join).
  const PeerRecord& record(MemberId id) const { return records_.at(id); }
  // Frames a joiner received for this view before it had its group
  // (join.hpp): handled as if they came now.
  void deliver_frames(std::vector<Frame> frames);

  // Leaves the job normally: the peers are told (Bye), so that the closed
  // connections are not taken for a failure. A process left out of the
  // view (a released member) first answers for the rest of its grace
  // period: it may be the only one that knows the decision.
  void leave();

  std::string describe() const { return change_->describe(); }

 private:
  // What allgather and exchange share: `mine` to each of `peers`, then
  // theirs back (this process's own included).
  std::optional<std::map<MemberId, std::string>> collect(FrameKind kind, const std::vector<MemberId>& peers,
                                                         const std::string& mine, double timeout_seconds);
  void install(const std::vector<MemberId>& next);
  // This process is left out of the next view: its node mates left out
  // with it that are stopped by a signal are killed (their node's
  // heartbeat stopped with them, so the others took the node for lost;
  // nobody else would end them, and a stopped process holds its job step).
  void end_stopped_mates();
  void watch_view();
  void suspect(MemberId id, const char* why);
  void deliver(std::vector<Message> messages);
  void send(Message message);  // to another process
  // A joiner's JOIN: its record kept, the current view sent back, and a
  // change asked for that admits it (ViewChange::admit).
  void admit(const Frame& join);
  void welcome(MemberId joiner);  // the view's records, to a joiner
  // Marks when the change of this view began (the first input that began it).
  void note_change();
  void dispatch(Frame frame);
  void timers(Clock::time_point now);
  int poll_timeout(int timeout_ms, Clock::time_point now) const;

  std::unique_ptr<ControlNet> net_;
  GroupSettings settings_;
  std::map<MemberId, PeerRecord> records_;
  std::uint64_t epoch_;
  std::vector<MemberId> members_;
  std::unique_ptr<ViewChange> change_;
  std::deque<std::unique_ptr<ViewChange>> decided_;  // the last few views' changes, for late askers
  HeartbeatRing ring_;
  transport::PeerWatch mates_;
  std::vector<MemberId> mate_ids_;  // by PeerWatch index
  std::set<MemberId> departed_;     // said Bye
  std::set<MemberId> suspected_;    // this view's, each reported once (a pidfd stays readable)
  std::set<MemberId> joining_;      // asked to join, not in the view yet
  std::map<MemberId, Clock::time_point> heard_;
  Clock::time_point next_heartbeat_{}, round_deadline_{}, change_began_{}, left_out_at_{};
  bool round_armed_ = false, change_noted_ = false, fenced_grace_served_ = false;
  std::uint64_t gather_round_ = 0, exchange_round_ = 0;
  std::map<std::uint64_t, std::map<MemberId, std::string>> gathered_, exchanged_;  // this view's, by round
  std::map<std::uint64_t, std::map<MemberId, std::uint64_t>> gather_tags_;         // the senders' Frame::tag
  std::vector<Frame> later_;  // frames of views not installed here yet
};

}  // namespace ringmend::membership::native
