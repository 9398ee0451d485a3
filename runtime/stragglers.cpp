// The straggler comparison (runtime/straggler_watch.hpp, docs/recovery.md
// "Stragglers"): every application call timed; every `window` calls, before
// the call, one allreduce of the members' times, and what the policy says
// with the stragglers it shows.
//
// Why before a call and not after one: a member released before call c
// takes no part in c, so c's result holds the contributions of exactly the
// members it reports (an application that deals out work per member, an
// ElasticSampler say, deals the released member's share out again, as for a
// member lost in c). And every member holds the same view when a call
// begins (run() keeps a catching-up member's view until its next call), so
// the comparison's slots mean the same ranks on all.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ringmend/core/log.hpp"
#include "runtime/communicator_impl.hpp"

namespace ringmend {
namespace {

void add_change(CollectiveResult& to, const CollectiveResult& from) {
  if (!from.recovered) return;
  to.recovered = true;
  add_ids(to.lost, from.lost);
  add_ids(to.joined, from.joined);
  add_ids(to.released, from.released);
}

std::string percent(double share) {
  char text[16];
  std::snprintf(text, sizeof text, "%.0f%%", share * 100);
  return text;
}

}  // namespace

CollectiveResult Communicator::Impl::call(const CollectiveCall& c) {
  if (stragglers_.policy() == StragglerPolicy::Off) return run(c);
  CollectiveResult before;
  if (!left && stragglers_.due(seq + 1)) {
    before = compare_waits();
    if (left) return before;  // released as a straggler: not in this call
  }
  const auto start = std::chrono::steady_clock::now();
  CollectiveResult result = run(c);
  stragglers_.count(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  add_change(result, before);
  return result;
}

CollectiveResult Communicator::Impl::compare_waits() {
  const std::vector<int> members = view_.members;
  const int my_rank = view_.rank;
  std::vector<double> v = stragglers_.contribution(view_.rank, view_.size, view_.number);
  CollectiveResult result = run(
      {coll::CollectiveKind::Allreduce, v.data(), v.data(), v.size(), DataType::Float64, ReduceOp::Sum, -1});
  const std::vector<Straggler> found = stragglers_.judge(v, members);
  if (my_rank == 0) {
    // Every comparison, at level debug: what each member waited, of how long.
    const std::size_t n = members.size();
    std::string waits;
    for (std::size_t r = 0; r < n && v.size() == 1 + 2 * n; ++r) {
      char one[64];
      std::snprintf(one, sizeof one, "%s%d: %.3f/%.3f s", r ? ", " : "", members[r], v[1 + r], v[1 + n + r]);
      waits += one;
    }
    ringmend::log(LogLevel::Debug, "straggler comparison before collective #" + std::to_string(seq) +
                                       (v[0] != 0 ? " (not comparable: the membership changed in it)" : "") +
                                       ": member: waited/window " + waits);
  }
  if (found.empty()) return result;
  // Releasing needs the pool's rounds: without fault tolerance, report.
  const bool release = stragglers_.policy() == StragglerPolicy::Release && fault_tolerant_;
  std::vector<int> ids;
  for (const Straggler& s : found) {
    ids.push_back(s.member);
    if (s.member == members[static_cast<std::size_t>(my_rank)])
      straggler_share_ = std::max(straggler_share_, s.late_share);
    // Said once while it stays a straggler (at level debug every time).
    if (my_rank == 0 || s.member == members[static_cast<std::size_t>(my_rank)])
      ringmend::log(
          s.again ? LogLevel::Debug : LogLevel::Warn,
          "member " + std::to_string(s.member) + " (rank " + std::to_string(s.rank) +
              ") is a straggler: the others waited for it " + percent(s.late_share) + " of the last " +
              std::to_string(settings_.straggler_window) +
              " calls' time, two comparisons in a row (RINGMEND_STRAGGLER_WINDOW, "
              "RINGMEND_STRAGGLER_FRACTION " +
              percent(settings_.straggler_fraction) + "): " +
              (release ? "released from the job (RINGMEND_STRAGGLER_POLICY=release)"
                       : "it stays (RINGMEND_STRAGGLER_POLICY=" + std::string(name_of(stragglers_.policy())) +
                             (fault_tolerant_ ? ")" : "; releasing needs fault tolerance)")));
  }
  if (!release) return result;
  std::sort(ids.begin(), ids.end());
  std::string what = "releasing the straggler";
  what += ids.size() == 1 ? " member" : "s: members";
  for (std::size_t i = 0; i < ids.size(); ++i) what += (i ? ", " : " ") + std::to_string(ids[i]);
  CollectiveResult released = release_members(ids, ids.size(), what, {});
  released_as_straggler_ = released.left;
  add_change(released, result);
  return released;
}

}  // namespace ringmend
