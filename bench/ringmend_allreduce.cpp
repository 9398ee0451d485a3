// OSU-style allreduce latency/bandwidth benchmark for ringmend, side by side
// with MPI_Allreduce of the same MPI in the same job. The options and the
// columns: kAbout and kColumns below (what --help prints), bench/README.md.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_cli.hpp"
#include "bench/bench_util.hpp"
#include "bench/memory_bound.hpp"
#include "ringmend/ringmend.hpp"

namespace {

namespace rb = ringmend::bench;

enum class Bound { Auto, On, Off };

struct Options {
  std::size_t min_bytes = 4, max_bytes = 1 << 22;
  std::optional<int> iters, warmup;  // unset: OSU's defaults, by size
  bool full = false, validate = false;
  ringmend::DataType type = ringmend::DataType::Float32;
  std::string impl = "both";
  Bound bound = Bound::Auto;
  rb::BoundOptions::Statistic bound_stat = rb::BoundOptions::Statistic::Best;
  std::string json;
};

// The head of --help: what the program measures and how to read it.
constexpr const char* kAbout =
    "OSU-style allreduce latency/bandwidth benchmark for ringmend, side by side with MPI_Allreduce of the "
    "same MPI in the same job.";
constexpr const char* kColumns =
    R"(Avg Latency is the mean over ranks of each rank's mean time per call (as OSU
computes it); Min/Max (-f) are the smallest and largest per-rank means.
algbw = size / time, busbw = algbw * 2(n-1)/n (nccl-tests' definitions).
The operation is always sum; buffers are out of place and reused (as OSU).

Memory bound (on by default when all ranks share one node): the time this
node needs for the least memory traffic of an allreduce of S bytes
(memory_bound.hpp), measured before the sweep; bound = its busbw, and
bound% = busbw / bound. A measurement above 100 % would mean the model is
wrong; the program says so. See bench/README.md.)";

Options parse(int argc, char** argv) {
  Options o;
  rb::Cli cli("ringmend_allreduce", kAbout, kColumns);
  cli.add_message_sizes(o.min_bytes, o.max_bytes, 1);
  cli.add_iterations(o.iters, "timed calls per size (default: OSU's, 1000 up to 8 KiB, 100 above)");
  cli.add_warmup(o.warmup, "warm-up calls per size (default: OSU's, 200 up to 8 KiB, 20 above)");
  cli.add_full(o.full);
  cli.add_validation(o.validate);
  cli.add_type(o.type, {"float", "double", "int", "long", "half", "bfloat16"});
  cli.add_impl(o.impl, {"ringmend", "mpi", "both"});
  auto* on = cli.app().add_flag_function(
      "--bound", [&o](std::int64_t) { o.bound = Bound::On; }, "memory-bound columns (default: on one node)");
  auto* off = cli.app().add_flag_function(
      "--no-bound", [&o](std::int64_t) { o.bound = Bound::Off; }, "no memory-bound columns");
  on->excludes(off);
  cli.add_choice(
         "--bound-stat", o.bound_stat,
         {{"best", rb::BoundOptions::Statistic::Best}, {"median", rb::BoundOptions::Statistic::Median}},
         "statistic of the bound's trials")
      ->default_str("best");
  cli.add_json(o.json);
  cli.add_check([&o]() -> std::string {
    if (ringmend::size_of(o.type) == 2 && o.impl != "ringmend")
      return "MPI has no 16-bit float type: --type half and --type bfloat16 need --impl ringmend";
    return {};
  });
  cli.parse(argc, argv);
  return o;
}

using rb::Stats;

int iterations(const Options& o, std::size_t bytes) { return rb::collective_iterations(o.iters, bytes); }
int warmups(const Options& o, std::size_t bytes) { return rb::collective_warmups(o.warmup, bytes); }

template <class F>
Stats time_it(const Options& o, std::size_t bytes, MPI_Comm comm, F&& call) {
  return rb::time_calls(warmups(o, bytes), iterations(o, bytes), comm, call);
}

// One result line of one implementation (the JSON file has one per
// implementation and size; the text output puts both on one line).
struct Row {
  std::size_t bytes = 0, count = 0;
  std::string impl;
  Stats s;
  double algbw = 0, busbw = 0;                            // GB/s (1e9)
  std::optional<double> ratio;                            // MPI time / ringmend time
  std::optional<double> traffic, bound_busbw, bound_pct;  // GB/s, GB/s, percent
  std::optional<long> wrong;
};

Row make_row(std::size_t bytes, std::size_t count, const std::string& impl, const Stats& s, double bus,
             const std::optional<rb::BoundResult>& bound) {
  Row r;
  r.bytes = bytes;
  r.count = count;
  r.impl = impl;
  r.s = s;
  r.algbw = s.avg_us > 0 ? static_cast<double>(bytes) / (s.avg_us * 1e3) : 0;
  r.busbw = r.algbw * bus;
  if (bound && bound->seconds > 0) {
    r.traffic = bound->traffic_per_second / 1e9;
    r.bound_busbw = static_cast<double>(bytes) / (bound->seconds * 1e9) * bus;
    r.bound_pct = *r.bound_busbw > 0 ? 100.0 * r.busbw / *r.bound_busbw : 0;
  }
  return r;
}

void fill_inputs(std::vector<std::byte>& in, std::size_t count, ringmend::DataType type, int rank) {
  // Inputs rank+1 (small integers: exact in every type); the sum is n(n+1)/2.
  for (std::size_t i = 0; i < count; ++i) {
    switch (type) {
      case ringmend::DataType::Float32:
        reinterpret_cast<float*>(in.data())[i] = float(rank + 1);
        break;
      case ringmend::DataType::Float64:
        reinterpret_cast<double*>(in.data())[i] = double(rank + 1);
        break;
      case ringmend::DataType::Int32:
        reinterpret_cast<std::int32_t*>(in.data())[i] = rank + 1;
        break;
      case ringmend::DataType::Int64:
        reinterpret_cast<std::int64_t*>(in.data())[i] = rank + 1;
        break;
      case ringmend::DataType::Float16:
        reinterpret_cast<ringmend::float16*>(in.data())[i] = ringmend::to_float16(float(rank + 1));
        break;
      case ringmend::DataType::BFloat16:
        reinterpret_cast<ringmend::bfloat16*>(in.data())[i] = ringmend::to_bfloat16(float(rank + 1));
        break;
    }
  }
}

long count_wrong(const std::vector<std::byte>& out, std::size_t count, ringmend::DataType type, int n) {
  const double expect = n * (n + 1) / 2.0;
  long wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    double v = 0;
    switch (type) {
      case ringmend::DataType::Float32:
        v = reinterpret_cast<const float*>(out.data())[i];
        break;
      case ringmend::DataType::Float64:
        v = reinterpret_cast<const double*>(out.data())[i];
        break;
      case ringmend::DataType::Int32:
        v = reinterpret_cast<const std::int32_t*>(out.data())[i];
        break;
      case ringmend::DataType::Int64:
        v = static_cast<double>(reinterpret_cast<const std::int64_t*>(out.data())[i]);
        break;
      case ringmend::DataType::Float16:
        v = ringmend::to_float(reinterpret_cast<const ringmend::float16*>(out.data())[i]);
        break;
      case ringmend::DataType::BFloat16:
        v = ringmend::to_float(reinterpret_cast<const ringmend::bfloat16*>(out.data())[i]);
        break;
    }
    wrong += v != expect;
  }
  return wrong;
}

rb::Json row_json(const Row& r, const std::string& type, int iters, int warmup) {
  rb::Json row = rb::allreduce_row(r.bytes, r.count, type, r.impl, r.s, r.algbw, r.busbw);
  row["ratio"] = rb::or_null(r.ratio);
  row["bound_traffic_GBps"] = rb::or_null(r.traffic);
  row["bound_busbw_GBps"] = rb::or_null(r.bound_busbw);
  row["bound_pct"] = rb::or_null(r.bound_pct);
  row["wrong"] = rb::or_null(r.wrong);
  row["iterations"] = iters;
  row["warmup"] = warmup;
  return row;
}

}  // namespace

namespace {
int run(int argc, char** argv);
}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    // A clear message (bad RINGMEND_* or UCX_* value, a failure without
    // fault tolerance), not std::terminate.
    std::fprintf(stderr, "ringmend_allreduce: %s\n", e.what());
    return 1;
  }
}

namespace {
int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  rb::start_mpi_under_srun(&argc, &argv);  // its MPI baseline needs MPI
  ringmend::Runtime rt(&argc, &argv);
  ringmend::Communicator& comm = rt.world();
  const int n = comm.size(), rank = comm.rank();
  const std::size_t esize = ringmend::size_of(o.type);
  const std::vector<std::size_t> sizes = rb::size_sweep(o.min_bytes, o.max_bytes, esize);
  const std::size_t largest = sizes.empty() ? esize : sizes.back();
  std::vector<std::byte> in(largest + esize), out(largest + esize);
  std::fill(in.begin(), in.end(), std::byte{0});
  std::fill(out.begin(), out.end(), std::byte{0});
  const bool run_r = o.impl != "mpi", run_m = o.impl != "ringmend";
  const double bus = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  const std::string type_name(ringmend::name_of(o.type));

  rb::JobLayout layout = rb::job_layout(MPI_COMM_WORLD);
  rb::JsonFile json_file;
  if (!o.json.empty()) {
    json_file = rb::open_json_file(MPI_COMM_WORLD, o.json, "ringmend_allreduce");
    if (!json_file.ok) {
      MPI_Comm_free(&layout.node_comm);
      return 2;
    }
  }
  const rb::RunInfo info = rb::run_info(MPI_COMM_WORLD, layout, argc, argv, ringmend::version());

  const bool bounded = o.bound == Bound::On || (o.bound == Bound::Auto && layout.single_node());
  std::vector<rb::BoundResult> bounds;
  rb::BoundOptions probe;
  probe.statistic = o.bound_stat;
  if (bounded) bounds = rb::probe_memory_bound(MPI_COMM_WORLD, sizes, layout.max_ranks_per_node, probe);

  if (rank == 0) {
    std::printf("# OSU MPI Allreduce Latency Test (ringmend %s, %d ranks, %s, impl %s)\n",
                ringmend::version(), n, type_name.c_str(), o.impl.c_str());
    if (bounded) {
      std::printf(
          "# bound: the least memory traffic of an allreduce per rank, (2n-1)/n*S read + S written (n = "
          "%d),\n"
          "#        timed on each rank's own buffers with every rank of the node at once (%s of %d "
          "trials)%s\n",
          layout.max_ranks_per_node, o.bound_stat == rb::BoundOptions::Statistic::Best ? "best" : "median",
          probe.trials,
          layout.single_node() ? "" : "; the job spans several nodes: the network is not modelled");
    }
    std::printf("%-12s%16s", "# Size", "Avg Latency(us)");
    if (o.full) std::printf("%16s%16s%12s", "Min Latency(us)", "Max Latency(us)", "Iterations");
    std::printf("%14s%14s", "algbw(GB/s)", "busbw(GB/s)");
    if (bounded) std::printf("%14s%10s", "bound(GB/s)", "bound%");
    if (o.impl == "both") std::printf("%18s%14s%12s", "MPI Avg Lat(us)", "MPI busbw", "ratio");
    if (o.validate) std::printf("%10s", "#wrong");
    std::printf("\n");
    std::fflush(stdout);
  }

  std::vector<Row> rows;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::size_t bytes = sizes[k];
    const std::size_t count = bytes / esize;
    const std::optional<rb::BoundResult> bound =
        bounded ? std::optional<rb::BoundResult>(bounds[k]) : std::nullopt;
    Stats r{}, m{};
    if (run_r)
      r = time_it(o, bytes, MPI_COMM_WORLD,
                  [&] { comm.allreduce(in.data(), out.data(), count, o.type, ringmend::ReduceOp::Sum); });
    if (run_m)
      m = time_it(o, bytes, MPI_COMM_WORLD, [&] {
        MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), rb::mpi_type_of(o.type), MPI_SUM,
                      MPI_COMM_WORLD);
      });
    std::optional<long> wrong;
    if (o.validate && run_r) {
      fill_inputs(in, count, o.type, rank);
      comm.allreduce(in.data(), out.data(), count, o.type, ringmend::ReduceOp::Sum);
      long mine = count_wrong(out, count, o.type, n), total = 0;
      MPI_Reduce(&mine, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
      wrong = total;
      std::fill(in.begin(), in.end(), std::byte{0});
    }
    if (rank != 0) continue;
    std::optional<Row> rr, mr;
    if (run_r) {
      rr = make_row(bytes, count, "ringmend", r, bus, bound);
      rr->wrong = wrong;
    }
    if (run_m) mr = make_row(bytes, count, "mpi", m, bus, bound);
    if (rr && mr) rr->ratio = m.avg_us / r.avg_us;

    const Row& p = rr ? *rr : *mr;  // the implementation in the main columns
    std::printf("%-12zu%16.2f", bytes, p.s.avg_us);
    if (o.full) std::printf("%16.2f%16.2f%12d", p.s.min_us, p.s.max_us, iterations(o, bytes));
    std::printf("%14.3f%14.3f", p.algbw, p.busbw);
    if (bounded) std::printf("%14.3f%10.1f", p.bound_busbw.value_or(0), p.bound_pct.value_or(0));
    if (rr && mr) std::printf("%18.2f%14.3f%12.2f", mr->s.avg_us, mr->busbw, *rr->ratio);
    if (o.validate) std::printf("%10ld", wrong.value_or(0));
    std::printf("\n");
    std::fflush(stdout);
    if (rr) rows.push_back(*rr);
    if (mr) rows.push_back(*mr);
  }
  // A bound is a bound only while nothing beats it.
  if (rank == 0 && bounded)
    for (const Row& row : rows)
      if (row.bound_pct && *row.bound_pct > 100.0)
        std::printf("# WARNING: %s at %zu bytes ran at %.0f%% of the memory bound: the model is wrong\n",
                    row.impl.c_str(), row.bytes, *row.bound_pct);

  int status = 0;
  if (json_file.file) {
    const char* statistic = o.bound_stat == rb::BoundOptions::Statistic::Best ? "best" : "median";
    rb::Json parameters = {{"min_bytes", o.min_bytes},
                           {"max_bytes", o.max_bytes},
                           // null: OSU's defaults by size (each row gives its count)
                           {"iterations", rb::or_null(o.iters)},
                           {"warmup", rb::or_null(o.warmup)},
                           {"type", type_name},
                           {"op", "sum"},
                           {"impl", o.impl},
                           {"validate", o.validate},
                           {"busbw_factor", bus},
                           {"bound", bounded}};
    if (bounded)
      parameters["bound_model"] = {
          {"traffic_per_rank", "(2n-1)/n*S read + S written"},
          {"t_bound", "time of that traffic on each rank's own buffers in 64 KiB blocks, all ranks at once"},
          {"busbw_bound", "S/t_bound*2(n-1)/n"},
          {"statistic", statistic},
          {"trials", probe.trials},
          {"ranks_per_node", layout.max_ranks_per_node}};
    rb::Json json_rows = rb::Json::array();
    for (const Row& row : rows)
      json_rows.push_back(row_json(row, type_name, iterations(o, row.bytes), warmups(o, row.bytes)));
    const rb::Json doc = {{"benchmark", "allreduce"},
                          {"run", rb::run_json(info)},
                          {"parameters", parameters},
                          {"rows", json_rows}};
    if (!rb::finish_json_file(json_file, doc, o.json, "ringmend_allreduce")) status = 1;
  }
  MPI_Comm_free(&layout.node_comm);
  return status;
}
}  // namespace
