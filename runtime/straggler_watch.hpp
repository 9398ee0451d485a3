// Stragglers (docs/recovery.md, "Stragglers"): a member that is alive and
// progressing, but so slow that the others wait for it in every call (a
// throttled CPU, a slow disk, a neighbour's noise). The hang detector
// finds the member that does not come at all; this finds the one that
// always comes late.
//
// Each member adds up the time it spends in the application's calls.
// Every `window` calls the members compare these sums in one small
// allreduce (rank r fills slot r). A member that arrives late waits less
// than the others: its lateness is the median member's wait less its own,
// as a share of the window's time. A straggler is late by at least
// `fraction` over two comparisons in a row taken together, and by at least
// half of it in each: one slow window (a checkpoint, say) is not enough,
// and a member late in every window is found even when its lateness
// varies from window to window (a throttled process is held back partly
// inside the calls, where it does not show as lateness). Every member
// judges the same summed vector, so they all find the same stragglers
// without another message. At most a minority is ever found (lateness is
// against the median), none with fewer than three members.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <vector>

#include "ringmend/core/options.hpp"

namespace ringmend {

struct Straggler {
  int rank = -1;          // in the membership of the comparison
  int member = -1;        // its member id
  double late_share = 0;  // the median member waited for it this share of the window's time
  double window = 0;      // the window's length (seconds, the median member's)
  bool again = false;     // found a straggler in the previous comparison too (said already)
};

// The rule, on a comparison's summed values: `waits[r]` the time rank r
// spent in the window's calls, `elapsed[r]` the window's length on rank r
// (0: rank r did not take part: it died during the comparison). Ranks late
// by at least `fraction` in this window, the latest first, at most a
// minority.
std::vector<Straggler> late_members(std::span<const double> waits, std::span<const double> elapsed,
                                    double fraction);

class StragglerWatch {
 public:
  StragglerWatch(StragglerPolicy policy, std::size_t window, double fraction);

  StragglerPolicy policy() const { return policy_; }
  // Whether a comparison comes before the call numbered `next_seq`: every
  // member has the same call numbers, so all compare before the same call.
  bool due(std::uint64_t next_seq) const {
    return policy_ != StragglerPolicy::Off && next_seq % window_ == 0;
  }
  // An application call took `seconds` (waits included).
  void count(double seconds) {
    waited_ += seconds;
    ++calls_;
  }
  // This member's part of a comparison among `size` ranks in epoch
  // `epoch`: slot 0 says the window is not comparable (the membership
  // changed during it, or this member joined meanwhile: the sum is then
  // non-zero everywhere); then `size` waits and `size` window lengths.
  // The next window starts now.
  std::vector<double> contribution(int rank, int size, std::uint64_t epoch);
  // The stragglers the summed vector shows with the previous comparison's
  // (the same on every member), by the rule above; `members` are the
  // member ids of the comparison's ranks. Their late_share is that of the
  // two comparisons together.
  std::vector<Straggler> judge(std::span<const double> summed, const std::vector<int>& members);

 private:
  StragglerPolicy policy_;
  std::uint64_t window_;
  double fraction_;
  std::chrono::steady_clock::time_point window_start_ = std::chrono::steady_clock::now();
  double waited_ = 0;
  std::uint64_t calls_ = 0;
  std::uint64_t epoch_at_start_ = 0;
  bool started_ = false;
  std::map<int, Straggler> late_before_;  // by member id: late in the previous comparison
  std::set<int> confirmed_before_;        // ... and found stragglers there
};

}  // namespace ringmend
