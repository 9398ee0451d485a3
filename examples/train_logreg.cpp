// Data-parallel training that survives a rank being killed.
//
// Logistic regression on synthetic data (fixed seeds): every rank holds its
// own shard, computes the gradient of its shard each step, and ringmend
// allreduces the gradients. When a rank dies mid-run, ringmend shrinks the
// job and the step is completed by the survivors; training continues on
// their shards. At the end the current rank 0 replays the whole training
// serially, with the contributors each step actually had, and checks that
// the distributed model matches it.
//
//   mpirun ... train_logreg [--steps=N] [--samples=N] [--features=N]
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

  comm.on_membership_change([&](const ringmend::MembershipChange& m) {
    if (m.new_rank != 0) return;
    std::string lost;
    for (int w : m.lost) lost += (lost.empty() ? "" : ", ") + std::to_string(w);
    std::printf(
        "membership change: lost member(s) %s; %d -> %d ranks, epoch %llu; rebuilt in %.1f ms "
        "(revoke+shrink %.1f ms, new plan/shared memory/endpoints %.1f ms)\n",
        lost.c_str(), m.old_size, m.new_size, static_cast<unsigned long long>(m.new_epoch),
        m.recovery_seconds * 1e3, m.shrink_seconds * 1e3, m.rebuild_seconds * 1e3);
    std::fflush(stdout);
  });

  const Shard shard = make_shard(me, samples, d);
  std::vector<float> w(static_cast<std::size_t>(d), 0.f), buf(static_cast<std::size_t>(d) + 2);
  std::vector<std::vector<int>> contributors_per_step;
  double first_recovered_done = 0;
  for (int step = 0; step < steps; ++step) {
    local_gradient(shard, w, buf);
    ringmend::CollectiveResult r = comm.allreduce(std::span<float>(buf), ringmend::ReduceOp::Sum);
    std::set<int> who(comm.member_ids().begin(), comm.member_ids().end());
    if (r.contributors > comm.size()) who.insert(r.lost.begin(), r.lost.end());
    contributors_per_step.emplace_back(who.begin(), who.end());
    if (r.recovered && first_recovered_done == 0) first_recovered_done = realtime_now();
    apply(w, buf, lr);
    if (comm.rank() == 0 && (step % 10 == 0 || step == steps - 1 || r.recovered))
      std::printf("step %3d  loss %.6f  ranks %d%s\n", step,
                  buf[static_cast<std::size_t>(d)] / buf[static_cast<std::size_t>(d) + 1], r.contributors,
                  r.recovered ? "  (recovered: step completed by the survivors)" : "");
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
    // Serial replay with the contributors each step actually had.
    std::vector<Shard> shards;
    for (int r = 0; r < world_size; ++r) shards.push_back(make_shard(r, samples, d));
    std::vector<float> ref(static_cast<std::size_t>(d), 0.f), sum(buf.size()), part(buf.size());
    float final_loss = 0;
    for (int step = 0; step < steps; ++step) {
      std::fill(sum.begin(), sum.end(), 0.f);
      for (int r : contributors_per_step[static_cast<std::size_t>(step)]) {
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
