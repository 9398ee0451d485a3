#include "coll/selector.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "coll/chain_broadcast.hpp"
#include "coll/pairwise_alltoall.hpp"
#include "coll/recursive_doubling.hpp"
#include "coll/ring_allgather.hpp"
#include "coll/ring_allreduce.hpp"
#include "coll/ring_reduce_scatter.hpp"
#include "coll/shm_allreduce.hpp"

namespace ringmend::coll {

const std::vector<const Algorithm*>& algorithms() {
  static const ShmOneShotAllreduce shm_one_shot;
  static const ShmPipelinedAllreduce shm_pipelined;
  static const RecursiveDoublingAllreduce recursive_doubling;
  static const RingAllreduce ring;
  static const ChainBroadcast chain;
  static const RingAllgather ring_allgather;
  static const RingReduceScatter ring_reduce_scatter;
  static const PairwiseAlltoall pairwise_alltoall;
  // One per line: a new algorithm is a line here.
  static const std::vector<const Algorithm*> all{
      &shm_one_shot,         //
      &shm_pipelined,        //
      &recursive_doubling,   //
      &ring,                 //
      &chain,                //
      &ring_allgather,       //
      &ring_reduce_scatter,  //
      &pairwise_alltoall,    //
  };
  return all;
}

const Algorithm& select(CollectiveKind kind, std::size_t bytes, const Layout& layout, const Tuning& tuning) {
  for (const Algorithm* a : algorithms())
    if (a->usable(layout) && a->applies(kind, bytes, layout, tuning)) return *a;
  throw std::logic_error(std::string("no algorithm for a ") + name_of(kind) + " of " + std::to_string(bytes) +
                         " bytes");
}

std::vector<int> peers_needed(const Layout& layout, int rank) {
  std::vector<int> peers;
  for (const Algorithm* a : algorithms()) {
    if (!a->usable(layout)) continue;
    const std::vector<int> more = a->peers(layout, rank);
    peers.insert(peers.end(), more.begin(), more.end());
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  std::erase(peers, rank);
  return peers;
}

}  // namespace ringmend::coll
