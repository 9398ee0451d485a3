// The one place that picks an algorithm for a call, and the peers an epoch
// must connect for the algorithms it may pick.
#pragma once

#include <cstddef>
#include <vector>

#include "coll/algorithm.hpp"

namespace ringmend::coll {

// Every algorithm, in order of preference.
const std::vector<const Algorithm*>& algorithms();

// The first algorithm of algorithms() that applies; throws std::logic_error
// if none does.
const Algorithm& select(CollectiveKind kind, std::size_t bytes, const Layout& layout, const Tuning& tuning);

// The ranks `rank` exchanges with under any algorithm usable in `layout`
// (sorted, without duplicates, without `rank`).
std::vector<int> peers_needed(const Layout& layout, int rank);

}  // namespace ringmend::coll
