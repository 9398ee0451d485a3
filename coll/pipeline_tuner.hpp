// The shape of the shared-memory pipeline (chunk size and depth), chosen per
// message size by measuring this node rather than fixed for one machine.
//
// Why measure: the best chunk depends on the caches. A chunk that a peer
// reads while it still sits in the writer's private L2 costs a
// core-to-core transfer per line; a larger one has left for the shared L3
// by then and reads faster, until the buffers outgrow the L3. On two 2-core
// AMD EPYC VMs of the same kind, the same default (256 KiB) gave 20 GB/s on
// one and 3 GB/s on the other, where 1 MiB gave 12 GB/s.
//
// How: calls are grouped by size class (the power of two at or below their
// size) and by node size. The first calls of a class try each candidate
// chunk in turn (round-robin, kTrials timed calls each); the class then
// keeps the candidate with the lowest median time. Only local rank 0's
// tuner decides (its choice travels in its call descriptor), so the ranks of
// a node always agree. Across nodes the pieces on the rails must match,
// so a multi-node layout uses the fixed geometry. Pinning the chunk or the
// depth (RINGMEND_SHM_CHUNK_BYTES / RINGMEND_SHM_DEPTH, or RINGMEND_SHM_TUNE=0)
// turns the measurement off.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ringmend::coll {

struct PipelineGeometry {
  std::size_t chunk_bytes = 0;  // one pipeline chunk
  std::size_t depth = 0;        // chunk buffers per rank in flight
  friend bool operator==(const PipelineGeometry&, const PipelineGeometry&) = default;
};

class PipelineTuner {
 public:
  static constexpr int kTrials = 3;  // timed calls per candidate
  static constexpr std::size_t kMaxDepth = 8;

  // `buffer_bytes`: each rank's pipeline buffers in the node segment; `fixed`:
  // the geometry used when not tuning (it must fit the buffers); `tune`:
  // whether to measure at all.
  PipelineTuner(std::size_t buffer_bytes, PipelineGeometry fixed, bool tune);

  // The geometry for a call of `bytes` on a node of `ranks` ranks.
  PipelineGeometry propose(std::size_t bytes, int ranks, bool multi_node);
  // Records how long a call of `bytes` took with `used`.
  void record(std::size_t bytes, int ranks, bool multi_node, PipelineGeometry used, double seconds);

  // The chosen geometry of a size class, once its trials are over (for
  // logs and tests); nullptr while still measuring or not tuned.
  const PipelineGeometry* chosen(std::size_t bytes, int ranks) const;
  // The candidates for calls of `bytes`, in trial order.
  std::vector<PipelineGeometry> candidates(std::size_t bytes) const;

  // Told each decision, in one line (the runtime logs it).
  std::function<void(const std::string&)> on_decision;

 private:
  struct SizeClass {
    std::vector<PipelineGeometry> candidates;
    std::vector<std::vector<double>> times;  // per candidate
    std::size_t next = 0;                    // trial order: candidate next % size
    bool decided = false;
    PipelineGeometry best;
  };
  using Key = std::pair<int, int>;  // (log2 of the size class, ranks)
  bool tuning(bool multi_node) const { return tune_ && !multi_node; }
  static Key key_of(std::size_t bytes, int ranks);
  SizeClass& class_of(std::size_t bytes, int ranks);

  std::size_t buffer_bytes_;
  PipelineGeometry fixed_;
  bool tune_;
  std::map<Key, SizeClass> classes_;
};

}  // namespace ringmend::coll
