#include "membership/native/view_change.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace ringmend::membership::native {

namespace {

bool contains(const std::vector<MemberId>& sorted, MemberId m) {
  return std::binary_search(sorted.begin(), sorted.end(), m);
}

void insert_sorted(std::vector<MemberId>& sorted, MemberId m) {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), m);
  if (it == sorted.end() || *it != m) sorted.insert(it, m);
}

std::string ids_text(const std::vector<MemberId>& ids) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s + "]";
}

std::string ballot_text(Ballot b) {
  return b.none() ? "none" : "(" + std::to_string(b.round) + "," + std::to_string(b.leader) + ")";
}

}  // namespace

const char* to_string(MessageKind kind) {
  switch (kind) {
    case MessageKind::Suspect:
      return "SUSPECT";
    case MessageKind::Prepare:
      return "PREPARE";
    case MessageKind::Promise:
      return "PROMISE";
    case MessageKind::Nack:
      return "NACK";
    case MessageKind::Accept:
      return "ACCEPT";
    case MessageKind::Accepted:
      return "ACCEPTED";
    case MessageKind::Commit:
      return "COMMIT";
  }
  return "?";
}

const char* to_string(Mode mode) {
  switch (mode) {
    case Mode::Active:
      return "active";
    case Mode::Preparing:
      return "preparing";
    case Mode::Accepting:
      return "accepting";
    case Mode::Installed:
      return "installed";
    case Mode::Fenced:
      return "fenced";
    case Mode::GaveUp:
      return "gave up";
  }
  return "?";
}

bool is_quorum(const std::vector<MemberId>& view, const std::vector<MemberId>& set) {
  std::size_t in = 0;
  for (MemberId m : set) in += contains(view, m) ? 1 : 0;
  const std::size_t n = view.size();
  // Exactly half wins only with the view's lowest member: two halves of an
  // even view cannot both win, and any two quorums intersect.
  return 2 * in > n || (n > 0 && 2 * in == n && contains(set, view.front()));
}

ViewChange::ViewChange(std::uint64_t epoch, std::vector<MemberId> members, MemberId self, int max_ballots)
    : epoch_(epoch), members_(std::move(members)), self_(self), max_ballots_(max_ballots) {
  std::sort(members_.begin(), members_.end());
  if (std::adjacent_find(members_.begin(), members_.end()) != members_.end())
    throw std::invalid_argument("view change: a member is listed twice");
  if (!contains(members_, self_))
    throw std::invalid_argument("view change: member " + std::to_string(self_) + " is not in view " +
                                ids_text(members_));
  if (max_ballots_ < 1) throw std::invalid_argument("view change: at least one ballot");
}

bool ViewChange::suspects(MemberId m) const { return contains(suspected_, m); }
bool ViewChange::in_view(MemberId m) const { return contains(members_, m); }

MemberId ViewChange::lowest_trusted() const {
  for (MemberId m : members_)
    if (!suspects(m)) return m;
  return self_;  // never reached: a process does not suspect itself
}

Message ViewChange::to(MemberId dest, MessageKind kind, Ballot ballot) const {
  Message m;
  m.kind = kind;
  m.epoch = epoch_;
  m.from = self_;
  m.to = dest;
  m.ballot = ballot;
  return m;
}

void ViewChange::admit(std::vector<MemberId> joiners) {
  for (MemberId j : joiners)
    if (!in_view(j)) insert_sorted(joiners_, j);
}

void ViewChange::release(std::vector<MemberId> leavers) {
  for (MemberId l : leavers)
    if (in_view(l)) insert_sorted(leavers_, l);
}

std::vector<Message> ViewChange::request() {
  std::vector<Message> out;
  if (finished()) return out;
  stalled_ = true;
  const MemberId leader = lowest_trusted();
  if (leader == self_) {
    if (mode_ == Mode::Active && promised_.none() && ballots_led_ == 0) lead(out);
  } else {
    Message tell = to(leader, MessageKind::Suspect);
    tell.value = suspected_;
    out.push_back(std::move(tell));
  }
  return out;
}

std::vector<Message> ViewChange::suspect(MemberId member) {
  std::vector<Message> out;
  if (finished() || member == self_ || !in_view(member) || suspects(member)) return out;
  insert_sorted(suspected_, member);
  const MemberId leader = lowest_trusted();
  if (leader == self_) {
    if (mode_ == Mode::Active && promised_.none() && ballots_led_ == 0) lead(out);
  } else {
    Message tell = to(leader, MessageKind::Suspect);  // it may not have noticed yet
    tell.value = suspected_;
    out.push_back(std::move(tell));
  }
  if (mode_ == Mode::Preparing) maybe_finish_phase1(out);
  return out;
}

void ViewChange::lead(std::vector<Message>& out) {
  if (ballots_led_ >= max_ballots_) {
    mode_ = Mode::GaveUp;
    return;
  }
  ++ballots_led_;
  ballot_ = Ballot{++highest_round_, self_};  // higher than any seen
  promisers_.clear();
  acceptors_.clear();
  best_accepted_ = Ballot{};
  best_value_.clear();
  mode_ = Mode::Preparing;
  // To every member, suspected or not: a wrong suspicion costs nothing but a
  // late answer, whose sender is then in the view.
  for (MemberId m : members_) {
    out.push_back(to(m, MessageKind::Prepare, ballot_));
  }
}

void ViewChange::maybe_finish_phase1(std::vector<Message>& out) {
  for (MemberId m : members_)
    if (!contains(promisers_, m) && !suspects(m)) return;  // a trusted member may still answer
  if (is_quorum(members_, promisers_)) accept_phase(out);
}

void ViewChange::accept_phase(std::vector<Message>& out) {
  if (!best_accepted_.none()) {
    proposal_ = best_value_;  // may have been chosen already: keep it
  } else {
    proposal_.clear();  // who answered (alive and reachable), less who leaves
    std::set_difference(promisers_.begin(), promisers_.end(), leavers_.begin(), leavers_.end(),
                        std::back_inserter(proposal_));
    for (MemberId j : joiners_) insert_sorted(proposal_, j);
  }
  mode_ = Mode::Accepting;
  for (MemberId m : promisers_) {
    Message a = to(m, MessageKind::Accept, ballot_);
    a.value = proposal_;
    out.push_back(std::move(a));
  }
}

void ViewChange::learn(const std::vector<MemberId>& value) {
  decision_ = value;
  mode_ = contains(decision_, self_) ? Mode::Installed : Mode::Fenced;
}

// Paxos's acceptor: a promise not to take part in a lower ballot (nor in a
// collective of this view), and the value of the highest ballot accepted.
void ViewChange::as_acceptor(const Message& msg, std::vector<Message>& out) {
  if (msg.kind == MessageKind::Prepare) {
    if (msg.ballot > promised_) {
      promised_ = msg.ballot;  // from here no collective of view e at this process
      Message p = to(msg.from, MessageKind::Promise, msg.ballot);
      p.accepted = accepted_;
      p.value = accepted_value_;
      out.push_back(std::move(p));
    } else {
      out.push_back(to(msg.from, MessageKind::Nack, promised_));
    }
    return;
  }
  if (msg.ballot >= promised_) {  // Accept
    promised_ = msg.ballot;
    accepted_ = msg.ballot;
    accepted_value_ = msg.value;
    out.push_back(to(msg.from, MessageKind::Accepted, msg.ballot));
  } else {
    out.push_back(to(msg.from, MessageKind::Nack, promised_));
  }
}

// Paxos's leader: the promises of phase 1, then the acceptances of phase 2;
// a quorum of them chooses the proposal, which every process concerned hears.
void ViewChange::as_leader(const Message& msg, std::vector<Message>& out) {
  if (msg.kind == MessageKind::Promise) {
    if (mode_ == Mode::Preparing && msg.ballot == ballot_) {
      insert_sorted(promisers_, msg.from);
      if (msg.accepted > best_accepted_) {
        best_accepted_ = msg.accepted;
        best_value_ = msg.value;
      }
      maybe_finish_phase1(out);
    }
    return;
  }
  if (mode_ != Mode::Accepting || msg.ballot != ballot_) return;  // Accepted
  insert_sorted(acceptors_, msg.from);
  if (!is_quorum(members_, acceptors_)) return;
  // Chosen. Everyone of view e hears it, the excluded too, and the
  // joiners: they must know the view they enter.
  std::vector<MemberId> tell = members_;
  for (MemberId j : proposal_) insert_sorted(tell, j);
  for (MemberId m : tell) {
    if (m == self_) continue;
    Message c = to(m, MessageKind::Commit);
    c.value = proposal_;
    out.push_back(std::move(c));
  }
  learn(proposal_);
}

std::vector<Message> ViewChange::receive(const Message& msg) {
  std::vector<Message> out;
  if (msg.epoch != epoch_ || msg.to != self_) return out;  // another view's: the caller's business
  if (decided()) {
    // This view is decided here: a process still deciding it learns the
    // result (a fenced process answers so too until it exits).
    if (msg.kind == MessageKind::Prepare || msg.kind == MessageKind::Accept ||
        msg.kind == MessageKind::Suspect) {
      Message c = to(msg.from, MessageKind::Commit);
      c.value = decision_;
      out.push_back(std::move(c));
    }
    return out;
  }
  if (mode_ == Mode::GaveUp) return out;
  if (msg.kind != MessageKind::Commit && !in_view(msg.from)) return out;  // not a member of view e
  highest_round_ = std::max(highest_round_, msg.ballot.round);
  switch (msg.kind) {
    case MessageKind::Suspect:
      // The sender's suspicions come along: the leader need not wait a
      // round for an answer from a member that others know to be gone.
      for (MemberId m : msg.value)
        if (m != self_ && in_view(m)) insert_sorted(suspected_, m);
      if (mode_ == Mode::Active && promised_.none() && ballots_led_ == 0) lead(out);
      if (mode_ == Mode::Preparing) maybe_finish_phase1(out);
      break;
    case MessageKind::Prepare:
    case MessageKind::Accept:
      as_acceptor(msg, out);
      break;
    case MessageKind::Promise:
    case MessageKind::Accepted:
      as_leader(msg, out);
      break;
    case MessageKind::Nack:
      if ((mode_ == Mode::Preparing || mode_ == Mode::Accepting) && msg.ballot > ballot_)
        mode_ = Mode::Active;  // a higher ballot leads: wait for it, or time it out
      break;
    case MessageKind::Commit:
      learn(msg.value);
      break;
  }
  return out;
}

std::vector<Message> ViewChange::timeout() {
  std::vector<Message> out;
  if (finished() || !changing()) return out;
  switch (mode_) {
    case Mode::Preparing:
      // Who did not answer is suspected; lead on with a quorum, else wait.
      for (MemberId m : members_)
        if (m != self_ && !contains(promisers_, m)) insert_sorted(suspected_, m);
      if (is_quorum(members_, promisers_))
        accept_phase(out);
      else
        mode_ = Mode::Active;
      break;
    case Mode::Accepting:
      for (MemberId m : promisers_)
        if (m != self_ && !contains(acceptors_, m)) insert_sorted(suspected_, m);
      mode_ = Mode::Active;
      break;
    case Mode::Active: {
      // Waiting for a leader that does not come: suspect it, or lead.
      const MemberId leader = lowest_trusted();
      if (leader == self_) {
        lead(out);
      } else {
        insert_sorted(suspected_, leader);
        const MemberId next = lowest_trusted();
        if (next == self_)
          lead(out);
        else {
          Message tell = to(next, MessageKind::Suspect);
          tell.value = suspected_;
          out.push_back(std::move(tell));
        }
      }
      break;
    }
    default:
      break;
  }
  return out;
}

std::string ViewChange::describe() const {
  std::string s = "view " + std::to_string(epoch_) + " " + ids_text(members_) + ": " + to_string(mode_);
  if (mode_ == Mode::Preparing || mode_ == Mode::Accepting) s += ", leading ballot " + ballot_text(ballot_);
  s += ", promised " + ballot_text(promised_) + ", suspects " + ids_text(suspected_);
  if (decided()) s += ", next view " + ids_text(decision_);
  return s;
}

}  // namespace ringmend::membership::native
