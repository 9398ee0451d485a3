#include "bench/p2p_bench.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_cli.hpp"
#include "bench/bench_util.hpp"
#include "ringmend/core/options.hpp"
#include "transport/progress.hpp"
#include "transport/shm_channel.hpp"
#include "transport/ucx_channel.hpp"
#include "transport/ucx_environment.hpp"

namespace ringmend::bench {
namespace {

namespace tp = ringmend::transport;

// osu_bw / osu_latency defaults: sizes up to this are "small".
constexpr std::size_t kLargeMessage = 8192;
constexpr int kDataTag = 100, kAckTag = 101;
constexpr std::size_t kAckBytes = 4;

enum class Transport { Ucx, Shm };
const char* transport_name(Transport t) { return t == Transport::Ucx ? "ucx" : "shm"; }

struct Options {
  P2PMode mode = P2PMode::Bandwidth;
  std::size_t min_bytes = 1, max_bytes = 1 << 22;
  std::optional<int> iters, warmup;  // unset: OSU's defaults (fewer for large messages)
  int window = 64;
  std::string impl = "both";
  Transport transport = Transport::Ucx;
  int timeout_s = 60;
  std::string json;
};

const char* program(P2PMode m) {
  switch (m) {
    case P2PMode::Bandwidth:
      return "ringmend_p2p_bw";
    case P2PMode::BiBandwidth:
      return "ringmend_p2p_bibw";
    case P2PMode::Latency:
      break;
  }
  return "ringmend_p2p_latency";
}

// The streaming modes (a window of messages in flight, MB/s).
bool windowed(P2PMode m) { return m != P2PMode::Latency; }

// The head of --help: what the program measures.
std::string about(P2PMode m) {
  const std::string over =
      ", over ringmend's transport (UCX, or shared memory with --transport shm) and over MPI's "
      "point-to-point.";
  switch (m) {
    case P2PMode::Bandwidth:
      return "osu_bw between ranks 0 and 1 of the job: rank 0 streams windows of messages to rank 1 (MB/s, "
             "1e6 bytes)" +
             over;
    case P2PMode::BiBandwidth:
      return "osu_bibw between ranks 0 and 1 of the job: both post a window of receives and a window of "
             "sends "
             "at once (MB/s of both directions together)" +
             over;
    case P2PMode::Latency:
      break;
  }
  return "osu_latency between ranks 0 and 1 of the job: ping-pong, half the round trip in us" + over;
}

Options parse(int argc, char** argv, P2PMode mode) {
  Options o;
  o.mode = mode;
  o.min_bytes = windowed(mode) ? 1 : 0;
  Cli cli(program(mode), about(mode),
          "Ratio: ringmend / MPI bandwidth, or MPI / ringmend latency; above 1, ringmend's transport is "
          "faster. See bench/README.md.");
  cli.add_message_sizes(o.min_bytes, o.max_bytes, 0);
  cli.add_iterations(o.iters, windowed(mode)
                                  ? "windows per size (default: OSU's, 100 up to 8 KiB, 20 above)"
                                  : "round trips per size (default: OSU's, 10000 up to 8 KiB, 1000 "
                                    "above)");
  cli.add_warmup(o.warmup, windowed(mode)
                               ? "warm-up windows per size (default: OSU's, 10 up to 8 KiB, 2 above)"
                               : "warm-up round trips per size (default: OSU's, 100 up to 8 KiB, 10 "
                                 "above)");
  if (windowed(mode))
    cli.add_count("-W,--window-size", o.window, 1, kMaxCount, "messages in flight per window");
  cli.add_impl(o.impl, {"ringmend", "mpi", "both"});
  cli.add_choice("--transport", o.transport, {{"ucx", Transport::Ucx}, {"shm", Transport::Shm}},
                 "ringmend's transport (shm: ranks 0 and 1 on one node)")
      ->default_str("ucx");
  cli.add_timeout(o.timeout_s, "a ringmend wait that makes no progress this long ends the run");
  cli.add_json(o.json);
  cli.parse(argc, argv);
  return o;
}

int iterations(const Options& o, std::size_t bytes) {
  if (o.iters) return *o.iters;
  const bool large = bytes > kLargeMessage;
  if (windowed(o.mode)) return large ? 20 : 100;
  return large ? 1000 : 10000;
}

int warmups(const Options& o, std::size_t bytes) {
  if (o.warmup) return *o.warmup;
  const bool large = bytes > kLargeMessage;
  if (windowed(o.mode)) return large ? 2 : 10;
  return large ? 10 : 100;
}

// ---------------------------------------------------------------- endpoints

// One side of the exchange between ranks 0 and 1: operations are posted,
// then completed together.
class Endpoint {
 public:
  virtual ~Endpoint() = default;
  virtual void send(const void* buf, std::size_t bytes, int tag) = 0;
  virtual void recv(void* buf, std::size_t bytes, int tag) = 0;
  virtual void wait_all() = 0;
};

class MpiEndpoint final : public Endpoint {
 public:
  MpiEndpoint(MPI_Comm pair, int peer) : pair_(pair), peer_(peer) {}
  void send(const void* buf, std::size_t bytes, int tag) override {
    requests_.emplace_back();
    MPI_Isend(buf, static_cast<int>(bytes), MPI_BYTE, peer_, tag, pair_, &requests_.back());
  }
  void recv(void* buf, std::size_t bytes, int tag) override {
    requests_.emplace_back();
    MPI_Irecv(buf, static_cast<int>(bytes), MPI_BYTE, peer_, tag, pair_, &requests_.back());
  }
  void wait_all() override {
    MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();
  }

 private:
  MPI_Comm pair_;
  int peer_;
  std::vector<MPI_Request> requests_;
};

// Waits of the transport algorithms end at a deadline (no failure handling
// here: a benchmark that stalls should stop, not hang).
class DeadlineWait final : public tp::WaitContext {
 public:
  explicit DeadlineWait(double seconds)
      : limit_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(seconds))),
        seconds_(seconds) {
    arm();
  }
  void arm() { deadline_ = std::chrono::steady_clock::now() + limit_; }
  void check() override {
    if (std::chrono::steady_clock::now() > deadline_)
      throw std::runtime_error("no progress within " + std::to_string(static_cast<int>(seconds_)) +
                               " s (--timeout)");
  }
  void on_phase(tp::Phase, int) override {}

 private:
  std::chrono::steady_clock::duration limit_;
  std::chrono::steady_clock::time_point deadline_;
  double seconds_;
};

// Over one of ringmend's channels (UCX, or shared memory between ranks 0
// and 1 on one node).
class ChannelEndpoint final : public Endpoint {
 public:
  // `context` owns what the channel runs on (the UCX context; null for
  // shared memory): it goes after the channel.
  ChannelEndpoint(std::shared_ptr<void> context, std::unique_ptr<tp::Channel> channel, int peer,
                  DeadlineWait& wait, const char* name)
      : context_(std::move(context)), channel_(std::move(channel)), peer_(peer), wait_(wait), name_(name) {}
  ~ChannelEndpoint() override { channel_.reset(); }
  void send(const void* buf, std::size_t bytes, int tag) override {
    const tp::Piece piece{const_cast<void*>(buf), bytes};
    ops_.push_back(
        channel_->send(peer_, static_cast<std::uint32_t>(tag), std::span<const tp::Piece>(&piece, 1)));
  }
  void recv(void* buf, std::size_t bytes, int tag) override {
    const tp::Piece piece{buf, bytes};
    ops_.push_back(
        channel_->recv(peer_, static_cast<std::uint32_t>(tag), std::span<const tp::Piece>(&piece, 1)));
  }
  void wait_all() override {
    for (tp::Channel::Op op : ops_) {
      if (tp::wait_for(*channel_, op, wait_) != tp::OpState::Done)
        throw std::runtime_error(std::string(name_) + ": a message was truncated");
    }
    ops_.clear();
  }

 private:
  std::shared_ptr<void> context_;
  std::unique_ptr<tp::Channel> channel_;
  int peer_;
  DeadlineWait& wait_;
  const char* name_;
  std::vector<tp::Channel::Op> ops_;
};

// Collective over `world`: ranks 0 and 1 get connected endpoints, the others
// only take part in the address exchange and get null.
std::unique_ptr<Endpoint> open_ucx(MPI_Comm world, DeadlineWait& wait) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  const bool active = rank < 2;
  std::shared_ptr<tp::UcxContext> context;
  std::unique_ptr<tp::UcxChannel> channel;
  std::vector<std::byte> mine;
  if (active) {
    // As the runtime does: a UCX_NET_DEVICES of several devices is striped over.
    const char* devices = std::getenv("UCX_NET_DEVICES");
    tp::set_ucx_environment_defaults(devices ? devices : "");
    // RINGMEND_UCX_WORKERS_AHEAD as the runtime reads it.
    context =
        std::make_shared<tp::UcxContext>(std::string{}, ringmend::Options{}.resolve().ucx_workers_ahead);
    channel = std::make_unique<tp::UcxChannel>(*context, rank, size, 0);
    mine = channel->local_address();
  }
  // Worker addresses differ in length: exchange them in slots of the longest.
  int len = static_cast<int>(mine.size()), longest = 0;
  MPI_Allreduce(&len, &longest, 1, MPI_INT, MPI_MAX, world);
  std::vector<int> lengths(static_cast<std::size_t>(size));
  MPI_Allgather(&len, 1, MPI_INT, lengths.data(), 1, MPI_INT, world);
  mine.resize(static_cast<std::size_t>(longest));
  std::vector<std::byte> all(static_cast<std::size_t>(longest) * static_cast<std::size_t>(size));
  MPI_Allgather(mine.data(), longest, MPI_BYTE, all.data(), longest, MPI_BYTE, world);
  if (!active) return nullptr;
  std::vector<std::vector<std::byte>> addresses(static_cast<std::size_t>(size));
  for (std::size_t r = 0; r < addresses.size(); ++r) {
    const auto* p = all.data() + r * static_cast<std::size_t>(longest);
    addresses[r].assign(p, p + lengths[r]);
  }
  const int peer = 1 - rank;
  channel->connect(addresses, {peer});
  return std::make_unique<ChannelEndpoint>(std::move(context), std::move(channel), peer, wait, "UCX");
}

// Collective over `world`, with ranks 0 and 1 on one node: rank 0 creates a
// segment, rank 1 attaches to it, and the name is removed once both have
// mapped it (from then on nothing can be left in /dev/shm, however the job
// ends). The others only take part and get null.
std::unique_ptr<Endpoint> open_shm(MPI_Comm world, DeadlineWait& wait) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  const ringmend::Settings defaults;  // the layout the runtime uses
  const auto layout = tp::ShmChannelLayout::make(2, defaults.shm_p2p_slot_bytes, defaults.shm_p2p_slots);
  std::array<char, 64> name{};  // stays empty if rank 0 cannot create it
  tp::ShmSegment segment;
  std::string error;
  if (rank == 0) {
    // The random part keeps jobs in different PID namespaces apart.
    const std::string n =
        "/ringmend-p2p-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
    try {
      segment = tp::ShmSegment::create(n, layout.total);
      n.copy(name.data(), name.size() - 1);
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
  }
  MPI_Bcast(name.data(), static_cast<int>(name.size()), MPI_CHAR, 0, world);
  const int self = static_cast<int>(::getpid());
  std::vector<int> pids(static_cast<std::size_t>(size));
  MPI_Allgather(&self, 1, MPI_INT, pids.data(), 1, MPI_INT, world);
  if (rank == 1 && name[0] != '\0') {
    try {
      if (auto s = tp::ShmSegment::attach(name.data(), layout.total)) segment = std::move(*s);
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    if (!segment && error.empty()) error = std::string("shared memory ") + name.data() + ": not found";
  }
  // Both ranks have mapped it (or given up): the name can go.
  int ok = error.empty() ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, world);
  segment.unlink();
  if (!all_ok)
    throw std::runtime_error(error.empty() ? "the other rank could not set up shared memory" : error);
  if (rank >= 2) return nullptr;
  auto channel = std::make_unique<tp::ShmChannel>(std::move(segment), layout, rank,
                                                  std::vector<pid_t>{pids[0], pids[1]});
  return std::make_unique<ChannelEndpoint>(nullptr, std::move(channel), 1 - rank, wait, "shm");
}

// ---------------------------------------------------------------- measurement

struct AlignedBuffer {
  explicit AlignedBuffer(std::size_t bytes) {
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096;
    data = static_cast<std::byte*>(std::aligned_alloc(4096, rounded));
    if (!data) throw std::bad_alloc();
    std::memset(data, 'a', rounded);
  }
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  std::byte* data = nullptr;
};

// osu_bw: rank 0 posts a window of sends, rank 1 a window of receives; an
// acknowledgement closes each window. Returns MB/s (1e6) on rank 0.
double measure_bw(Endpoint& ep, int rank, std::size_t bytes, int iters, int warmup, int window, std::byte* s,
                  std::byte* r) {
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters + warmup; ++i) {
    if (i == warmup) t0 = MPI_Wtime();
    if (rank == 0) {
      for (int w = 0; w < window; ++w) ep.send(s, bytes, kDataTag);
      ep.wait_all();
      ep.recv(r, kAckBytes, kAckTag);
      ep.wait_all();
    } else {
      for (int w = 0; w < window; ++w) ep.recv(r, bytes, kDataTag);
      ep.wait_all();
      ep.send(s, kAckBytes, kAckTag);
      ep.wait_all();
    }
  }
  const double t = MPI_Wtime() - t0;
  return t > 0 ? static_cast<double>(bytes) / 1e6 * iters * window / t : 0;
}

// osu_bibw: both ranks post a window of receives and a window of sends at
// once. Returns the MB/s of both directions together, as osu_bibw does.
double measure_bibw(Endpoint& ep, std::size_t bytes, int iters, int warmup, int window, std::byte* s,
                    std::byte* r) {
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters + warmup; ++i) {
    if (i == warmup) t0 = MPI_Wtime();
    for (int w = 0; w < window; ++w) ep.recv(r, bytes, kDataTag);
    for (int w = 0; w < window; ++w) ep.send(s, bytes, kDataTag);
    ep.wait_all();
  }
  const double t = MPI_Wtime() - t0;
  return t > 0 ? 2.0 * static_cast<double>(bytes) / 1e6 * iters * window / t : 0;
}

// osu_latency: ping-pong with blocking send and receive; returns half the
// round trip in microseconds.
double measure_latency(Endpoint& ep, int rank, std::size_t bytes, int iters, int warmup, std::byte* s,
                       std::byte* r) {
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters + warmup; ++i) {
    if (i == warmup) t0 = MPI_Wtime();
    if (rank == 0) {
      ep.send(s, bytes, kDataTag);
      ep.wait_all();
      ep.recv(r, bytes, kDataTag);
      ep.wait_all();
    } else {
      ep.recv(r, bytes, kDataTag);
      ep.wait_all();
      ep.send(s, bytes, kDataTag);
      ep.wait_all();
    }
  }
  return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

struct Row {
  std::size_t bytes = 0;
  std::string impl, transport;
  double value = 0;  // MB/s or us
  int iters = 0, warmup = 0;
};

int run(int argc, char** argv, P2PMode mode) {
  const Options o = parse(argc, argv, mode);
  const char* prog = program(mode);
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const bool run_r = o.impl != "mpi", run_m = o.impl != "ringmend";
  if (size < 2) {
    if (rank == 0)
      std::fprintf(stderr, "%s: needs at least 2 ranks (it measures between ranks 0 and 1)\n", prog);
    MPI_Finalize();
    return 2;
  }

  JobLayout layout = job_layout(MPI_COMM_WORLD);
  const bool same_node = layout.node_of_rank[0] == layout.node_of_rank[1];
  if (run_r && o.transport == Transport::Shm && !same_node) {
    // Every rank knows the layout: they all leave here together.
    if (rank == 0)
      std::fprintf(stderr, "%s: --transport shm needs ranks 0 and 1 on the same node (they are not)\n", prog);
    MPI_Comm_free(&layout.node_comm);
    MPI_Finalize();
    return 2;
  }
  JsonFile json_file;
  if (!o.json.empty()) {
    json_file = open_json_file(MPI_COMM_WORLD, o.json, prog);
    if (!json_file.ok) {
      MPI_Comm_free(&layout.node_comm);
      MPI_Finalize();
      return 2;
    }
  }
  const RunInfo info = run_info(MPI_COMM_WORLD, layout, argc, argv, built_version());
  const char* transport = transport_name(o.transport);

  MPI_Comm pair = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);

  DeadlineWait wait(o.timeout_s);
  std::unique_ptr<Endpoint> ours, mpi;
  int status = 0;
  std::vector<Row> rows;
  try {
    if (run_r)
      ours = o.transport == Transport::Ucx ? open_ucx(MPI_COMM_WORLD, wait) : open_shm(MPI_COMM_WORLD, wait);
    if (run_m && rank < 2) mpi = std::make_unique<MpiEndpoint>(pair, 1 - rank);
    const std::vector<std::size_t> sizes = size_sweep(o.min_bytes, o.max_bytes);
    const std::size_t largest = std::max<std::size_t>(sizes.empty() ? 0 : sizes.back(), kAckBytes);
    if (rank == 0) {
      const bool bw = windowed(mode);
      std::printf("# ringmend P2P %s Test (ringmend %s, impl %s%s%s, ranks 0 and 1 on %s)\n",
                  mode == P2PMode::Bandwidth     ? "Bandwidth"
                  : mode == P2PMode::BiBandwidth ? "Bi-Directional Bandwidth"
                                                 : "Latency",
                  built_version(), o.impl.c_str(),
                  run_r ? (std::string(", transport ") + transport).c_str() : "",
                  bw ? (", window " + std::to_string(o.window)).c_str() : "",
                  same_node ? "the same node" : "different nodes");
      std::printf("%-10s%18s", "# Size", bw ? "Bandwidth (MB/s)" : "Latency (us)");
      if (run_r && run_m) std::printf("%22s%10s", bw ? "MPI Bandwidth (MB/s)" : "MPI Latency (us)", "ratio");
      std::printf("\n");
      std::fflush(stdout);
    }
    if (rank < 2) {
      AlignedBuffer sbuf(largest), rbuf(largest);
      for (std::size_t bytes : sizes) {
        const int iters = iterations(o, bytes), warm = warmups(o, bytes);
        double vr = 0, vm = 0;
        auto measure = [&](Endpoint& ep) {
          MPI_Barrier(pair);
          wait.arm();
          switch (mode) {
            case P2PMode::Bandwidth:
              return measure_bw(ep, rank, bytes, iters, warm, o.window, sbuf.data, rbuf.data);
            case P2PMode::BiBandwidth:
              return measure_bibw(ep, bytes, iters, warm, o.window, sbuf.data, rbuf.data);
            case P2PMode::Latency:
              break;
          }
          return measure_latency(ep, rank, bytes, iters, warm, sbuf.data, rbuf.data);
        };
        if (ours) vr = measure(*ours);
        if (mpi) vm = measure(*mpi);
        if (rank != 0) continue;
        std::printf("%-10zu%18.2f", bytes, run_r ? vr : vm);
        if (run_r && run_m) {
          // ratio > 1: ringmend's transport is faster.
          const double ratio = windowed(mode) ? (vm > 0 ? vr / vm : 0) : (vr > 0 ? vm / vr : 0);
          std::printf("%22.2f%10.2f", vm, ratio);
        }
        std::printf("\n");
        std::fflush(stdout);
        if (run_r) rows.push_back({bytes, "ringmend", transport, vr, iters, warm});
        if (run_m) rows.push_back({bytes, "mpi", "mpi", vm, iters, warm});
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %d: %s\n", prog, rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  ours.reset();
  mpi.reset();

  if (json_file.file) {
    Json parameters = {{"min_bytes", o.min_bytes},
                       {"max_bytes", o.max_bytes},
                       {"impl", o.impl},
                       {"transport", run_r ? Json(transport) : Json(nullptr)}};
    if (windowed(mode)) parameters["window"] = o.window;
    parameters["measured_ranks"] = {0, 1};
    parameters["same_node"] = same_node;
    Json json_rows = Json::array();
    for (const Row& r : rows) {
      Json row = {{"size", r.bytes}, {"impl", r.impl}, {"transport", r.transport}};
      row[windowed(mode) ? "bandwidth_MBps" : "latency_us"] = r.value;
      row["iterations"] = r.iters;
      row["warmup"] = r.warmup;
      if (windowed(mode)) row["window"] = o.window;
      json_rows.push_back(std::move(row));
    }
    const Json doc = {{"benchmark", mode == P2PMode::Bandwidth     ? "p2p_bw"
                                    : mode == P2PMode::BiBandwidth ? "p2p_bibw"
                                                                   : "p2p_latency"},
                      {"run", run_json(info)},
                      {"parameters", parameters},
                      {"rows", json_rows}};
    if (!finish_json_file(json_file, doc, o.json, prog)) status = 1;
  }
  if (pair != MPI_COMM_NULL) MPI_Comm_free(&pair);
  MPI_Comm_free(&layout.node_comm);
  MPI_Finalize();
  return status;
}

}  // namespace

int p2p_main(int argc, char** argv, P2PMode mode) { return run(argc, argv, mode); }

}  // namespace ringmend::bench
