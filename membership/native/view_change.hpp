// One view change of the native membership protocol (docs/membership.md):
// the members of view e agree on the members of view e+1 by single-decree
// Paxos, led by the lowest member a process does not suspect, with quorums
// of view e (more than half, or exactly half with its lowest member).
//
// A state machine without I/O or clocks: the caller feeds it suspicions,
// received messages and round timeouts, and sends the messages each call
// returns. The same logic is model-checked in membership/model/
// view_change.pml; tests/unit/view_change_test.cpp drives many instances
// through lossy, reordering networks with crashes and checks the same
// properties.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace ringmend::membership::native {

// The same member ids as membership/member.hpp (kept across epochs).
using MemberId = std::int32_t;

// (round, leader), ordered lexicographically; round 0 is "no ballot".
struct Ballot {
  std::uint32_t round = 0;
  MemberId leader = 0;
  friend auto operator<=>(const Ballot&, const Ballot&) = default;
  bool none() const { return round == 0; }
};

enum class MessageKind : std::uint8_t { Suspect, Prepare, Promise, Nack, Accept, Accepted, Commit };
const char* to_string(MessageKind kind);

struct Message {
  MessageKind kind = MessageKind::Suspect;
  std::uint64_t epoch = 0;  // the view being changed (its successor is decided)
  MemberId from = 0, to = 0;
  Ballot ballot;    // Prepare, Promise, Accept, Accepted; Nack: the ballot promised instead
  Ballot accepted;  // Promise: the ballot of the value last accepted (none: none)
  // Promise: that value; Accept: the proposal; Commit: the decision;
  // Suspect: the members the sender suspects
  std::vector<MemberId> value;
};

enum class Mode : std::uint8_t {
  Active,     // in view e; takes part in a change as an acceptor
  Preparing,  // leads a ballot: collects promises
  Accepting,  // leads a ballot: collects acceptances
  Installed,  // view e+1 decided, and this process is in it
  Fenced,     // view e+1 decided without this process: it must leave
  GaveUp,     // no decision within its ballots: it must leave
};
const char* to_string(Mode mode);

// Whether `set` is a quorum of `view` (both sorted, set a subset of view).
bool is_quorum(const std::vector<MemberId>& view, const std::vector<MemberId>& set);

class ViewChange {
 public:
  // `members`: view e, any order (kept sorted); `self` must be in it.
  // `max_ballots`: how many ballots this process may lead before it gives
  // up (the recovery timeout, counted in round timeouts).
  ViewChange(std::uint64_t epoch, std::vector<MemberId> members, MemberId self, int max_ballots);

  // Inputs. Each returns the messages to send (a message to self included:
  // the caller delivers it back through receive()).
  std::vector<Message> suspect(MemberId member);  // the failure detector's news
  std::vector<Message> receive(const Message& message);
  std::vector<Message> timeout();  // a round timeout passed with no decision
  // The data path's news: a collective of view e cannot complete (a peer
  // said it left view e, or made no progress). Makes this process take part
  // in the change (its timeouts act) even if it suspects nobody yet.
  void stalled() { stalled_ = true; }
  // A change asked for with nobody suspected (a build or a meeting that
  // failed, a member that wants the others to stop): as stalled(), and the
  // leader it believes in is asked at once (SUSPECT with its suspicions)
  // rather than after a round timeout, so that no live leader is
  // suspected for it.
  std::vector<Message> request();
  // Processes to admit: added to this process's proposal if it leads one
  // that keeps no earlier value. Sorted, disjoint from the view.
  void admit(std::vector<MemberId> joiners);
  // Members that leave the job (a release): left out of this process's
  // proposal if it leads one that keeps no earlier value. They still take
  // part in the change (their promises and acceptances count toward the
  // quorums of view e) and learn the decision as a fenced member does.
  void release(std::vector<MemberId> leavers);

  Mode mode() const { return mode_; }
  bool decided() const { return mode_ == Mode::Installed || mode_ == Mode::Fenced; }
  bool finished() const { return decided() || mode_ == Mode::GaveUp; }
  // A change has begun here: no collective of view e may start or go on.
  bool changing() const {
    return stalled_ || !suspected_.empty() || !promised_.none() || mode_ != Mode::Active;
  }
  const std::vector<MemberId>& next_view() const { return decision_; }  // once decided
  const std::vector<MemberId>& view() const { return members_; }
  const std::vector<MemberId>& suspected() const { return suspected_; }
  std::uint64_t epoch() const { return epoch_; }
  MemberId self() const { return self_; }
  // One line for the log: mode, ballot, suspicions.
  std::string describe() const;

 private:
  MemberId lowest_trusted() const;
  bool suspects(MemberId m) const;
  bool in_view(MemberId m) const;
  Message to(MemberId dest, MessageKind kind, Ballot ballot = {}) const;
  void lead(std::vector<Message>& out);
  void accept_phase(std::vector<Message>& out);
  void learn(const std::vector<MemberId>& value);
  // receive()'s two roles: Prepare and Accept, Promise and Accepted.
  void as_acceptor(const Message& msg, std::vector<Message>& out);
  void as_leader(const Message& msg, std::vector<Message>& out);
  void maybe_finish_phase1(std::vector<Message>& out);

  std::uint64_t epoch_;
  std::vector<MemberId> members_;  // view e, sorted
  MemberId self_;
  int max_ballots_;
  Mode mode_ = Mode::Active;
  bool stalled_ = false;
  std::vector<MemberId> suspected_;  // sorted
  std::vector<MemberId> joiners_;    // sorted
  std::vector<MemberId> leavers_;    // sorted, in the view
  // Acceptor
  Ballot promised_, accepted_;
  std::vector<MemberId> accepted_value_;
  // Leader
  int ballots_led_ = 0;
  std::uint32_t highest_round_ = 0;
  Ballot ballot_;
  std::vector<MemberId> promisers_, acceptors_;  // sorted
  Ballot best_accepted_;
  std::vector<MemberId> best_value_, proposal_;
  // Learner
  std::vector<MemberId> decision_;
};

}  // namespace ringmend::membership::native
