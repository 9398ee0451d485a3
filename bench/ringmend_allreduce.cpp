// OSU-style allreduce latency/bandwidth benchmark for ringmend, side by side
// with MPI_Allreduce of the same MPI in the same job.
//
//   ringmend_allreduce [-m [MIN:]MAX] [-i ITERS] [-x WARMUP] [-f] [-c]
//                      [-T float|double|int|long] [--impl ringmend|mpi|both]
//
// Avg Latency is the mean over ranks of each rank's mean time per call (as
// OSU computes it); Min/Max (-f) are the smallest and largest per-rank means.
// algbw = size / time, busbw = algbw * 2(n-1)/n (nccl-tests' definitions).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ringmend/ringmend.hpp"

namespace {

struct Options {
  std::size_t min_bytes = 4, max_bytes = 1 << 22;
  int iters = 100, warmup = 10;
  bool full = false, validate = false;
  ringmend::DataType type = ringmend::DataType::Float32;
  std::string impl = "both";
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "ringmend_allreduce: %s\n"
               "usage: ringmend_allreduce [-m [MIN:]MAX] [-i ITERS] [-x WARMUP] [-f] [-c]\n"
               "                          [-T float|double|int|long] [--impl ringmend|mpi|both]\n",
               why);
  std::exit(2);
}

std::size_t parse_bytes(const std::string& s) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  std::string suffix(end);
  if (suffix == "K" || suffix == "k") v <<= 10;
  else if (suffix == "M" || suffix == "m") v <<= 20;
  else if (!suffix.empty() || end == s.c_str()) usage(("bad size '" + s + "'").c_str());
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "-m") {
      std::string v = next();
      auto colon = v.find(':');
      if (colon != std::string::npos) {
        o.min_bytes = parse_bytes(v.substr(0, colon));
        o.max_bytes = parse_bytes(v.substr(colon + 1));
      } else {
        o.max_bytes = parse_bytes(v);
      }
    } else if (a == "-i") o.iters = std::atoi(next().c_str());
    else if (a == "-x") o.warmup = std::atoi(next().c_str());
    else if (a == "-f") o.full = true;
    else if (a == "-c") o.validate = true;
    else if (a == "-T") {
      std::string t = next();
      if (t == "float") o.type = ringmend::DataType::Float32;
      else if (t == "double") o.type = ringmend::DataType::Float64;
      else if (t == "int") o.type = ringmend::DataType::Int32;
      else if (t == "long") o.type = ringmend::DataType::Int64;
      else usage(("unknown type '" + t + "'").c_str());
    } else if (a == "--impl") {
      o.impl = next();
      if (o.impl != "ringmend" && o.impl != "mpi" && o.impl != "both") usage("--impl takes ringmend, mpi or both");
    } else usage(("unknown option '" + a + "'").c_str());
  }
  if (o.iters <= 0 || o.warmup < 0 || o.min_bytes == 0 || o.min_bytes > o.max_bytes) usage("bad -i/-x/-m values");
  return o;
}

MPI_Datatype mpi_type(ringmend::DataType t) {
  switch (t) {
    case ringmend::DataType::Float32: return MPI_FLOAT;
    case ringmend::DataType::Float64: return MPI_DOUBLE;
    case ringmend::DataType::Int32: return MPI_INT32_T;
    case ringmend::DataType::Int64: return MPI_INT64_T;
  }
  return MPI_FLOAT;
}

struct Stats {
  double avg_us, min_us, max_us;
};

// Times `iters` calls after `warmup`; returns per-rank-mean statistics.
template <class F>
Stats time_it(const Options& o, MPI_Comm comm, F&& call) {
  for (int i = 0; i < o.warmup; ++i) call();
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < o.iters; ++i) call();
  const double mine = (MPI_Wtime() - t0) * 1e6 / o.iters;
  int n = 1;
  MPI_Comm_size(comm, &n);
  double sum = 0, lo = 0, hi = 0;
  MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
  MPI_Reduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, comm);
  MPI_Reduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  return {sum / n, lo, hi};
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  ringmend::Runtime rt(&argc, &argv);
  ringmend::Communicator& comm = rt.world();
  const int n = comm.size(), rank = comm.rank();
  const std::size_t esize = ringmend::size_of(o.type);
  std::vector<std::byte> in(o.max_bytes + esize), out(o.max_bytes + esize);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::byte>(0);
  const bool run_r = o.impl != "mpi", run_m = o.impl != "ringmend";
  const double bus = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  if (rank == 0) {
    std::printf("# OSU MPI Allreduce Latency Test (ringmend %s, %d ranks, %s, impl %s)\n", ringmend::version(), n,
                std::string(ringmend::name_of(o.type)).c_str(), o.impl.c_str());
    std::printf("%-12s%16s", "# Size", "Avg Latency(us)");
    if (o.full) std::printf("%16s%16s%12s", "Min Latency(us)", "Max Latency(us)", "Iterations");
    std::printf("%14s%14s", "algbw(GB/s)", "busbw(GB/s)");
    if (o.impl == "both") std::printf("%18s%14s%12s", "MPI Avg Lat(us)", "MPI busbw", "ratio");
    if (o.validate) std::printf("%10s", "#wrong");
    std::printf("\n");
  }
  for (std::size_t bytes = std::max(o.min_bytes, esize); bytes <= o.max_bytes; bytes *= 2) {
    const std::size_t count = bytes / esize;
    Stats r{}, m{};
    if (run_r)
      r = time_it(o, MPI_COMM_WORLD, [&] { comm.allreduce(in.data(), out.data(), count, o.type, ringmend::ReduceOp::Sum); });
    if (run_m)
      m = time_it(o, MPI_COMM_WORLD, [&] {
        MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), mpi_type(o.type), MPI_SUM, MPI_COMM_WORLD);
      });
    long wrong = 0;
    if (o.validate && run_r) {
      // Inputs rank+1 (small integers: exact in every type); sum is n(n+1)/2.
      for (std::size_t i = 0; i < count; ++i) {
        switch (o.type) {
          case ringmend::DataType::Float32: reinterpret_cast<float*>(in.data())[i] = float(rank + 1); break;
          case ringmend::DataType::Float64: reinterpret_cast<double*>(in.data())[i] = double(rank + 1); break;
          case ringmend::DataType::Int32: reinterpret_cast<std::int32_t*>(in.data())[i] = rank + 1; break;
          case ringmend::DataType::Int64: reinterpret_cast<std::int64_t*>(in.data())[i] = rank + 1; break;
        }
      }
      comm.allreduce(in.data(), out.data(), count, o.type, ringmend::ReduceOp::Sum);
      const double expect = n * (n + 1) / 2.0;
      for (std::size_t i = 0; i < count; ++i) {
        double v = 0;
        switch (o.type) {
          case ringmend::DataType::Float32: v = reinterpret_cast<float*>(out.data())[i]; break;
          case ringmend::DataType::Float64: v = reinterpret_cast<double*>(out.data())[i]; break;
          case ringmend::DataType::Int32: v = reinterpret_cast<std::int32_t*>(out.data())[i]; break;
          case ringmend::DataType::Int64: v = static_cast<double>(reinterpret_cast<std::int64_t*>(out.data())[i]); break;
        }
        wrong += v != expect;
      }
      long total = 0;
      MPI_Reduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
      wrong = total;
      std::memset(in.data(), 0, in.size());
    }
    if (rank == 0) {
      const Stats& s = run_r ? r : m;
      const double algbw = static_cast<double>(bytes) / (s.avg_us * 1e3);
      std::printf("%-12zu%16.2f", bytes, s.avg_us);
      if (o.full) std::printf("%16.2f%16.2f%12d", s.min_us, s.max_us, o.iters);
      std::printf("%14.3f%14.3f", algbw, algbw * bus);
      if (o.impl == "both")
        std::printf("%18.2f%14.3f%12.2f", m.avg_us, static_cast<double>(bytes) / (m.avg_us * 1e3) * bus, m.avg_us / r.avg_us);
      if (o.validate) std::printf("%10ld", wrong);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return 0;
}
