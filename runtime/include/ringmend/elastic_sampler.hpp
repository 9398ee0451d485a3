// An elastic sampler: splits each epoch's samples over the members, and
// deals out again, after a membership change, the samples not yet consumed,
// so that within an epoch every sample is processed exactly once whatever
// ranks die, join or leave (docs/elastic.md).
//
//   ringmend::ElasticSampler sampler(dataset_size, per_rank_batch, seed);
//   sampler.register_state(world, "sampler");  // a joiner gets the position
//   while (sampler.epoch() < epochs) {
//     const auto batch = sampler.next(world);  // this rank's sample ids
//     compute_gradient(batch, grad);
//     world.allreduce(std::span<float>(grad), ringmend::ReduceOp::Sum);
//     sampler.complete(world);                 // what the step consumed
//     update(model, grad);
//   }
//
// A step deals out the epoch's samples not yet consumed, in the epoch's
// order (a permutation of 0..N-1 drawn from the seed and the epoch): the
// rank at position p of the membership takes `per_rank` samples after the
// first p * per_rank. complete() then counts, from the membership after the
// collective, which positions' samples the result contains:
//   - a member still present computed its own position's samples;
//   - a joiner admitted in the call took a lost member's position (ranks
//     keep their numbers under replacement: docs/elastic.md) and computed
//     that position's samples, from the sampler state it received;
//   - a member lost and not replaced contributed nothing: its samples are
//     dealt out again, first, at the next step;
//   - when a survivor had finished the step before the failure, every
//     member completes it with the dead member's contribution in, and the
//     membership changes at the next call: all its samples count.
// Every member computes the same from the same membership, so the sampler
// needs no communication of its own. Release and grow happen between
// steps, so the next step is dealt out over the new membership.
//
// The sampler's state (the epoch, the position in it, the samples dealt out
// again, the step in flight) is registered with register_state(): a spare
// admitted in a step's call resumes that step. The permutation is not part
// of it: every member draws it from the seed (std::mt19937_64, whose output
// the standard fixes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ringmend/ringmend.hpp"

namespace ringmend {

class ElasticSampler {
 public:
  // `samples` in the data set (> 0), `per_rank` samples per rank and step
  // (> 0); `shuffle` false: the epoch's order is 0..N-1. Throws
  // Error(InvalidArgument) for a zero count.
  ElasticSampler(std::uint64_t samples, std::uint32_t per_rank, std::uint64_t seed = 0, bool shuffle = true);

  std::uint64_t epoch() const { return epoch_; }
  std::uint64_t samples() const { return samples_; }
  // Samples of the current epoch not consumed yet (those of a step in
  // flight included).
  std::uint64_t remaining() const;
  bool step_in_flight() const { return in_flight_; }

  // This rank's samples for the step (an empty list when the epoch's last
  // step has fewer samples than ranks take). Deals the step out over the
  // membership, or, while a step is in flight (a joiner that resumes it),
  // returns this member's share of that step again.
  std::vector<std::uint64_t> next(const Communicator& comm) { return next(comm.rank(), comm.member_ids()); }
  // After the step's collective returned on every member: counts what it
  // consumed, and returns those samples' ids (the same on every member: what
  // the step's result contains); the epoch ends, and the next begins, when
  // nothing is left.
  std::vector<std::uint64_t> complete(const Communicator& comm) { return complete(comm.member_ids()); }
  // Registers the sampler's state with `comm` under `name`.
  void register_state(Communicator& comm, const std::string& name) {
    comm.register_state(
        name, [this] { return save(); }, [this](std::span<const std::byte> b) { load(b); });
  }

  // The same on plain data: `rank` and `members` (member id per rank) as
  // Communicator::rank() and member_ids() give them.
  std::vector<std::uint64_t> next(int rank, std::span<const int> members);
  std::vector<std::uint64_t> complete(std::span<const int> members);
  std::vector<std::byte> save() const;
  void load(std::span<const std::byte> bytes);  // Error(InvalidArgument) if it is not a saved sampler

 private:
  // The i-th sample of the step's deal: the samples dealt out again first,
  // then the epoch's order from the cursor.
  std::uint64_t dealt(std::uint64_t i) const;
  std::vector<std::uint64_t> share(std::uint64_t position) const;
  void start_epoch();

  std::uint64_t samples_;
  std::uint64_t per_rank_;
  std::uint64_t seed_;
  bool shuffle_;
  std::uint64_t epoch_ = 0;
  std::vector<std::uint64_t> order_;     // the epoch's permutation (not saved: drawn from the seed)
  std::uint64_t cursor_ = 0;             // samples of order_ dealt out so far
  std::vector<std::uint64_t> returned_;  // dealt out, not consumed: dealt out again first
  // The step in flight: the member id at each position, and how many
  // samples it deals out.
  bool in_flight_ = false;
  std::vector<int> plan_;
  std::uint64_t plan_count_ = 0;
};

}  // namespace ringmend
