#include "membership/native/group.hpp"

#include <poll.h>
#include <sys/types.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "ringmend/core/hash.hpp"
#include "ringmend/core/log.hpp"
#include "ringmend/core/progress_record.hpp"

namespace ringmend::membership::native {

namespace {

std::string ids_text(const std::vector<MemberId>& ids) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s + "]";
}

std::chrono::nanoseconds span(double seconds) {
  return std::chrono::nanoseconds(static_cast<std::int64_t>(seconds * 1e9));
}

double since(Group::Clock::time_point t) {
  return std::chrono::duration<double>(Group::Clock::now() - t).count();
}

// Views kept decided for processes that missed a decision and ask again.
constexpr std::size_t kDecidedKept = 4;
// Frames of later views kept until this process gets there.
constexpr std::size_t kLaterKept = 4096;

}  // namespace

std::string to_text(const PeerRecord& r) {
  return std::to_string(r.id) + " " + r.address + " " + r.node + " " + std::to_string(r.pid);
}

std::optional<PeerRecord> record_from_text(const std::string& line) {
  char address[128] = {}, node[96] = {};
  int id = 0, pid = 0;
  if (std::sscanf(line.c_str(), "%d %127s %95s %d", &id, address, node, &pid) != 4) return std::nullopt;
  return PeerRecord{id, address, node, pid};
}

Group::Group(std::unique_ptr<ControlNet> net, std::vector<PeerRecord> view, GroupSettings settings,
             std::uint64_t epoch)
    : net_(std::move(net)), settings_(settings), epoch_(epoch) {
  for (PeerRecord& r : view) {
    if (r.id != self()) net_->add_peer(r.id, r.address);
    members_.push_back(r.id);
    records_[r.id] = std::move(r);
  }
  std::sort(members_.begin(), members_.end());
  watch_view();
}

int Group::rank() const {
  return static_cast<int>(std::lower_bound(members_.begin(), members_.end(), self()) - members_.begin());
}

void Group::watch_view() {
  const int ballots =
      std::max(1, static_cast<int>(std::ceil(settings_.recovery_timeout / (3 * settings_.round_timeout))));
  change_ = std::make_unique<ViewChange>(epoch_, members_, self(), ballots);
  std::vector<Placement> placement;
  for (MemberId m : members_) placement.push_back({m, records_.at(m).node});
  ring_ = HeartbeatRing(placement, self());
  std::vector<pid_t> pids;
  mate_ids_.clear();
  for (MemberId m : ring_.node_mates()) {
    pids.push_back(records_.at(m).pid);
    mate_ids_.push_back(m);
  }
  mates_ = transport::PeerWatch(pids);
  suspected_.clear();
  const auto now = Clock::now();
  heard_.clear();
  for (MemberId w : ring_.watch()) heard_[w] = now;  // a grace of one timeout from here
  next_heartbeat_ = now;
  round_armed_ = false;
  change_noted_ = false;
  gather_round_ = exchange_round_ = 0;
  gathered_.clear();
  exchanged_.clear();
  gather_tags_.clear();
}

void Group::suspect(MemberId id, const char* why) {
  if (departed_.count(id) || !std::binary_search(members_.begin(), members_.end(), id)) return;
  // Decided here (left out, or installing): the view's news no longer matters.
  if (change_->finished()) return;
  if (!suspected_.insert(id).second) return;
  log(LogLevel::Info, "native membership: view " + std::to_string(epoch_) + ": suspects member " +
                          std::to_string(id) + " (" + why + ")");
  deliver(change_->suspect(id));
}

void Group::deliver(std::vector<Message> messages) {
  std::deque<Message> queue(std::make_move_iterator(messages.begin()),
                            std::make_move_iterator(messages.end()));
  while (!queue.empty()) {
    Message m = std::move(queue.front());
    queue.pop_front();
    if (m.to == self()) {
      for (Message& r : change_->receive(m)) queue.push_back(std::move(r));
      continue;
    }
    send(std::move(m));
  }
  note_change();
}

void Group::send(Message m) {
  // A value that names a joiner goes after its record: the receiver may
  // not have had the joiner's own JOIN yet, and needs its address.
  for (MemberId id : m.value) {
    if (std::binary_search(members_.begin(), members_.end(), id) || !records_.count(id)) continue;
    Frame r;
    r.kind = FrameKind::Record;
    r.epoch = m.epoch;
    r.from = self();
    r.payload = to_text(records_.at(id));
    net_->send(m.to, r);
  }
  Frame f;
  f.kind = FrameKind::Protocol;
  f.epoch = m.epoch;
  f.from = self();
  f.protocol = std::move(m);
  net_->send(f.protocol.to, f);
}

void Group::welcome(MemberId joiner) {
  Frame w;
  w.kind = FrameKind::Welcome;
  w.epoch = epoch_;
  w.from = self();
  for (MemberId m : members_) w.payload += to_text(records_.at(m)) + "\n";
  net_->send(joiner, w);
}

void Group::admit(const Frame& join) {
  const std::optional<PeerRecord> r = record_from_text(join.payload);
  if (!r || r->id != join.from || r->id == self()) return;
  const auto known = records_.find(r->id);
  if (known != records_.end() && known->second.address != r->address) {
    log(LogLevel::Warn, "native membership: a process asked to join as " + std::to_string(r->id) +
                            ", an id already taken: ignored");
    return;
  }
  if (std::binary_search(members_.begin(), members_.end(), r->id)) return;  // admitted already
  records_[r->id] = *r;
  net_->add_peer(r->id, r->address);
  joining_.insert(r->id);
  welcome(r->id);
  log(LogLevel::Info, "native membership: view " + std::to_string(epoch_) + ": process " +
                          std::to_string(r->id) + " on " + r->node + " asks to join");
  change_->admit({r->id});
  if (!change_->changing()) deliver(change_->request());
  note_change();
}

void Group::deliver_frames(std::vector<Frame> frames) {
  for (Frame& f : frames) dispatch(std::move(f));
}

void Group::note_change() {
  if (change_noted_ || !change_->changing()) return;
  change_noted_ = true;
  change_began_ = Clock::now();
}

void Group::dispatch(Frame f) {
  if (heard_.count(f.from)) heard_[f.from] = Clock::now();
  if (f.kind == FrameKind::Bye) {
    departed_.insert(f.from);
    return;
  }
  if (f.kind == FrameKind::Heartbeat) return;
  if (f.kind == FrameKind::Join) {
    admit(f);
    return;
  }
  if (f.kind == FrameKind::Record) {
    if (const auto r = record_from_text(f.payload); r && !records_.count(r->id)) {
      records_[r->id] = *r;
      net_->add_peer(r->id, r->address);
    }
    return;
  }
  if (f.kind == FrameKind::Welcome) return;  // for joiners (join.hpp)
  if (f.epoch > epoch_) {
    // The sender is in a later view: this process missed a decision. It
    // takes part in a change of its own view, where a decided process
    // answers with the decision (the stall rule).
    if (later_.size() < kLaterKept) later_.push_back(std::move(f));
    change_->stalled();
    note_change();
    return;
  }
  if (f.kind == FrameKind::Gather || f.kind == FrameKind::Exchange) {
    if (f.epoch == epoch_) {
      if (f.kind == FrameKind::Gather) gather_tags_[f.round][f.from] = f.tag;
      (f.kind == FrameKind::Gather ? gathered_ : exchanged_)[f.round][f.from] = std::move(f.payload);
    }
    return;  // an earlier view's: that collective is over
  }
  if (f.kind != FrameKind::Protocol) return;
  if (f.epoch == epoch_) {
    // A member waiting for a leader that still talks waits on.
    if (round_armed_ && change_->mode() == Mode::Active)
      round_deadline_ = Clock::now() + span(3 * settings_.round_timeout);
    deliver(change_->receive(f.protocol));
    return;
  }
  for (auto& old : decided_)
    if (old->epoch() == f.epoch) {
      // Decided here long ago: tell the asker what.
      for (Message& m : old->receive(f.protocol)) send(std::move(m));
    }
}

void Group::timers(Clock::time_point now) {
  if (ring_.is_leader() && now >= next_heartbeat_) {
    Frame hb;
    hb.kind = FrameKind::Heartbeat;
    hb.epoch = epoch_;
    hb.from = self();
    for (MemberId to : ring_.send_to()) net_->send(to, hb);
    next_heartbeat_ = now + span(settings_.heartbeat_timeout / 4);
  }
  for (auto& [leader, heard] : heard_) {
    if (now - heard <= span(settings_.heartbeat_timeout) || departed_.count(leader)) continue;
    heard = now;  // once per timeout
    for (MemberId m : ring_.node_of(leader)) suspect(m, "its node's leader sent no heartbeat");
  }
  if (change_->changing() && !change_->finished()) {
    // A process that said Bye answers no more: the change need not wait a
    // round for it.
    for (MemberId d : departed_)
      if (std::binary_search(members_.begin(), members_.end(), d)) deliver(change_->suspect(d));
    // A leader waits one round for answers; a member waits three for its
    // leader, whose own round began a message later.
    const auto round = [&] {
      const bool leading = change_->mode() == Mode::Preparing || change_->mode() == Mode::Accepting;
      return span((leading ? 1 : 3) * settings_.round_timeout);
    };
    if (!round_armed_) {
      round_armed_ = true;
      round_deadline_ = now + round();
    } else if (now >= round_deadline_) {
      deliver(change_->timeout());
      round_deadline_ = now + round();
    }
  }
}

int Group::poll_timeout(int timeout_ms, Clock::time_point now) const {
  auto until = now + std::chrono::milliseconds(timeout_ms);
  if (ring_.is_leader()) until = std::min(until, next_heartbeat_);
  for (const auto& [leader, heard] : heard_)
    until = std::min(until, heard + span(settings_.heartbeat_timeout));
  if (round_armed_ && !change_->finished()) until = std::min(until, round_deadline_);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count();
  return static_cast<int>(std::clamp<std::int64_t>(ms + 1, 0, timeout_ms));
}

void Group::progress(int timeout_ms) {
  std::vector<pollfd> fds;
  net_->pollfds(fds);
  const std::size_t first_pidfd = fds.size();
  // A pidfd stays readable once its process exited: one already suspected
  // is left out (-1: poll() skips it), or every poll would return at once.
  for (std::size_t i = 0; i < mates_.descriptors().size(); ++i) {
    const MemberId mate = mate_ids_.at(static_cast<std::size_t>(mates_.index_at(i)));
    fds.push_back({suspected_.count(mate) ? -1 : mates_.descriptors()[i], POLLIN, 0});
  }
  ::poll(fds.data(), fds.size(), poll_timeout(timeout_ms, Clock::now()));
  ControlNet::Events events;
  net_->handle(fds, events);
  // Frames first: a peer that leaves normally says Bye before it closes
  // its connections and exits.
  for (Frame& f : events.frames) dispatch(std::move(f));
  for (MemberId id : events.lost) {
    joining_.erase(id);  // a joiner that went away before its admission
    suspect(id, "its connection closed");
  }
  for (std::size_t i = first_pidfd; i < fds.size(); ++i)
    if (fds[i].revents)
      suspect(mate_ids_.at(static_cast<std::size_t>(mates_.index_at(i - first_pidfd))), "its process exited");
  // A pidfd is readable only once the kernel released the process's
  // memory, tens of milliseconds after a SIGKILL for a large process; its
  // death shows in /proc at once (PeerWatch reads it at most every half
  // millisecond, whoever asks).
  for (std::size_t i = 0; i < mates_.descriptors().size(); ++i) {
    const MemberId mate = mate_ids_.at(static_cast<std::size_t>(mates_.index_at(i)));
    if (!suspected_.count(mate) && mates_.has_exited(mates_.index_at(i)))
      suspect(mate, "its process is dying of a signal");
  }
  timers(Clock::now());
}

void Group::end_stopped_mates() {
  for (MemberId m : mate_ids_) {
    const auto& next = change_->next_view();
    if (std::find(next.begin(), next.end(), m) != next.end()) continue;
    const pid_t pid = records_.at(m).pid;
    std::string why;
    const auto seen = progress::observe(pid);
    if (seen && progress::process_state(pid) == 'T' &&
        progress::exclude(pid, self(), seen->idle_seconds, why))
      log(LogLevel::Warn, "native membership: member " + std::to_string(m) + " (pid " + std::to_string(pid) +
                              "), stopped, was left out of view " + std::to_string(epoch_ + 1) +
                              " with this process: killed, so that it cannot come back");
  }
}

Group::Change Group::recover(bool leaving, const std::vector<MemberId>& needed) {
  change_->stalled();  // the caller saw a collective stall, or the change began: take part
  note_change();
  const auto deadline = change_began_ + span(settings_.recovery_timeout);
  const auto all_needed_gone = [&] {
    return !needed.empty() && std::all_of(needed.begin(), needed.end(), [&](MemberId m) { return gone(m); });
  };
  while (!change_->finished()) {
    if (Clock::now() > deadline) break;
    if (all_needed_gone()) {
      Change change;
      change.epoch = epoch_;
      change.abandoned = true;
      return change;
    }
    progress(10);
  }
  if (change_->mode() == Mode::Fenced && leaving) {
    Change change;
    change.epoch = epoch_ + 1;
    change.left = true;
    change.seconds = since(change_began_);
    left_out_at_ = Clock::now();
    log(LogLevel::Debug, "native membership: left out of view " + std::to_string(epoch_ + 1) + " " +
                             ids_text(change_->next_view()) + ", as released");
    return change;
  }
  if (change_->mode() == Mode::Fenced) {
    const std::string why = "member " + std::to_string(self()) + " was left out of view " +
                            std::to_string(epoch_ + 1) + " " + ids_text(change_->next_view()) +
                            " (the others declared it failed): it must leave the job";
    end_stopped_mates();
    // It may be the only one left that knows: it answers for a while, once
    // (a runtime that asks again on its way out is told at once).
    const auto grace = Clock::now() + span(fenced_grace_served_ ? 0.0 : settings_.fenced_grace);
    while (Clock::now() < grace) progress(10);
    fenced_grace_served_ = true;
    throw MembershipError(MembershipError::Kind::Fenced, why);
  }
  if (!change_->decided())
    throw MembershipError(MembershipError::Kind::GaveUp, "no new view of " + ids_text(members_) + " within " +
                                                             seconds_text(settings_.recovery_timeout) + ": " +
                                                             change_->describe());
  Change change;
  change.epoch = epoch_ + 1;
  for (MemberId m : members_)
    if (!std::binary_search(change_->next_view().begin(), change_->next_view().end(), m))
      change.lost.push_back(m);
  change.seconds = since(change_began_);
  install(change_->next_view());
  return change;
}

void Group::install(const std::vector<MemberId>& next) {
  for (MemberId m : members_)
    if (!std::binary_search(next.begin(), next.end(), m)) net_->forget(m);
  for (MemberId m : next)
    if (!records_.count(m))
      throw MembershipError(MembershipError::Kind::GaveUp,
                            "view " + std::to_string(epoch_ + 1) + " names member " + std::to_string(m) +
                                ", unknown here (a joiner without its record)");
  log(LogLevel::Info, "native membership: view " + std::to_string(epoch_ + 1) + " " + ids_text(next) +
                          " installed after " + seconds_text(since(change_began_)));
  decided_.push_back(std::move(change_));
  if (decided_.size() > kDecidedKept) decided_.pop_front();
  ++epoch_;
  members_ = next;
  watch_view();
  // The joiners admitted learn the view they are in; those left out (their
  // JOIN came after the leader's proposal was fixed) are admitted by the
  // next change.
  for (auto j = joining_.begin(); j != joining_.end();) {
    if (std::binary_search(members_.begin(), members_.end(), *j)) {
      welcome(*j);
      j = joining_.erase(j);
      continue;
    }
    change_->admit({*j});
    ++j;
  }
  if (!joining_.empty() && !change_->changing()) deliver(change_->request());
  // A member that said Bye while the change that made this view was under
  // way (after its promise) is in the view but gone: the next change
  // starts now. Nothing else would start it, since a departed member is
  // never suspected and its silence is not watched.
  for (MemberId d : departed_)
    if (std::binary_search(members_.begin(), members_.end(), d)) deliver(change_->suspect(d));
  std::vector<Frame> later;
  later.swap(later_);
  for (Frame& f : later) {
    if (f.epoch == epoch_) {
      dispatch(std::move(f));
    } else if (f.epoch > epoch_) {
      later_.push_back(std::move(f));
      change_->stalled();
      note_change();
    }
  }
}

std::optional<std::map<MemberId, std::string>> Group::collect(FrameKind kind,
                                                              const std::vector<MemberId>& peers,
                                                              const std::string& mine,
                                                              double timeout_seconds) {
  if (change_->changing()) return std::nullopt;  // a member that promised never contributes again
  const bool gather = kind == FrameKind::Gather;
  auto& rounds = gather ? gathered_ : exchanged_;
  const std::uint64_t round = gather ? gather_round_++ : exchange_round_++;
  Frame f;
  f.kind = kind;
  f.epoch = epoch_;
  f.from = self();
  f.round = round;
  f.payload = mine;
  // An all-gather names its participants (FNV-1a over their ids, in order):
  // two all-gathers of one round among different processes never mix.
  if (gather) {
    Fnv1a tag;
    for (MemberId m : peers) tag.add_value(m);
    f.tag = tag.value();
  }
  for (MemberId m : peers)
    if (m != self()) net_->send(m, f);
  rounds[round][self()] = mine;
  const auto deadline = Clock::now() + span(timeout_seconds);
  for (;;) {
    auto& got = rounds[round];
    // A peer that said Bye before its part came will never send it.
    if (std::any_of(peers.begin(), peers.end(),
                    [&](MemberId m) { return departed_.count(m) && !got.count(m); })) {
      request_change();
      return std::nullopt;
    }
    if (std::all_of(peers.begin(), peers.end(), [&](MemberId m) { return got.count(m) > 0; })) {
      std::map<MemberId, std::string> out = std::move(got);
      rounds.erase(round);
      std::map<MemberId, std::uint64_t> tags = std::move(gather_tags_[round]);
      gather_tags_.erase(round);
      const auto other =
          std::find_if(tags.begin(), tags.end(), [&](const auto& t) { return t.second != f.tag; });
      if (gather && other != tags.end()) {
        // A protocol error, not a failure: fail this collective everywhere
        // (a change of the view, nobody suspected) rather than mix two.
        log(LogLevel::Warn, "native membership: view " + std::to_string(epoch_) + ": process " +
                                std::to_string(other->first) + " is in another all-gather of round " +
                                std::to_string(round) + ": the view changes");
        request_change();
        return std::nullopt;
      }
      return out;
    }
    if (change_->changing()) return std::nullopt;
    if (Clock::now() > deadline) {
      log(LogLevel::Warn, "native membership: view " + std::to_string(epoch_) + ": " +
                              (gather ? "an all-gather" : "an exchange") + " waited " +
                              seconds_text(timeout_seconds) + " for its peers: stalled");
      change_->stalled();
      note_change();
      return std::nullopt;
    }
    progress(50);
  }
}

std::optional<std::vector<std::string>> Group::allgather(const std::string& mine, double timeout_seconds) {
  return allgather_among(members_, mine, timeout_seconds);
}

std::optional<std::vector<std::string>> Group::allgather_among(const std::vector<MemberId>& among,
                                                               const std::string& mine,
                                                               double timeout_seconds) {
  auto got = collect(FrameKind::Gather, among, mine, timeout_seconds);
  if (!got) return std::nullopt;
  std::vector<std::string> all;
  for (MemberId m : among) all.push_back(std::move(got->at(m)));
  return all;
}

bool Group::gather_begun() const {
  const auto next = gathered_.find(gather_round_);
  return next != gathered_.end() && std::any_of(next->second.begin(), next->second.end(),
                                                [&](const auto& e) { return e.first != self(); });
}

std::optional<std::map<MemberId, std::string>> Group::exchange(const std::vector<MemberId>& peers,
                                                               const std::string& mine,
                                                               double timeout_seconds) {
  return collect(FrameKind::Exchange, peers, mine, timeout_seconds);
}

void Group::request_change() { deliver(change_->request()); }

void Group::release(const std::vector<MemberId>& leavers) {
  change_->release(leavers);
  deliver(change_->request());
}

void Group::leave() {
  if (change_->mode() == Mode::Fenced && !fenced_grace_served_) {
    const auto grace = left_out_at_ + span(settings_.fenced_grace);
    while (Clock::now() < grace) progress(10);
    fenced_grace_served_ = true;
  }
  net_->close_gracefully(epoch_, 1000);
}

}  // namespace ringmend::membership::native
