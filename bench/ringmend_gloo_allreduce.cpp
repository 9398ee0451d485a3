// Gloo CPU baseline: gloo::allreduce over Gloo's TCP transport, with the
// columns of ringmend_allreduce (OSU latency semantics, nccl-tests algbw and
// busbw), on the same sizes.
//
//   ringmend_gloo_allreduce [-m [MIN:]MAX] [-i N] [-x N] [-f] [-c]
//                           [-T float|double|int|long] [--algo ring|bcube]
//                           [--host ADDRESS | --iface NAME] [--timeout SECONDS]
//                           [--json FILE]          (--help: every option)
//
// Gloo's pairs are connected through MPI (each rank's TCP addresses are
// exchanged with MPI_Allgather, as gloo::mpi::Context does; Debian's Gloo is
// built without its MPI module), so the program runs under mpirun like the
// others and needs no shared directory or key-value store.
#include <gloo/allreduce.h>
#include <gloo/config.h>
#include <gloo/context.h>
#include <gloo/math.h>
#include <gloo/transport/context.h>
#include <gloo/transport/device.h>
#include <gloo/transport/tcp/device.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_cli.hpp"
#include "bench/bench_util.hpp"

namespace {

namespace rb = ringmend::bench;

enum class Type { Float, Double, Int, Long };

struct Options {
  std::size_t min_bytes = 4, max_bytes = 1 << 22;
  std::optional<int> iters, warmup;  // unset: OSU's defaults, by size
  bool full = false, validate = false;
  Type type = Type::Float;
  std::string algo = "ring";
  std::string host, iface;
  int timeout_s = 60;
  std::string json;
};

Options parse(int argc, char** argv) {
  Options o;
  rb::Cli cli("ringmend_gloo_allreduce",
              "Gloo CPU baseline: gloo::allreduce over Gloo's TCP transport, with the columns of "
              "ringmend_allreduce (OSU latency semantics, nccl-tests algbw and busbw), on the same sizes.",
              "Gloo's pairs are connected through MPI (each rank's TCP addresses are exchanged with "
              "MPI_Allgather): run it under mpirun like the others. See bench/README.md.");
  cli.add_message_sizes(o.min_bytes, o.max_bytes, 1);
  cli.add_iterations(o.iters, "timed calls per size (default: OSU's, 1000 up to 8 KiB, 100 above)");
  cli.add_warmup(o.warmup, "warm-up calls per size (default: OSU's, 200 up to 8 KiB, 20 above)");
  cli.add_full(o.full);
  cli.add_validation(o.validate);
  cli.add_choice("-T,--type", o.type,
                 {{"float", Type::Float}, {"double", Type::Double}, {"int", Type::Int}, {"long", Type::Long}},
                 "element type (sum of these)")
      ->default_str("float");
  cli.add_name("--algo", o.algo, {"ring", "bcube"}, "Gloo's allreduce algorithm");
  auto* host = cli.app()
                   .add_option("--host", o.host,
                               "address Gloo's TCP device listens on "
                               "(default: 127.0.0.1 on one node, else this host's name)")
                   ->type_name("ADDRESS");
  auto* iface = cli.app()
                    .add_option("--iface", o.iface, "network interface Gloo's TCP device listens on")
                    ->type_name("NAME");
  host->excludes(iface);
  cli.add_timeout(o.timeout_s, "Gloo's operation timeout");
  cli.add_json(o.json);
  cli.parse(argc, argv);
  return o;
}

std::size_t size_of(Type t) { return t == Type::Float || t == Type::Int ? 4 : 8; }

const char* name_of(Type t) {
  switch (t) {
    case Type::Float:
      return "float32";
    case Type::Double:
      return "float64";
    case Type::Int:
      return "int32";
    case Type::Long:
      return "int64";
  }
  return "?";
}

// A Gloo context whose pairs are connected by exchanging their addresses
// over MPI (the scheme of gloo::mpi::Context::connectFullMesh).
class MpiConnectedContext final : public gloo::Context {
 public:
  MpiConnectedContext(int my_rank, int ranks) : gloo::Context(my_rank, ranks) {}

  void connect_full_mesh(MPI_Comm comm, const std::shared_ptr<gloo::transport::Device>& device) {
    auto transport = device->createContext(rank, size);
    transport->setTimeout(getTimeout());
    std::vector<std::vector<char>> mine(static_cast<std::size_t>(size));
    unsigned long longest = 0;
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      auto& pair = transport->createPair(peer);
      mine[static_cast<std::size_t>(peer)] = pair->address().bytes();
      longest = std::max<unsigned long>(longest, mine[static_cast<std::size_t>(peer)].size());
    }
    MPI_Allreduce(MPI_IN_PLACE, &longest, 1, MPI_UNSIGNED_LONG, MPI_MAX, comm);
    // Slot [r][p]: rank r's address for its pair with rank p.
    const std::size_t slot = longest, row = slot * static_cast<std::size_t>(size);
    std::vector<char> in(row), all(row * static_cast<std::size_t>(size));
    for (int peer = 0; peer < size; ++peer) {
      const auto& a = mine[static_cast<std::size_t>(peer)];
      std::copy(a.begin(), a.end(),
                in.begin() + static_cast<std::ptrdiff_t>(slot * static_cast<std::size_t>(peer)));
    }
    MPI_Allgather(in.data(), static_cast<int>(row), MPI_BYTE, all.data(), static_cast<int>(row), MPI_BYTE,
                  comm);
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      const std::size_t at = static_cast<std::size_t>(peer) * row + static_cast<std::size_t>(rank) * slot;
      std::vector<char> address(all.begin() + static_cast<std::ptrdiff_t>(at),
                                all.begin() + static_cast<std::ptrdiff_t>(at + slot));
      transport->getPair(peer)->connect(address);
    }
    device_ = device;
    transportContext_ = std::move(transport);
  }
};

using ReduceFn = void (*)(void*, const void*, const void*, std::size_t);

template <class T>
ReduceFn sum_fn() {
  return static_cast<ReduceFn>(&gloo::sum<T>);
}

ReduceFn reduce_fn(Type t) {
  switch (t) {
    case Type::Float:
      return sum_fn<float>();
    case Type::Double:
      return sum_fn<double>();
    case Type::Int:
      return sum_fn<std::int32_t>();
    case Type::Long:
      return sum_fn<std::int64_t>();
  }
  return nullptr;
}

// Out-of-place allreduce options for `count` elements of `t`.
std::unique_ptr<gloo::AllreduceOptions> make_options(const std::shared_ptr<gloo::Context>& context, Type t,
                                                     std::byte* in, std::byte* out, std::size_t count,
                                                     const std::string& algo) {
  auto opts = std::make_unique<gloo::AllreduceOptions>(context);
  auto set = [&](auto* typed_in, auto* typed_out) {
    opts->setInput(typed_in, count);
    opts->setOutput(typed_out, count);
  };
  switch (t) {
    case Type::Float:
      set(reinterpret_cast<float*>(in), reinterpret_cast<float*>(out));
      break;
    case Type::Double:
      set(reinterpret_cast<double*>(in), reinterpret_cast<double*>(out));
      break;
    case Type::Int:
      set(reinterpret_cast<std::int32_t*>(in), reinterpret_cast<std::int32_t*>(out));
      break;
    case Type::Long:
      set(reinterpret_cast<std::int64_t*>(in), reinterpret_cast<std::int64_t*>(out));
      break;
  }
  opts->setReduceFunction(reduce_fn(t));
  opts->setAlgorithm(algo == "bcube" ? gloo::AllreduceOptions::Algorithm::BCUBE
                                     : gloo::AllreduceOptions::Algorithm::RING);
  return opts;
}

void fill(std::byte* p, std::size_t count, Type t, int value) {
  for (std::size_t i = 0; i < count; ++i) {
    switch (t) {
      case Type::Float:
        reinterpret_cast<float*>(p)[i] = static_cast<float>(value);
        break;
      case Type::Double:
        reinterpret_cast<double*>(p)[i] = value;
        break;
      case Type::Int:
        reinterpret_cast<std::int32_t*>(p)[i] = value;
        break;
      case Type::Long:
        reinterpret_cast<std::int64_t*>(p)[i] = value;
        break;
    }
  }
}

long count_wrong(const std::byte* p, std::size_t count, Type t, double expect) {
  long wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    double v = 0;
    switch (t) {
      case Type::Float:
        v = reinterpret_cast<const float*>(p)[i];
        break;
      case Type::Double:
        v = reinterpret_cast<const double*>(p)[i];
        break;
      case Type::Int:
        v = reinterpret_cast<const std::int32_t*>(p)[i];
        break;
      case Type::Long:
        v = static_cast<double>(reinterpret_cast<const std::int64_t*>(p)[i]);
        break;
    }
    wrong += v != expect;
  }
  return wrong;
}

using rb::Stats;

int iterations(const Options& o, std::size_t bytes) { return rb::collective_iterations(o.iters, bytes); }
int warmups(const Options& o, std::size_t bytes) { return rb::collective_warmups(o.warmup, bytes); }

template <class F>
Stats time_it(const Options& o, std::size_t bytes, MPI_Comm comm, F&& call) {
  return rb::time_calls(warmups(o, bytes), iterations(o, bytes), comm, call);
}

struct Row {
  std::size_t bytes = 0, count = 0;
  Stats s;
  double algbw = 0, busbw = 0;
  std::optional<long> wrong;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  rb::JobLayout layout = rb::job_layout(MPI_COMM_WORLD);
  rb::JsonFile json_file;
  if (!o.json.empty()) {
    json_file = rb::open_json_file(MPI_COMM_WORLD, o.json, "ringmend_gloo_allreduce");
    if (!json_file.ok) {
      MPI_Comm_free(&layout.node_comm);
      MPI_Finalize();
      return 2;
    }
  }
  const rb::RunInfo info = rb::run_info(MPI_COMM_WORLD, layout, argc, argv, rb::built_version());

  // Where Gloo listens: loopback when the whole job is on one node, else
  // the address this host's name resolves to (or --host / --iface).
  gloo::transport::tcp::attr attr;
  if (!o.iface.empty())
    attr.iface = o.iface;
  else if (!o.host.empty())
    attr.hostname = o.host;
  else if (layout.single_node())
    attr.hostname = "127.0.0.1";
  const std::string where = !o.iface.empty()         ? "interface " + o.iface
                            : !attr.hostname.empty() ? "address " + attr.hostname
                                                     : std::string("this host's name");

  const std::size_t esize = size_of(o.type);
  const std::vector<std::size_t> sizes = rb::size_sweep(o.min_bytes, o.max_bytes, esize);
  const double bus = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  std::vector<Row> rows;
  int status = 0;
  try {
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<MpiConnectedContext>(rank, n);
    context->setTimeout(std::chrono::seconds(o.timeout_s));
    context->connect_full_mesh(MPI_COMM_WORLD, device);

    const std::size_t largest = sizes.empty() ? esize : sizes.back();
    std::vector<std::byte> in(largest + esize, std::byte{0}), out(largest + esize, std::byte{0});
    if (rank == 0) {
      std::printf("# Gloo Allreduce Latency Test (gloo %d.%d.%d, tcp on %s, %d ranks, %s, algorithm %s)\n",
                  GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH, where.c_str(), n,
                  name_of(o.type), o.algo.c_str());
      std::printf("%-12s%16s", "# Size", "Avg Latency(us)");
      if (o.full) std::printf("%16s%16s%12s", "Min Latency(us)", "Max Latency(us)", "Iterations");
      std::printf("%14s%14s", "algbw(GB/s)", "busbw(GB/s)");
      if (o.validate) std::printf("%10s", "#wrong");
      std::printf("\n");
      std::fflush(stdout);
    }
    std::shared_ptr<gloo::Context> ctx = context;
    for (std::size_t bytes : sizes) {
      const std::size_t count = bytes / esize;
      auto opts = make_options(ctx, o.type, in.data(), out.data(), count, o.algo);
      const Stats s = time_it(o, bytes, MPI_COMM_WORLD, [&] { gloo::allreduce(*opts); });
      Row row;
      row.bytes = bytes;
      row.count = count;
      row.s = s;
      row.algbw = s.avg_us > 0 ? static_cast<double>(bytes) / (s.avg_us * 1e3) : 0;
      row.busbw = row.algbw * bus;
      if (o.validate) {
        fill(in.data(), count, o.type, rank + 1);
        gloo::allreduce(*opts);
        long mine = count_wrong(out.data(), count, o.type, n * (n + 1) / 2.0), total = 0;
        MPI_Reduce(&mine, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        row.wrong = total;
        std::fill(in.begin(), in.end(), std::byte{0});
      }
      if (rank != 0) continue;
      std::printf("%-12zu%16.2f", bytes, s.avg_us);
      if (o.full) std::printf("%16.2f%16.2f%12d", s.min_us, s.max_us, iterations(o, bytes));
      std::printf("%14.3f%14.3f", row.algbw, row.busbw);
      if (o.validate) std::printf("%10ld", row.wrong.value_or(0));
      std::printf("\n");
      std::fflush(stdout);
      rows.push_back(row);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringmend_gloo_allreduce: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  if (json_file.file) {
    rb::Json run = rb::run_json(info);
    run["gloo_version"] = std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) +
                          "." + std::to_string(GLOO_VERSION_PATCH);
    const rb::Json parameters = {{"min_bytes", o.min_bytes},
                                 {"max_bytes", o.max_bytes},
                                 // null: OSU's defaults by size (each row gives its count)
                                 {"iterations", rb::or_null(o.iters)},
                                 {"warmup", rb::or_null(o.warmup)},
                                 {"type", name_of(o.type)},
                                 {"op", "sum"},
                                 {"algorithm", o.algo},
                                 {"transport", "tcp"},
                                 {"listen", where},
                                 {"busbw_factor", bus}};
    rb::Json json_rows = rb::Json::array();
    for (const Row& r : rows) {
      rb::Json row = rb::allreduce_row(r.bytes, r.count, name_of(o.type), "gloo", r.s, r.algbw, r.busbw);
      row["wrong"] = rb::or_null(r.wrong);
      row["iterations"] = iterations(o, r.bytes);
      row["warmup"] = warmups(o, r.bytes);
      json_rows.push_back(std::move(row));
    }
    const rb::Json doc = {
        {"benchmark", "gloo_allreduce"}, {"run", run}, {"parameters", parameters}, {"rows", json_rows}};
    if (!rb::finish_json_file(json_file, doc, o.json, "ringmend_gloo_allreduce")) status = 1;
  }
  MPI_Comm_free(&layout.node_comm);
  MPI_Finalize();
  return status;
}
