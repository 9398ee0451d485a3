#include "ringmend/elastic_sampler.hpp"

#include <algorithm>
#include <cstring>
#include <random>

#include "ringmend/core/error.hpp"

namespace ringmend {
namespace {

// The saved state's first word: what it is, and its layout's version.
constexpr std::uint64_t kMagic = 0x72696e676d6e6401ull;  // "ringmnd", version 1

bool contains(std::span<const int> ids, int id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

}  // namespace

ElasticSampler::ElasticSampler(std::uint64_t samples, std::uint32_t per_rank, std::uint64_t seed,
                               bool shuffle)
    : samples_(samples), per_rank_(per_rank), seed_(seed), shuffle_(shuffle) {
  if (samples == 0 || per_rank == 0)
    throw Error(Errc::InvalidArgument,
                "ElasticSampler: the sample count and the samples per rank must be > 0");
  start_epoch();
}

void ElasticSampler::start_epoch() {
  order_.resize(samples_);
  for (std::uint64_t i = 0; i < samples_; ++i) order_[i] = i;
  if (shuffle_) {
    // Fisher-Yates with a bound taken by multiplication (Lemire): the same
    // order on every member, whatever its standard library (whose
    // distributions the standard does not fix).
    std::mt19937_64 rng(seed_ * 0x9e3779b97f4a7c15ull + epoch_);
    for (std::uint64_t i = samples_ - 1; i > 0; --i) {
      const auto j = static_cast<std::uint64_t>((static_cast<unsigned __int128>(rng()) * (i + 1)) >> 64);
      std::swap(order_[i], order_[j]);
    }
  }
  cursor_ = 0;
  returned_.clear();
  in_flight_ = false;
  plan_.clear();
  plan_count_ = 0;
}

std::uint64_t ElasticSampler::remaining() const { return returned_.size() + (samples_ - cursor_); }

std::uint64_t ElasticSampler::dealt(std::uint64_t i) const {
  return i < returned_.size() ? returned_[i] : order_[cursor_ + (i - returned_.size())];
}

std::vector<std::uint64_t> ElasticSampler::share(std::uint64_t position) const {
  std::vector<std::uint64_t> out;
  const std::uint64_t begin = std::min(position * per_rank_, plan_count_);
  const std::uint64_t end = std::min(begin + per_rank_, plan_count_);
  for (std::uint64_t i = begin; i < end; ++i) out.push_back(dealt(i));
  return out;
}

std::vector<std::uint64_t> ElasticSampler::next(int rank, std::span<const int> members) {
  if (rank < 0 || static_cast<std::size_t>(rank) >= members.size())
    throw Error(Errc::InvalidArgument, "ElasticSampler::next: rank " + std::to_string(rank) + " of " +
                                           std::to_string(members.size()) + " members");
  const int me = members[static_cast<std::size_t>(rank)];
  if (!in_flight_) {
    plan_.assign(members.begin(), members.end());
    plan_count_ = std::min<std::uint64_t>(per_rank_ * members.size(), remaining());
    in_flight_ = true;
  }
  // A member of the plan takes its position there; a joiner resuming the
  // step took a lost member's position, which is its rank.
  const auto at = std::find(plan_.begin(), plan_.end(), me);
  return share(at != plan_.end() ? static_cast<std::uint64_t>(at - plan_.begin())
                                 : static_cast<std::uint64_t>(rank));
}

std::vector<std::uint64_t> ElasticSampler::complete(std::span<const int> members) {
  if (!in_flight_)
    throw Error(Errc::InvalidArgument, "ElasticSampler::complete: no step in flight (call next())");
  std::vector<bool> consumed(plan_.size(), false);
  for (std::size_t p = 0; p < plan_.size(); ++p) consumed[p] = contains(members, plan_[p]);
  for (std::size_t q = 0; q < members.size() && q < plan_.size(); ++q)
    if (!contains(plan_, members[q])) consumed[q] = true;  // a joiner computed position q
  std::vector<std::uint64_t> again, used;
  for (std::size_t p = 0; p < plan_.size(); ++p)
    for (std::uint64_t id : share(p)) (consumed[p] ? used : again).push_back(id);
  // Samples dealt out again that this step did not reach stay first.
  if (returned_.size() > plan_count_)
    again.insert(again.end(), returned_.begin() + static_cast<std::ptrdiff_t>(plan_count_), returned_.end());
  cursor_ += plan_count_ - std::min<std::uint64_t>(plan_count_, returned_.size());
  returned_ = std::move(again);
  in_flight_ = false;
  plan_.clear();
  plan_count_ = 0;
  if (remaining() == 0) {
    ++epoch_;
    start_epoch();
  }
  return used;
}

std::vector<std::byte> ElasticSampler::save() const {
  std::vector<std::uint64_t> w{kMagic,      samples_, per_rank_,  seed_,       shuffle_ ? 1u : 0u,
                               epoch_,      cursor_,  in_flight_, plan_count_, returned_.size(),
                               plan_.size()};
  w.insert(w.end(), returned_.begin(), returned_.end());
  for (int id : plan_) w.push_back(static_cast<std::uint64_t>(static_cast<std::int64_t>(id)));
  std::vector<std::byte> out(w.size() * sizeof(std::uint64_t));
  std::memcpy(out.data(), w.data(), out.size());
  return out;
}

void ElasticSampler::load(std::span<const std::byte> bytes) {
  const auto bad = [] {
    return Error(Errc::InvalidArgument, "ElasticSampler::load: not a saved sampler state");
  };
  constexpr std::size_t kHead = 11;
  if (bytes.size() % sizeof(std::uint64_t) || bytes.size() < kHead * sizeof(std::uint64_t)) throw bad();
  std::vector<std::uint64_t> w(bytes.size() / sizeof(std::uint64_t));
  std::memcpy(w.data(), bytes.data(), bytes.size());
  if (w[0] != kMagic || w[1] == 0 || w[2] == 0 || w.size() != kHead + w[9] + w[10] || w[6] > w[1])
    throw bad();
  samples_ = w[1];
  per_rank_ = w[2];
  seed_ = w[3];
  shuffle_ = w[4] != 0;
  epoch_ = w[5];
  start_epoch();  // the epoch's order, from the seed
  cursor_ = w[6];
  in_flight_ = w[7] != 0;
  plan_count_ = w[8];
  returned_.assign(w.begin() + kHead, w.begin() + static_cast<std::ptrdiff_t>(kHead + w[9]));
  plan_.clear();
  for (std::size_t i = kHead + w[9]; i < w.size(); ++i)
    plan_.push_back(static_cast<int>(static_cast<std::int64_t>(w[i])));
  if (plan_count_ > remaining()) throw bad();
}

}  // namespace ringmend
