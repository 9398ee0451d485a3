// Data-parallel training that survives a rank being killed.
//
// Logistic regression on synthetic data (fixed seeds): every rank holds its
// own shard, computes the gradient of its shard each step, and ringmend
// allreduces the gradients. When a rank dies mid-run, ringmend shrinks the
// job and the step is completed by the survivors; training continues on
// their shards. With spares (ringmend-run --spares S), a spare takes the
// dead rank's place and its shard instead, and receives the model, the step
// and the training's history (registered state) before it joins the step:
// the job keeps its size. At the end the current rank 0 replays the whole
// training serially, with the shards that contributed to each step, and
// checks that the distributed model matches it.
//
//   mpirun ... train_logreg [--steps=N] [--samples=N] [--features=N]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ringmend/ringmend.hpp"

namespace {

struct Shard {
  std::vector<float> x;  // samples x features, row-major
  std::vector<float> y;
};

int arg(int argc, char** argv, const char* name, int fallback) {
  const std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) return std::atoi(argv[i] + prefix.size());
  return fallback;
}

std::vector<float> true_weights(int d) {
  std::mt19937_64 rng(42);
  std::normal_distribution<float> n(0.f, 1.f);
  std::vector<float> w(static_cast<std::size_t>(d));
  for (auto& v : w) v = n(rng);
  return w;
}

float sigmoid(float z) { return 1.f / (1.f + std::exp(-z)); }

Shard make_shard(int world_rank, int samples, int d) {
  std::mt19937_64 rng(1000 + static_cast<unsigned>(world_rank));
  std::normal_distribution<float> n(0.f, 1.f);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  const auto w = true_weights(d);
  Shard s;
  s.x.resize(static_cast<std::size_t>(samples) * static_cast<std::size_t>(d));
  s.y.resize(static_cast<std::size_t>(samples));
  for (int i = 0; i < samples; ++i) {
    float z = 0;
    for (int j = 0; j < d; ++j) {
      float v = n(rng);
      s.x[static_cast<std::size_t>(i * d + j)] = v;
      z += v * w[static_cast<std::size_t>(j)];
    }
    s.y[static_cast<std::size_t>(i)] = u(rng) < sigmoid(z) ? 1.f : 0.f;
  }
  return s;
}

// Gradient sum (d entries), loss sum and sample count of one shard, packed
// in the layout that is allreduced.
void local_gradient(const Shard& s, const std::vector<float>& w, std::vector<float>& out) {
  const std::size_t d = w.size(), n = s.y.size();
  std::fill(out.begin(), out.end(), 0.f);
  for (std::size_t i = 0; i < n; ++i) {
    const float* x = &s.x[i * d];
    float z = 0;
    for (std::size_t j = 0; j < d; ++j) z += x[j] * w[j];
    const float p = sigmoid(z), err = p - s.y[i];
    for (std::size_t j = 0; j < d; ++j) out[j] += err * x[j];
    out[d] += -(s.y[i] * std::log(p + 1e-7f) + (1 - s.y[i]) * std::log(1 - p + 1e-7f));
  }
  out[d + 1] = static_cast<float>(n);
}

void apply(std::vector<float>& w, const std::vector<float>& sum, float lr) {
  const std::size_t d = w.size();
  for (std::size_t j = 0; j < d; ++j) w[j] -= lr * sum[j] / sum[d + 1];
}

// The history (member ids that contributed to each step) and the shard of
// each member, as bytes: registered state that a spare receives.
std::vector<std::byte> to_bytes(const std::vector<std::vector<int>>& lists) {
  std::vector<int> flat;
  for (const auto& l : lists) {
    flat.push_back(static_cast<int>(l.size()));
    flat.insert(flat.end(), l.begin(), l.end());
  }
  const auto* b = reinterpret_cast<const std::byte*>(flat.data());
  return {b, b + flat.size() * sizeof(int)};
}

std::vector<std::vector<int>> from_bytes(std::span<const std::byte> bytes) {
  std::vector<int> flat(bytes.size() / sizeof(int));
  std::memcpy(flat.data(), bytes.data(), flat.size() * sizeof(int));
  std::vector<std::vector<int>> lists;
  for (std::size_t i = 0; i < flat.size(); i += static_cast<std::size_t>(flat[i]) + 1)
    lists.emplace_back(flat.begin() + static_cast<long>(i) + 1,
                       flat.begin() + static_cast<long>(i) + 1 + flat[i]);
  return lists;
}

double realtime_now() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

int train(int argc, char** argv) {
  const int steps = arg(argc, argv, "steps", 60);
  const int samples = arg(argc, argv, "samples", 4000);
  const int d = arg(argc, argv, "features", 32);
  const float lr = 0.5f;

  ringmend::Runtime rt(&argc, &argv);
  ringmend::Communicator& comm = rt.world();
  const int world_size = comm.size();
  const int me = comm.member_id();
  if (comm.rank() == 0)
    std::printf("train_logreg: %d ranks, %d samples x %d features per rank, %d steps; %s\n", world_size,
                samples, d, steps, rt.fault_tolerance_status().c_str());

  // Member id -> shard index: a member started with the job holds the shard
  // of its id; a spare takes the shard of the rank it replaces (its rank).
  std::vector<std::vector<int>> shard_of{{}};  // one list: shard_of[0][id]
  auto shard_slot = [&](int id) -> int& {
    auto& map = shard_of[0];
    if (map.size() <= static_cast<std::size_t>(id)) map.resize(static_cast<std::size_t>(id) + 1, -1);
    return map[static_cast<std::size_t>(id)];
  };
  for (int id : comm.member_ids()) shard_slot(id) = id;
  comm.on_membership_change([&](const ringmend::MembershipChange& m) {
    for (int id : m.joined) {
      const auto& ids = comm.member_ids();
      shard_slot(id) = static_cast<int>(std::find(ids.begin(), ids.end(), id) - ids.begin());
    }
    if (m.new_rank != 0) return;
    std::string lost, joined;
    for (int w : m.lost) lost += (lost.empty() ? "" : ", ") + std::to_string(w);
    for (int w : m.joined) joined += (joined.empty() ? "" : ", ") + std::to_string(w);
    std::printf(
        "membership change: lost member(s) %s; %d -> %d ranks, epoch %llu; rebuilt in %.1f ms "
        "(revoke+shrink %.1f ms, new plan/shared memory/endpoints %.1f ms)\n",
        lost.c_str(), m.old_size, m.new_size, static_cast<unsigned long long>(m.new_epoch),
        m.recovery_seconds * 1e3, m.shrink_seconds * 1e3, m.rebuild_seconds * 1e3);
    if (!joined.empty())
      std::printf(
          "membership change: spare(s) %s admitted in the lost ranks' places, with the model, in %.1f ms\n",
          joined.c_str(), m.admit_seconds * 1e3);
    std::fflush(stdout);
  });

  // The state a spare needs to take a rank's place: the model, the step,
  // the history (for the check at the end) and the shards.
  std::vector<float> w(static_cast<std::size_t>(d), 0.f), buf(static_cast<std::size_t>(d) + 2);
  std::vector<std::vector<int>> contributors_per_step;
  int step = 0;
  comm.register_state("model", std::span<float>(w));
  comm.register_state("step", &step, sizeof step);
  comm.register_state(
      "history", [&] { return to_bytes(contributors_per_step); },
      [&](std::span<const std::byte> b) { contributors_per_step = from_bytes(b); });
  comm.register_state(
      "shards", [&] { return to_bytes(shard_of); },
      [&](std::span<const std::byte> b) { shard_of = from_bytes(b); });
  if (comm.joined()) {
    shard_slot(me) = comm.rank();
    std::printf("spare %d joined at rank %d, step %d: it takes the shard of rank %d\n", me, comm.rank(), step,
                comm.rank());
    std::fflush(stdout);
  }
  const Shard shard = make_shard(shard_slot(me), samples, d);
  double first_recovered_done = 0;
  for (; step < steps; ++step) {
    local_gradient(shard, w, buf);
    ringmend::CollectiveResult r = comm.allreduce(std::span<float>(buf), ringmend::ReduceOp::Sum);
    std::set<int> who;
    for (int id : comm.member_ids()) who.insert(shard_slot(id));
    if (r.contributors > comm.size())
      for (int id : r.lost) who.insert(shard_slot(id));
    contributors_per_step.emplace_back(who.begin(), who.end());
    if (r.recovered && first_recovered_done == 0) first_recovered_done = realtime_now();
    apply(w, buf, lr);
    if (comm.rank() == 0 && (step % 10 == 0 || step == steps - 1 || r.recovered))
      std::printf("step %3d  loss %.6f  ranks %d%s\n", step,
                  buf[static_cast<std::size_t>(d)] / buf[static_cast<std::size_t>(d) + 1], r.contributors,
                  !r.recovered ? ""
                  : r.joined.empty()
                      ? "  (recovered: step completed by the survivors)"
                      : "  (recovered: step completed with the spare in the lost rank's place)");
  }

  int status = 0;
  if (comm.rank() == 0) {
    // Recovery time from the moment of death, when the fault injector
    // recorded it (RINGMEND_FAULT_RECORD).
    if (const char* rec = std::getenv("RINGMEND_FAULT_RECORD"); rec && first_recovered_done > 0) {
      std::ifstream in(rec);
      int victim = -1;
      double died = 0;
      if (in >> victim >> died)
        std::printf("recovery time: %.1f ms from the death of member %d to the next completed allreduce\n",
                    (first_recovered_done - died) * 1e3, victim);
    }
    // Serial replay with the shards that contributed to each step.
    std::vector<Shard> shards;
    for (std::size_t r = 0; r < shard_of[0].size(); ++r)
      shards.push_back(make_shard(static_cast<int>(r), samples, d));
    std::vector<float> ref(static_cast<std::size_t>(d), 0.f), sum(buf.size()), part(buf.size());
    float final_loss = 0;
    for (std::size_t t = 0; t < contributors_per_step.size(); ++t) {
      std::fill(sum.begin(), sum.end(), 0.f);
      for (int r : contributors_per_step[t]) {
        local_gradient(shards[static_cast<std::size_t>(r)], ref, part);
        for (std::size_t j = 0; j < sum.size(); ++j) sum[j] += part[j];
      }
      final_loss = sum[static_cast<std::size_t>(d)] / sum[static_cast<std::size_t>(d) + 1];
      apply(ref, sum, lr);
    }
    double max_diff = 0;
    for (std::size_t j = 0; j < w.size(); ++j)
      max_diff = std::max(max_diff, double(std::fabs(w[j] - ref[j])));
    const bool match = max_diff < 1e-3;
    std::printf(
        "final loss %.6f on %d ranks (epoch %llu); serial reference loss %.6f; max |w - w_ref| = %.2e: %s\n",
        buf[static_cast<std::size_t>(d)] / buf[static_cast<std::size_t>(d) + 1], comm.size(),
        static_cast<unsigned long long>(comm.epoch()), final_loss, max_diff,
        match ? "MATCHES the reference" : "DIFFERS from the reference");
    status = match ? 0 : 1;
  }
  return status;
}

int main(int argc, char** argv) {
  // A bad setting, or a failure ringmend cannot recover from (too few ranks
  // left, a mismatched call): a clear message and a non-zero status.
  try {
    return train(argc, argv);
  } catch (const ringmend::Error& e) {
    std::fprintf(stderr, "train_logreg: %s\n", e.what());
    return 1;
  }
}
