#include "runtime/hang_detector.hpp"

#include <cstring>
#include <string>

#include "ringmend/core/error.hpp"
#include "ringmend/core/log.hpp"
#include "runtime/call_signature.hpp"
#include "transport/progress.hpp"

namespace ringmend {
namespace {

// One record per process, whichever communicator makes it first; removed
// when the process exits normally.
progress::OwnRecord* process_record() {
  static const std::unique_ptr<progress::OwnRecord> record = [] {
    auto r = progress::OwnRecord::create();
    if (!r)
      log(LogLevel::Warn,
          "no progress record in /dev/shm: a stuck member on this node is found by its launcher only");
    return r;
  }();
  return record.get();
}

// Stamps at most this often: a wait polls every few microseconds, and the
// detector needs tenths of a second.
constexpr std::uint64_t kStampEveryNs = 20'000'000;
// A waiting member looks at its node's records at most this often, and
// tells the members of other nodes that it waits at most this often.
constexpr std::uint64_t kLookEveryNs = 100'000'000;
constexpr std::uint64_t kNoticeEveryNs = 1'000'000'000;

}  // namespace

HangDetector::HangDetector(double hang_timeout_seconds, HangPolicy policy, const std::string& control_ip)
    : hang_timeout_(hang_timeout_seconds), policy_(policy), record_(process_record()) {
  if (hang_timeout_ > 0 && policy_ == HangPolicy::Exclude && record_)
    notices_ = std::make_unique<HangNotices>(control_ip, hang_timeout_);
}

void HangDetector::set_member(int id) {
  if (record_) record_->set_member(id);
  if (notices_) notices_->set_member(id);
}

void HangDetector::enter(progress::Phase phase, std::uint64_t seq, progress::CallSignature call) {
  if (phase != progress::Phase::Collective) call = {};
  if (record_) record_->enter(phase, seq, call);
  call_seq_ = seq;
  call_ = call;
  waiting_since_ns_ = next_call_look_ns_ = 0;
}

void HangDetector::progressing(std::uint64_t now_ns) {
  if (record_ && now_ns - last_stamp_ns_ >= kStampEveryNs) {
    record_->stamp(now_ns);
    last_stamp_ns_ = now_ns;
  }
}

void HangDetector::waiting(std::uint64_t now_ns, std::uint64_t seq, const membership::Epoch& e) {
  progressing(now_ns);
  if (record_ && call_.known() && now_ns >= next_call_look_ns_) {
    const bool first = next_call_look_ns_ == 0;
    next_call_look_ns_ = now_ns + (first ? kCallLookAfterNs : kCallLookEveryNs);
    if (!first) look_for_other_calls(e);
  }
  if (hang_timeout_ <= 0) return;
  // A gap between two polls (this process was stopped, or the job
  // suspended whole) starts the wait again: only time this member spent
  // waiting counts, and a healthy member stamps within it.
  const bool gap = now_ns - last_poll_ns_ > 1'000'000'000ULL;
  last_poll_ns_ = now_ns;
  if (waiting_since_ns_ == 0 || gap) {
    waiting_since_ns_ = now_ns;
    next_look_ns_ = now_ns + static_cast<std::uint64_t>(hang_timeout_ * 1e9);
    return;
  }
  if (now_ns < next_look_ns_) return;
  next_look_ns_ = now_ns + kLookEveryNs;
  const double waited = static_cast<double>(now_ns - waiting_since_ns_) / 1e9;
  look_for_stuck(seq, waited, e);
  tell_other_nodes(now_ns, seq, waited, e);
}

namespace {

// Members of the same machine and node as `me` (pids mean something
// there), and of the same node of the epoch's plan (test nodes on one
// machine, RINGMEND_TEST_RANKS_PER_NODE, are nodes of their own here too).
bool same_node(const membership::MemberInfo& m, const membership::MemberInfo& me) {
  return m.machine == me.machine && std::strncmp(m.node, me.node, sizeof m.node) == 0 &&
         m.node_key == me.node_key;
}

}  // namespace

void HangDetector::remember(const membership::Epoch& e) {
  // Kept across epochs: fence_lost() asks after members the last one lost.
  const membership::MemberInfo& me = e.infos.at(static_cast<std::size_t>(e.rank));
  for (int r = 0; r < e.size; ++r)
    if (r != e.rank && same_node(e.infos.at(static_cast<std::size_t>(r)), me))
      mates_[e.members.at(static_cast<std::size_t>(r))] = e.infos.at(static_cast<std::size_t>(r)).pid;
}

void HangDetector::fence_lost(const std::vector<membership::MemberId>& lost, membership::MemberId me) {
  for (membership::MemberId id : lost) {
    const auto it = mates_.find(id);
    if (it == mates_.end()) continue;
    const auto seen = progress::observe(it->second);
    std::string why;
    if (seen && progress::exclude(it->second, me, seen->idle_seconds, why))
      log(LogLevel::Warn, "member " + std::to_string(id) + " (pid " + std::to_string(it->second) +
                              ") was left out of the view alive, " + progress::name_of(seen->phase) +
                              " without progress for " + seconds_text(seen->idle_seconds) +
                              ": killed, so that it cannot come back");
  }
}

void HangDetector::tell_other_nodes(std::uint64_t now_ns, std::uint64_t seq, double waited,
                                    const membership::Epoch& e) {
  if (!notices_ || now_ns < next_notice_ns_) return;
  next_notice_ns_ = now_ns + kNoticeEveryNs;
  const membership::MemberInfo& me = e.infos.at(static_cast<std::size_t>(e.rank));
  std::vector<bool> mate(static_cast<std::size_t>(e.size));
  for (int r = 0; r < e.size; ++r)
    mate[static_cast<std::size_t>(r)] = same_node(e.infos.at(static_cast<std::size_t>(r)), me);
  notices_->tell_others(e, seq, waited, mate);
}

void HangDetector::look_for_other_calls(const membership::Epoch& e) const {
  const membership::MemberInfo& me = e.infos.at(static_cast<std::size_t>(e.rank));
  for (int r = 0; r < e.size; ++r) {
    const membership::MemberInfo& m = e.infos.at(static_cast<std::size_t>(r));
    if (r == e.rank || !same_node(m, me)) continue;
    const auto seen = progress::observe(m.pid);
    if (!seen || seen->phase != progress::Phase::Collective || seen->seq != call_seq_ ||
        !seen->call.known() || seen->call == call_)
      continue;
    throw transport::Mismatch(
        "collective #" + std::to_string(call_seq_) + ": rank " + std::to_string(e.rank) + " called " +
        describe(call_) + ", rank " + std::to_string(r) + " (member " +
        std::to_string(e.members.at(static_cast<std::size_t>(r))) + ", same node) called " +
        describe(seen->call) + ": every rank must make the same collective call");
  }
}

void HangDetector::look_for_stuck(std::uint64_t seq, double waited, const membership::Epoch& e) {
  const membership::MemberInfo& me = e.infos.at(static_cast<std::size_t>(e.rank));
  for (int r = 0; r < e.size; ++r) {
    const membership::MemberInfo& m = e.infos.at(static_cast<std::size_t>(r));
    if (r == e.rank || !same_node(m, me)) continue;
    const auto seen = progress::observe(m.pid);
    if (!seen || !progress::is_stuck(*seen, seq, waited, hang_timeout_)) continue;
    const std::string what =
        "member " + std::to_string(e.members.at(static_cast<std::size_t>(r))) + " (pid " +
        std::to_string(m.pid) + ", node " + std::string(m.node, strnlen(m.node, sizeof m.node)) + ") " +
        (seen->phase == progress::Phase::Collective
             ? "shows no progress in collective #" + std::to_string(seen->seq)
             : "has not come to collective #" + std::to_string(seq)) +
        " for " + seconds_text(seen->idle_seconds) + " while member " + std::to_string(e.my_id()) +
        " waited " + seconds_text(waited) + " (RINGMEND_HANG_TIMEOUT " + seconds_text(hang_timeout_) + ")";
    if (policy_ == HangPolicy::Fail) throw Error(Errc::Timeout, what + "; RINGMEND_HANG_POLICY=fail");
    std::string why;
    if (progress::exclude(m.pid, e.my_id(), seen->idle_seconds, why))
      log(LogLevel::Warn, what + ": excluded as stuck (killed); the job recovers from it as from a death");
    else
      log(LogLevel::Debug, what + ": not excluded here (" + why + ")");
  }
}

}  // namespace ringmend
