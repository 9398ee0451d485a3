// ringmend-netcheck: the measuring half of `ringmend-run --network-check`.
// One MPI rank per node, rank i on the i-th node of --nodes. Every node
// measures its own memory-copy rate, then every pair of nodes measures
// latency (8-byte ping-pong) and bandwidth in both directions (windows of
// 1 MiB messages, as osu_bw does). Pairs run in rounds of disjoint pairs
// (the circle method), so K nodes take K-1 rounds and no node serves two
// pairs at once. Rank 0 gathers the numbers, judges them (netcheck.hpp),
// prints the table and one machine-readable line per node.
//
//   mpirun ... ringmend-netcheck --nodes=n1,n2 [--ratio=0.5] [--min-bw=MBPS] [--seconds=0.15]
//   ringmend-netcheck --help
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "slurm/hostlist.hpp"
#include "slurm/netcheck.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr int kTagData = 1, kTagAck = 2, kTagStop = 3, kTagPing = 4;
constexpr int kMessageBytes = 1 << 20;
constexpr int kWindow = 8;

// Copy rate of a buffer larger than the caches, for `seconds`.
double memory_copy_gbs(double seconds) {
  const std::size_t bytes = std::size_t{32} << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  const auto t0 = Clock::now();
  double copied = 0;
  do {
    std::memcpy(b.data(), a.data(), bytes);
    a[copied > 0 ? 1 : 0] = b[bytes / 2];  // keeps the copy observable
    copied += static_cast<double>(bytes);
  } while (since(t0) < seconds);
  return copied / since(t0) / 1e9;
}

// Half the round-trip time of 8-byte messages; `leader` decides when to stop.
double latency_us(int peer, bool leader, double seconds) {
  char msg[8] = {};
  if (!leader) {
    for (;;) {
      MPI_Status st;
      MPI_Recv(msg, sizeof msg, MPI_CHAR, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      if (st.MPI_TAG == kTagStop) return 0;
      MPI_Send(msg, sizeof msg, MPI_CHAR, peer, kTagPing, MPI_COMM_WORLD);
    }
  }
  auto ping = [&] {
    MPI_Send(msg, sizeof msg, MPI_CHAR, peer, kTagPing, MPI_COMM_WORLD);
    MPI_Recv(msg, sizeof msg, MPI_CHAR, peer, kTagPing, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  };
  for (int i = 0; i < 5; ++i) ping();
  int n = 0;
  const auto t0 = Clock::now();
  do {
    ping();
    ++n;
  } while ((since(t0) < seconds || n < 10) && n < 100000);
  const double t = since(t0);
  MPI_Send(msg, 0, MPI_CHAR, peer, kTagStop, MPI_COMM_WORLD);
  return t / n / 2 * 1e6;
}

// Bandwidth from `sender` to the other side, in MB/s (1e6 bytes/s), as
// the sender sees it: windows of messages, each acknowledged.
double bandwidth_mbs(int peer, bool sender, double seconds, std::vector<char>& buf) {
  std::vector<MPI_Request> req(kWindow);
  char ack = 0;
  if (!sender) {
    for (;;) {
      MPI_Status st;
      MPI_Probe(peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      if (st.MPI_TAG == kTagStop) {
        MPI_Recv(&ack, 0, MPI_CHAR, peer, kTagStop, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return 0;
      }
      for (int w = 0; w < kWindow; ++w)
        MPI_Irecv(buf.data() + static_cast<std::size_t>(w) * kMessageBytes, kMessageBytes, MPI_CHAR, peer,
                  kTagData, MPI_COMM_WORLD, &req[static_cast<std::size_t>(w)]);
      MPI_Waitall(kWindow, req.data(), MPI_STATUSES_IGNORE);
      MPI_Send(&ack, 1, MPI_CHAR, peer, kTagAck, MPI_COMM_WORLD);
    }
  }
  auto window = [&] {
    for (int w = 0; w < kWindow; ++w)
      MPI_Isend(buf.data() + static_cast<std::size_t>(w) * kMessageBytes, kMessageBytes, MPI_CHAR, peer,
                kTagData, MPI_COMM_WORLD, &req[static_cast<std::size_t>(w)]);
    MPI_Waitall(kWindow, req.data(), MPI_STATUSES_IGNORE);
    MPI_Recv(&ack, 1, MPI_CHAR, peer, kTagAck, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  };
  window();  // connection set-up and first touch stay out of the timing
  int n = 0;
  const auto t0 = Clock::now();
  do {
    window();
    ++n;
  } while (since(t0) < seconds || n < 2);
  const double t = since(t0);
  MPI_Send(&ack, 0, MPI_CHAR, peer, kTagStop, MPI_COMM_WORLD);
  return static_cast<double>(n) * kWindow * kMessageBytes / t / 1e6;
}

struct Settings {
  ringmend::slurm::NetcheckRule rule;
  double seconds = 0.15;
  std::vector<std::string> nodes;
};

// The command line, read before MPI starts: every rank reads the same one,
// so a bad value ends every rank with the same message.
Settings parse(int argc, char** argv) {
  Settings s;
  CLI::App app{
      "The measuring half of ringmend-run --network-check: one MPI rank per node measures "
      "memory copy rate, latency and bandwidth to every other node; rank 0 prints the table "
      "and one result line per node.",
      "ringmend-netcheck"};
  std::string nodes;
  app.add_option("--nodes", nodes, "the nodes, in rank order (hostlist: n[1-4],gpu2)")->required();
  app.add_option("--ratio", s.rule.ratio, "leave out a node below R x the median node")
      ->type_name("R")
      ->check(CLI::Range(0.01, 1.0));
  app.add_option("--min-bw", s.rule.min_link_mbs, "leave out a node whose links give < M MB/s")
      ->type_name("M")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seconds", s.seconds, "time for each measurement")
      ->type_name("S")
      ->check(CLI::Range(0.01, 60.0));
  try {
    app.parse(argc, argv);
    s.nodes = ringmend::slurm::expand_hostlist(nodes);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    std::exit(0);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "ringmend-netcheck: error: %s (see --help)\n", e.what());
    std::exit(2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringmend-netcheck: error: --nodes: %s\n", e.what());
    std::exit(2);
  }
  return s;
}

// Every pair of nodes measures latency and bandwidth both ways. Circle
// method: with n even (a bye slot when K is odd), round r pairs n-1 with r
// and (r+i) with (r-i) mod (n-1). Fills this rank's row of each.
void measure_pairs(int rank, int size, double seconds, std::vector<double>& bw_to,
                   std::vector<double>& lat_to) {
  std::vector<char> buf(static_cast<std::size_t>(kWindow) * kMessageBytes, 7);
  const int n = size % 2 ? size + 1 : size;
  for (int r = 0; r + 1 < n; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    int peer = -1;
    for (int i = 0; i < n / 2; ++i) {
      const int a = i == 0 ? n - 1 : (r + i) % (n - 1);
      const int b = i == 0 ? r : (r - i + n - 1) % (n - 1);
      if (a == rank) peer = b;
      if (b == rank) peer = a;
    }
    if (peer < 0 || peer >= size) continue;  // the bye
    const bool lower = rank < peer;
    const auto p = static_cast<std::size_t>(peer);
    const double lat = latency_us(peer, lower, seconds / 3);
    if (lower) lat_to[p] = lat;
    const double first = bandwidth_mbs(peer, lower, seconds, buf);
    const double second = bandwidth_mbs(peer, !lower, seconds, buf);
    bw_to[p] = lower ? first : second;
  }
}

// Rank 0 gathers every row, judges and prints.
void report(int rank, const Settings& s, double local, const std::vector<double>& bw_to,
            const std::vector<double>& lat_to) {
  const std::size_t k = s.nodes.size();
  const int size = static_cast<int>(k);
  std::vector<double> all_bw(rank == 0 ? k * k : 0), all_lat(rank == 0 ? k * k : 0),
      all_local(rank == 0 ? k : 0);
  MPI_Gather(bw_to.data(), size, MPI_DOUBLE, all_bw.data(), size, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Gather(lat_to.data(), size, MPI_DOUBLE, all_lat.data(), size, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Gather(&local, 1, MPI_DOUBLE, all_local.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  ringmend::slurm::NetcheckMeasurements m;
  m.nodes = s.nodes;
  m.local_gbs = all_local;
  m.bw_mbs.assign(k, std::vector<double>(k, 0));
  m.latency_us.assign(k, std::vector<double>(k, 0));
  for (std::size_t a = 0; a < k; ++a)
    for (std::size_t b = 0; b < k; ++b) {
      m.bw_mbs[a][b] = all_bw[a * k + b];
      // Measured by the lower rank of each pair; the table reads [a][b], a < b.
      m.latency_us[a][b] = m.latency_us[b][a] = std::max(all_lat[a * k + b], all_lat[b * k + a]);
    }
  const auto verdict = ringmend::slurm::judge(m, s.rule);
  std::fputs(ringmend::slurm::format_report(m, verdict, s.rule).c_str(), stdout);
  for (const auto& line : ringmend::slurm::result_lines(verdict)) std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Settings s = parse(argc, argv);
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (s.nodes.size() != static_cast<std::size_t>(size)) {
    if (rank == 0)
      std::fprintf(stderr, "ringmend-netcheck: %d ranks but %zu nodes in --nodes; start one rank per node\n",
                   size, s.nodes.size());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  // Ranks are placed node by node, so rank i runs on nodes[i]; Slurm's own
  // name for the node confirms it where the daemons were started by srun.
  if (const char* here = std::getenv("SLURMD_NODENAME");
      here && s.nodes[static_cast<std::size_t>(rank)] != here)
    std::fprintf(stderr, "ringmend-netcheck: warning: rank %d expected on %s runs on %s\n", rank,
                 s.nodes[static_cast<std::size_t>(rank)].c_str(), here);

  const auto k = static_cast<std::size_t>(size);
  std::vector<double> bw_to(k, 0), lat_to(k, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  const double local = memory_copy_gbs(std::max(0.1, s.seconds));
  measure_pairs(rank, size, s.seconds, bw_to, lat_to);
  report(rank, s, local, bw_to, lat_to);
  MPI_Finalize();
  return 0;
}
