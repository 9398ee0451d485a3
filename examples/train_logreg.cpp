// Data-parallel training that survives ranks being killed, and grows and
// shrinks on request.
//
// Logistic regression by mini-batch gradient descent on a synthetic data set
// (fixed seeds) that every rank holds. An ElasticSampler deals each step's
// samples out over the ranks; every rank computes the gradient of its share
// and ringmend allreduces the gradients. When a rank dies mid-run, ringmend
// shrinks the job and the step is completed by the survivors; the dead
// rank's samples are dealt out again at the next step, so no sample of an
// epoch is lost or counted twice. With spares (ringmend-run --spares S), a
// spare takes the dead rank's place and its share of the step instead, and
// receives the model, the step, the sampler and the training's history
// (registered state) before it joins the step: the job keeps its size.
// --grow-at and --release-at ask for more ranks (from the spares) and give
// ranks back at those steps. At the end the current rank 0 replays the
// whole training serially, with the samples that entered each step, and
// checks that the distributed model matches it.
//
//   mpirun ... train_logreg [--steps=N] [--samples=N] [--batch=N] [--features=N]
//                           [--grow-at=STEP [--grow=K]] [--release-at=STEP [--release=RANK]]
//                           [--check-repeat-at=STEP]
// (a request at STEP comes before that step; --release defaults to the last rank;
// --check-repeat-at makes the replay count the sample of STEP the model fits worst twice:
// the check must fail)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ringmend/elastic_sampler.hpp"
#include "ringmend/ringmend.hpp"

namespace {

// The data set: samples x features, row-major, and the labels.
struct DataSet {
  std::vector<float> x;
  std::vector<float> y;
  std::size_t d = 0;
};

// A flag this example does not know (a misspelled --release-at, say) is an
// error, not a request silently left out.
void require_known_flags(int argc, char** argv) {
  static constexpr const char* known[] = {"steps", "samples",    "batch",   "features",       "grow-at",
                                          "grow",  "release-at", "release", "check-repeat-at"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string name = a.rfind("--", 0) == 0 ? a.substr(2, a.find('=') - 2) : a;
    if (std::find(std::begin(known), std::end(known), name) == std::end(known))
      throw ringmend::Error(ringmend::Errc::InvalidArgument,
                            "unknown argument '" + a +
                                "' (usage: --steps= --samples= --batch= --features= --grow-at= --grow= "
                                "--release-at= --release= --check-repeat-at=)");
  }
}

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

// How many times what reordering the sums alone does to the model a run
// may differ from the serial replay by (see the check at the end).
constexpr double kOrderFactor = 8;

float sigmoid(float z) { return 1.f / (1.f + std::exp(-z)); }

// Every rank makes the same data set (each sample from its own seed).
DataSet make_data(int samples, int d) {
  const auto w = true_weights(d);
  DataSet s;
  s.d = static_cast<std::size_t>(d);
  s.x.resize(static_cast<std::size_t>(samples) * s.d);
  s.y.resize(static_cast<std::size_t>(samples));
  for (int i = 0; i < samples; ++i) {
    std::mt19937_64 rng(1000 + static_cast<unsigned>(i));
    std::normal_distribution<float> n(0.f, 1.f);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    float z = 0;
    for (std::size_t j = 0; j < s.d; ++j) {
      const float v = n(rng);
      s.x[static_cast<std::size_t>(i) * s.d + j] = v;
      z += v * w[j];
    }
    s.y[static_cast<std::size_t>(i)] = u(rng) < sigmoid(z) ? 1.f : 0.f;
  }
  return s;
}

// Gradient sum (d entries), loss sum and sample count of some samples,
// packed in the layout that is allreduced.
void local_gradient(const DataSet& data, const std::vector<std::uint64_t>& ids, const std::vector<float>& w,
                    std::vector<float>& out) {
  const std::size_t d = w.size();
  std::fill(out.begin(), out.end(), 0.f);
  for (std::uint64_t i : ids) {
    const float* x = &data.x[i * d];
    const float y = data.y[i];
    float z = 0;
    for (std::size_t j = 0; j < d; ++j) z += x[j] * w[j];
    const float p = sigmoid(z), err = p - y;
    for (std::size_t j = 0; j < d; ++j) out[j] += err * x[j];
    out[d] += -(y * std::log(p + 1e-7f) + (1 - y) * std::log(1 - p + 1e-7f));
  }
  out[d + 1] = static_cast<float>(ids.size());
}

// The sample of `ids` the model `w` fits worst (the largest |p - y|): the
// one whose second count moves the model most (one that fits well moves
// it by next to nothing, and no check of the model could see it).
std::uint64_t worst_fit(const DataSet& data, const std::vector<std::uint64_t>& ids,
                        const std::vector<float>& w) {
  std::uint64_t worst = ids.front();
  float largest = -1;
  for (std::uint64_t i : ids) {
    float z = 0;
    for (std::size_t j = 0; j < w.size(); ++j) z += data.x[i * w.size() + j] * w[j];
    if (const float e = std::fabs(sigmoid(z) - data.y[i]); e > largest) largest = e, worst = i;
  }
  return worst;
}

void apply(std::vector<float>& w, const std::vector<float>& sum, float lr) {
  const std::size_t d = w.size();
  for (std::size_t j = 0; j < d; ++j) w[j] -= lr * sum[j] / sum[d + 1];
}

// The history (the samples that entered each step), as bytes: registered
// state that a spare receives.
std::vector<std::byte> to_bytes(const std::vector<std::vector<std::uint64_t>>& lists) {
  std::vector<std::uint64_t> flat;
  for (const auto& l : lists) {
    flat.push_back(l.size());
    flat.insert(flat.end(), l.begin(), l.end());
  }
  const auto* b = reinterpret_cast<const std::byte*>(flat.data());
  return {b, b + flat.size() * sizeof(std::uint64_t)};
}

std::vector<std::vector<std::uint64_t>> from_bytes(std::span<const std::byte> bytes) {
  std::vector<std::uint64_t> flat(bytes.size() / sizeof(std::uint64_t));
  std::memcpy(flat.data(), bytes.data(), flat.size() * sizeof(std::uint64_t));
  std::vector<std::vector<std::uint64_t>> lists;
  for (std::size_t i = 0; i < flat.size(); i += flat[i] + 1)
    lists.emplace_back(flat.begin() + static_cast<long>(i) + 1,
                       flat.begin() + static_cast<long>(i + 1 + flat[i]));
  return lists;
}

double realtime_now() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

int train(int argc, char** argv) {
  require_known_flags(argc, argv);
  const int steps = arg(argc, argv, "steps", 60);
  const int samples = arg(argc, argv, "samples", 16000);
  const int batch = arg(argc, argv, "batch", 500);
  const int d = arg(argc, argv, "features", 32);
  const int grow_at = arg(argc, argv, "grow-at", -1), grow = arg(argc, argv, "grow", 1);
  const int release_at = arg(argc, argv, "release-at", -1), release = arg(argc, argv, "release", -1);
  const float lr = 0.5f;
  const int repeat_at = arg(argc, argv, "check-repeat-at", -1);

  // Made before the Runtime starts: a spare has its data when admitted.
  const DataSet data = make_data(samples, d);
  std::optional<ringmend::Runtime> runtime;
  runtime.emplace(&argc, &argv);
  ringmend::Runtime& rt = *runtime;
  ringmend::Communicator& comm = rt.world();
  const int me = comm.member_id();
  if (comm.rank() == 0)
    std::printf("train_logreg: %d ranks, %d samples x %d features, %d per rank and step, %d steps; %s\n",
                comm.size(), samples, d, batch, steps, rt.fault_tolerance_status().c_str());
  comm.on_membership_change([&](const ringmend::MembershipChange& m) {
    if (m.new_rank != 0) return;
    const auto ids = [](const std::vector<int>& v) {
      std::string s;
      for (int id : v) s += (s.empty() ? "" : ", ") + std::to_string(id);
      return s;
    };
    if (!m.lost.empty())
      std::printf(
          "membership change: lost member(s) %s; %d -> %d ranks, epoch %llu; rebuilt in %.1f ms "
          "(revoke+shrink %.1f ms, new plan/shared memory/endpoints %.1f ms)\n",
          ids(m.lost).c_str(), m.old_size, m.new_size, static_cast<unsigned long long>(m.new_epoch),
          m.recovery_seconds * 1e3, m.shrink_seconds * 1e3, m.rebuild_seconds * 1e3);
    if (!m.joined.empty())
      std::printf("membership change: spare(s) %s admitted%s, with the model, in %.1f ms: %d ranks\n",
                  ids(m.joined).c_str(), m.lost.empty() ? "" : " in the lost ranks' places",
                  m.admit_seconds * 1e3, m.new_size);
    if (!m.released.empty())
      std::printf("membership change: member(s) %s released: %d ranks\n", ids(m.released).c_str(),
                  m.new_size);
    std::fflush(stdout);
  });

  // The state a spare needs to take a rank's place: the model, the step,
  // the sampler (where the epoch stands, and the step in flight) and the
  // history (for the check at the end).
  ringmend::ElasticSampler sampler(static_cast<std::uint64_t>(samples), static_cast<std::uint32_t>(batch), 1);
  std::vector<float> w(static_cast<std::size_t>(d), 0.f), buf(static_cast<std::size_t>(d) + 2);
  std::vector<std::vector<std::uint64_t>> history;  // samples that entered each step
  int step = 0;
  comm.register_state("model", std::span<float>(w));
  comm.register_state("step", &step, sizeof step);
  sampler.register_state(comm, "sampler");
  comm.register_state(
      "history", [&] { return to_bytes(history); },
      [&](std::span<const std::byte> b) { history = from_bytes(b); });
  if (comm.joined()) {
    std::printf("spare %d joined at rank %d of %d, step %d (epoch %llu of the data)\n", me, comm.rank(),
                comm.size(), step, static_cast<unsigned long long>(sampler.epoch()));
    std::fflush(stdout);
  }
  double first_recovered_done = 0;
  while (step < steps) {
    local_gradient(data, sampler.next(comm), w, buf);
    ringmend::CollectiveResult r = comm.allreduce(std::span<float>(buf), ringmend::ReduceOp::Sum);
    history.push_back(sampler.complete(comm));
    if (r.recovered && !r.lost.empty() && first_recovered_done == 0) first_recovered_done = realtime_now();
    apply(w, buf, lr);
    // The registered step names the next one before any request: a spare
    // that a grow admits resumes there.
    const int done = step++;
    if (comm.rank() == 0 && (done % 10 == 0 || done == steps - 1 || r.recovered))
      std::printf(
          "step %3d  loss %.6f  ranks %d  samples %zu%s\n", done,
          buf[static_cast<std::size_t>(d)] / buf[static_cast<std::size_t>(d) + 1], comm.size(),
          history.back().size(),
          !r.recovered ? ""
          : r.joined.empty()
              ? "  (recovered: step completed by the survivors; the lost rank's samples come next step)"
              : "  (recovered: step completed with the spare in the lost rank's place)");
    if (step == grow_at) {
      const ringmend::CollectiveResult g = comm.grow(grow);
      if (comm.rank() == 0)
        std::printf("after step %3d  grow(%d): %zu spare(s) joined: %d ranks\n", done, grow, g.joined.size(),
                    comm.size());
    }
    if (step == release_at) {
      const int rank = release >= 0 ? release : comm.size() - 1;
      const ringmend::CollectiveResult g = comm.release({rank});
      if (g.left) {
        std::printf("member %d released after step %d: it leaves the job\n", me, done);
        return 0;
      }
      if (comm.rank() == 0)
        std::printf("after step %3d  release(rank %d): %d ranks\n", done, rank, comm.size());
    }
  }

  // The check below replays the whole training on one rank, which takes
  // seconds: after the shutdown, so that the others do not wait for it in
  // theirs (bounded by RINGMEND_FINALIZE_TIMEOUT). Long work after the last
  // collective (a final checkpoint, say) belongs there too.
  const bool checks = comm.rank() == 0;
  const int final_size = comm.size();
  const auto final_epoch = static_cast<unsigned long long>(comm.epoch());
  runtime.reset();
  int status = 0;
  if (checks) {
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
    // Serial replay with the samples that entered each step, in their order
    // and again in the reverse order: float sums depend on the order, and
    // the two replays differ by what reordering alone does to the model
    // (the distributed run sums in yet another order). A match must be
    // within a small multiple of that, far below what one sample counted
    // twice in the last steps does (--check-repeat-at=STEP shows it: the
    // replay counts the sample of STEP the model fits worst twice, and the
    // check must fail).
    const auto replay = [&](bool reversed, float* loss) {
      std::vector<float> model(static_cast<std::size_t>(d), 0.f), sum(buf.size());
      for (std::size_t s = 0; s < history.size(); ++s) {
        std::vector<std::uint64_t> ids = history[s];
        if (static_cast<int>(s) == repeat_at && !ids.empty()) ids.push_back(worst_fit(data, ids, model));
        if (reversed) std::reverse(ids.begin(), ids.end());
        local_gradient(data, ids, model, sum);
        if (loss) *loss = sum[static_cast<std::size_t>(d)] / sum[static_cast<std::size_t>(d) + 1];
        apply(model, sum, lr);
      }
      return model;
    };
    float final_loss = 0;
    const std::vector<float> ref = replay(false, &final_loss), reordered = replay(true, nullptr);
    double max_diff = 0, order_diff = 0, largest = 0;
    for (std::size_t j = 0; j < w.size(); ++j) {
      max_diff = std::max(max_diff, double(std::fabs(w[j] - ref[j])));
      order_diff = std::max(order_diff, double(std::fabs(reordered[j] - ref[j])));
      largest = std::max(largest, double(std::fabs(ref[j])));
    }
    // At least a few units in the last place of the largest weight.
    const double tolerance = std::max(kOrderFactor * order_diff, 8 * 1.1920929e-7 * largest);
    const bool match = max_diff <= tolerance;
    std::printf(
        "final loss %.6f on %d ranks (epoch %llu); serial reference loss %.6f; max |w - w_ref| = %.2e "
        "(tolerance %.2e: %g x the %.2e a reordered replay differs by): %s\n",
        buf[static_cast<std::size_t>(d)] / buf[static_cast<std::size_t>(d) + 1], final_size, final_epoch,
        final_loss, max_diff, tolerance, kOrderFactor, order_diff,
        match ? "MATCHES the reference" : "DIFFERS from the reference");
    status = match ? 0 : 1;
  }
  return status;
}

int main(int argc, char** argv) {
  // Whole lines: under `srun -o` the log (stderr, unbuffered) shares the
  // file, and a buffered block of stdout would be cut by its lines.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // A bad setting, or a failure ringmend cannot recover from (too few ranks
  // left, a mismatched call): a clear message and a non-zero status.
  try {
    return train(argc, argv);
  } catch (const ringmend::Error& e) {
    std::fprintf(stderr, "train_logreg: %s\n", e.what());
    return 1;
  }
}
