#include "runtime/straggler_watch.hpp"

#include <algorithm>

namespace ringmend {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::vector<Straggler> late_members(std::span<const double> waits, std::span<const double> elapsed,
                                    double fraction) {
  std::vector<double> present_waits, present_elapsed;
  for (std::size_t r = 0; r < waits.size() && r < elapsed.size(); ++r)
    if (elapsed[r] > 0) present_waits.push_back(waits[r]), present_elapsed.push_back(elapsed[r]);
  const std::size_t n = present_waits.size();
  std::vector<Straggler> late;
  if (n < 3) return late;  // with two, "the others" is one member: no majority to compare with
  const double typical_wait = median(present_waits), window = median(present_elapsed);
  if (window <= 0) return late;
  for (std::size_t r = 0; r < waits.size() && r < elapsed.size(); ++r) {
    if (elapsed[r] <= 0) continue;
    const double share = (typical_wait - waits[r]) / window;
    if (share >= fraction) late.push_back({static_cast<int>(r), -1, share, window});
  }
  std::sort(late.begin(), late.end(),
            [](const Straggler& a, const Straggler& b) { return a.late_share > b.late_share; });
  // Against the median at most half can be late; a minority, strictly.
  late.resize(std::min(late.size(), (n - 1) / 2));
  return late;
}

StragglerWatch::StragglerWatch(StragglerPolicy policy, std::size_t window, double fraction)
    : policy_(policy), window_(std::max<std::size_t>(window, 2)), fraction_(fraction) {}

std::vector<double> StragglerWatch::contribution(int rank, int size, std::uint64_t epoch) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<double> v(1 + 2 * static_cast<std::size_t>(size), 0.0);
  // Comparable: a whole window, all of it in this membership. (The first
  // window of a process starts with its first call's wire-up: it counts
  // for nothing either.)
  const bool comparable = started_ && epoch == epoch_at_start_ && calls_ * 2 >= window_;
  v[0] = comparable ? 0 : 1;
  if (rank >= 0 && rank < size) {
    v[1 + static_cast<std::size_t>(rank)] = waited_;
    v[1 + static_cast<std::size_t>(size + rank)] =
        std::max(std::chrono::duration<double>(now - window_start_).count(), 1e-9);
  }
  window_start_ = now;
  waited_ = 0;
  calls_ = 0;
  epoch_at_start_ = epoch;
  started_ = true;
  return v;
}

std::vector<Straggler> StragglerWatch::judge(std::span<const double> summed,
                                             const std::vector<int>& members) {
  const std::size_t size = members.size();
  std::vector<Straggler> confirmed;
  if (summed.size() != 1 + 2 * size || summed[0] != 0) {
    late_before_.clear();
    confirmed_before_.clear();
    return confirmed;
  }
  std::vector<Straggler> late =
      late_members(summed.subspan(1, size), summed.subspan(1 + size, size), fraction_ / 2);
  std::map<int, Straggler> late_now;
  for (Straggler& s : late) {
    s.member = members[static_cast<std::size_t>(s.rank)];
    late_now[s.member] = s;
    const auto before = late_before_.find(s.member);
    if (before == late_before_.end()) continue;
    // The two windows together: lateness over their joint length.
    const Straggler& b = before->second;
    Straggler both = s;
    both.late_share = (b.late_share * b.window + s.late_share * s.window) / (b.window + s.window);
    both.window = b.window + s.window;
    both.again = confirmed_before_.count(s.member) > 0;
    if (both.late_share >= fraction_) confirmed.push_back(both);
  }
  late_before_ = std::move(late_now);
  confirmed_before_.clear();
  for (const Straggler& s : confirmed) confirmed_before_.insert(s.member);
  return confirmed;
}

}  // namespace ringmend
