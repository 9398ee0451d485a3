// Positions in a ring (or any ordered group) of channel ranks, and the
// segment schedule of a ring allreduce: written once for every algorithm.
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace ringmend::coll {

// Index of `rank` in `group`; throws std::logic_error when it is not there.
inline std::size_t position_in(const std::vector<int>& group, int rank) {
  const auto it = std::find(group.begin(), group.end(), rank);
  if (it == group.end()) throw std::logic_error("rank " + std::to_string(rank) + " is not in the group");
  return static_cast<std::size_t>(it - group.begin());
}

struct RingPosition {
  std::size_t n = 0;  // ranks in the ring
  std::size_t p = 0;  // this rank's position
  int left = -1;      // channel rank before this one (receives come from it)
  int right = -1;     // channel rank after this one (sends go to it)

  static RingPosition of(const std::vector<int>& ring, int rank) {
    RingPosition r;
    r.n = ring.size();
    r.p = position_in(ring, rank);
    r.left = ring[(r.p + r.n - 1) % r.n];
    r.right = ring[(r.p + 1) % r.n];
    return r;
  }

  // The segment (of n) received at `step` of a ring allreduce: steps
  // 0 .. n-2 are the reduce-scatter, n-1 .. 2n-3 the allgather.
  std::size_t recv_segment(std::size_t step) const {
    return step < n - 1 ? (p + 2 * n - step - 1) % n : (p + 2 * n - (step - (n - 1))) % n;
  }
};

// The ring neighbours of `rank` (none in a ring of one; one in a ring of two).
inline std::vector<int> ring_neighbours(const std::vector<int>& ring, int rank) {
  if (ring.size() < 2 || std::find(ring.begin(), ring.end(), rank) == ring.end()) return {};
  const RingPosition r = RingPosition::of(ring, rank);
  if (r.left == r.right) return {r.left};
  return {r.left, r.right};
}

}  // namespace ringmend::coll
