// What an algorithm is: a way to run one kind of collective over channels,
// which says when it applies, which peers it needs and whether a call it
// ran can have finished on some ranks only.
//
// Each algorithm has its own header (ring_allreduce.hpp, recursive_doubling
// .hpp, shm_allreduce.hpp, chain_broadcast.hpp); selector.hpp lists them
// all and picks one per call. A new algorithm is one more header and one
// more line in the selector's list.
#pragma once

#include <cstddef>
#include <vector>

#include "coll/args.hpp"
#include "coll/wire_header.hpp"
#include "transport/channel.hpp"
#include "transport/progress.hpp"

namespace ringmend::transport {
class ShmNode;
}

namespace ringmend::coll {

// The part of an epoch's plan the algorithms use, in channel (communicator)
// ranks.
struct Layout {
  std::vector<int> ring;         // every rank, nodes in order, each in local order
  bool node_shm = false;         // the ranks of each node share a segment (hierarchical path)
  std::vector<int> local_ranks;  // ranks of this node, in local order (index = shm slot)
  std::vector<int> leaders;      // every node's leader (its first local rank), in node order
  std::vector<int> rail_ring;    // ranks on this rank's rail, in node order; empty if none
  int rails = 1;                 // slices per chunk: ranks carrying a rail on every node
  bool multi_node() const { return leaders.size() > 1; }
};

// The channels of an epoch, as the fabric (transport/fabric.hpp) opened them.
struct Channels {
  transport::ShmNode* node = nullptr;   // this node's segment; null without node_shm
  transport::Channel* inter = nullptr;  // to ranks of other nodes (UCX); null on one node
  transport::Channel* flat = nullptr;   // to any rank: shared memory inside the node, else `inter`
};

class PipelineTuner;

struct Tuning {
  std::size_t small_bytes = 0;  // latency algorithms up to this size
  std::size_t chunk_bytes = 0;  // pipeline chunk of the channel algorithms
  // The shared-memory pipeline's shape per call (pipeline_tuner.hpp); null:
  // the default shape.
  PipelineTuner* pipeline = nullptr;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual AlgorithmId id() const = 0;
  // Whether it may run some call in this layout (its peers are then set up).
  virtual bool usable(const Layout& layout) const = 0;
  // Whether it runs a call of `kind` and `bytes` in this layout.
  virtual bool applies(CollectiveKind kind, std::size_t bytes, const Layout& layout,
                       const Tuning& tuning) const = 0;
  // The ranks `rank` exchanges with when it runs this algorithm.
  virtual std::vector<int> peers(const Layout& layout, int rank) const = 0;
  // Whether its calls in this layout can end with every rank waiting until
  // all have finished (AllreduceArgs::finish_together): then a call is
  // finished everywhere or nowhere, and its result needs no retained copy.
  // Only for algorithms of large messages, where that wait costs less than
  // the copy.
  virtual bool finishes_together(const Layout&, const Channels&) const { return false; }
  // Whether it reads a staged input (AllreduceArgs::staging) part by part,
  // waiting for each, so that copying the input in overlaps its messages.
  virtual bool reads_staged_input() const { return false; }
  virtual void run(const Call& call, const Channels& channels, const Layout& layout, const Tuning& tuning,
                   transport::WaitContext& ctx) const = 0;
};

}  // namespace ringmend::coll
