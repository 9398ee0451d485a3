#include "coll/pipeline_tuner.hpp"

#include <algorithm>
#include <bit>
#include <sstream>
#include <stdexcept>

#include "ringmend/core/sizes.hpp"

namespace ringmend::coll {
namespace {

// From a chunk whose handshakes cost little against its copy, to the size
// where a rank's buffers (depth x chunk) approach a private L2.
constexpr std::size_t kChunks[] = {64 * KiB, 128 * KiB, 256 * KiB, 512 * KiB, 1 * MiB, 2 * MiB};

// The smallest size of the class of `bytes` (a power of two).
std::size_t class_floor(std::size_t bytes) { return std::size_t{1} << (std::bit_width(bytes) - 1); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

PipelineTuner::PipelineTuner(std::size_t buffer_bytes, PipelineGeometry fixed, bool tune)
    : buffer_bytes_(buffer_bytes), fixed_(fixed), tune_(tune) {
  if (fixed_.chunk_bytes == 0 || fixed_.depth == 0 || fixed_.chunk_bytes * fixed_.depth > buffer_bytes_)
    throw std::invalid_argument("pipeline tuner: the fixed geometry does not fit the buffers");
}

std::vector<PipelineGeometry> PipelineTuner::candidates(std::size_t bytes) const {
  std::vector<PipelineGeometry> out;
  for (std::size_t chunk : kChunks) {
    // Double buffering at least; deeper while the buffers allow.
    const std::size_t depth = std::min(kMaxDepth, buffer_bytes_ / chunk);
    if (depth < 2) break;
    out.push_back({chunk, depth});
    // Larger chunks than the message behave as this one: a single chunk.
    if (chunk >= bytes) break;
  }
  if (out.empty()) out.push_back(fixed_);
  return out;
}

PipelineTuner::Key PipelineTuner::key_of(std::size_t bytes, int ranks) {
  return {std::bit_width(bytes), ranks};
}

PipelineTuner::SizeClass& PipelineTuner::class_of(std::size_t bytes, int ranks) {
  auto [it, fresh] = classes_.try_emplace(key_of(bytes, ranks));
  if (fresh) {
    // Every call of the class gets the candidates of its smallest size.
    it->second.candidates = candidates(class_floor(bytes));
    it->second.times.resize(it->second.candidates.size());
    it->second.decided = it->second.candidates.size() == 1;
    it->second.best = it->second.candidates.front();
  }
  return it->second;
}

PipelineGeometry PipelineTuner::propose(std::size_t bytes, int ranks, bool multi_node) {
  if (!tuning(multi_node) || bytes == 0) return fixed_;
  SizeClass& c = class_of(bytes, ranks);
  if (c.decided) return c.best;
  return c.candidates[c.next % c.candidates.size()];
}

void PipelineTuner::record(std::size_t bytes, int ranks, bool multi_node, PipelineGeometry used,
                           double seconds) {
  if (!tuning(multi_node) || bytes == 0) return;
  SizeClass& c = class_of(bytes, ranks);
  if (c.decided) return;
  const std::size_t i = c.next % c.candidates.size();
  if (!(c.candidates[i] == used)) return;  // not the trial in progress
  c.times[i].push_back(seconds);
  ++c.next;
  if (c.next < c.candidates.size() * kTrials) return;
  std::size_t best = 0;
  for (std::size_t k = 1; k < c.candidates.size(); ++k)
    if (median(c.times[k]) < median(c.times[best])) best = k;
  c.best = c.candidates[best];
  c.decided = true;
  if (on_decision) {
    std::ostringstream line;
    line << "shared-memory pipeline for " << ranks << " ranks, " << class_floor(bytes) / KiB
         << " KiB and up: chunk " << c.best.chunk_bytes / KiB << " KiB x " << c.best.depth << " (median us:";
    for (std::size_t k = 0; k < c.candidates.size(); ++k)
      line << ' ' << c.candidates[k].chunk_bytes / KiB << "K=" << static_cast<long>(median(c.times[k]) * 1e6);
    line << ')';
    on_decision(line.str());
  }
}

const PipelineGeometry* PipelineTuner::chosen(std::size_t bytes, int ranks) const {
  auto it = classes_.find(key_of(bytes, ranks));
  return it != classes_.end() && it->second.decided ? &it->second.best : nullptr;
}

}  // namespace ringmend::coll
