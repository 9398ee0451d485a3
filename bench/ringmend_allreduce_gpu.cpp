// Allreduce of GPU buffers, in nccl-tests' columns, side by side in one job:
//   ringmend  Communicator::allreduce on device pointers (MemoryKind::Cuda, a stream)
//   nccl      NCCL's own ncclAllReduce over all ranks (where NCCL accepts the
//             placement: one GPU per rank, or NCCL_HOSTID per rank)
//   mpi       MPI_Allreduce on host-staged buffers (copy to pinned memory,
//             MPI_Allreduce in place, copy back; no fp16/bf16 in MPI)
//
//   ringmend_allreduce_gpu [-m MIN:MAX] [--step-factor F] [-i N] [-x N] [-r RUNS]
//                          [-T float|double|int|long|half|bfloat16]
//                          [--impl ringmend,nccl,mpi]          (--help: every option)
//
// The columns: kColumns below (the end of --help).
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_cli.hpp"
#include "bench/bench_util.hpp"
#include "gpu/nccl_comm.hpp"
#include "ringmend/ringmend.hpp"

namespace {

namespace rb = ringmend::bench;

void cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) {
    std::fprintf(stderr, "CUDA %s: %s\n", what, cudaGetErrorString(rc));
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
}

struct Options {
  std::size_t min_bytes = 8, max_bytes = 64u << 20, factor = 2;
  int iters = 20, warmup = 5, runs = 5;
  ringmend::DataType type = ringmend::DataType::Float32;
  std::vector<std::string> impls{"ringmend", "nccl", "mpi"};
  bool runs_impl(const std::string& name) const {
    return std::find(impls.begin(), impls.end(), name) != impls.end();
  }
};

constexpr const char* kColumns = R"(time: the mean time of one call (us) in a run of --iterations calls, each
run timed from a barrier to the slowest rank's end; the median of --runs
runs, with the fastest and slowest run beside it. algbw = size / time,
busbw = algbw * 2(n-1)/n (nccl-tests). #wrong: elements that differ from
the expected sum after the timed runs (every rank's input is its rank + 1).
MPI has no 16-bit float type: no mpi row for half and bfloat16.)";

Options parse(int argc, char** argv) {
  Options o;
  rb::Cli cli("ringmend_allreduce_gpu",
              "Allreduce of GPU buffers in nccl-tests' columns, side by side in one job: ringmend on device "
              "pointers (a stream), NCCL's own ncclAllReduce (where NCCL accepts the placement), and "
              "MPI_Allreduce on host-staged buffers.",
              kColumns);
  cli.add_message_sizes(o.min_bytes, o.max_bytes, 1);
  cli.add_step_factor(o.factor);
  cli.add_iterations(o.iters, "calls per run")->capture_default_str();
  cli.add_warmup(o.warmup, "warm-up calls per size and implementation")->capture_default_str();
  cli.add_count("-r,--runs", o.runs, 1, rb::kMaxCount,
                "timed runs per size and implementation (their median is printed)");
  cli.add_type(o.type, {"float", "double", "int", "long", "half", "bfloat16"});
  cli.app()
      .add_option("--impl", o.impls, "what to time, a comma-separated list")
      ->type_name("NAME,...")
      ->delimiter(',')
      ->check(CLI::IsMember({"ringmend", "nccl", "mpi"}))
      ->default_str("ringmend,nccl,mpi");
  cli.parse(argc, argv);
  return o;
}

// rank + 1 in every element, in the call's type.
void fill(std::vector<std::byte>& host, std::size_t count, ringmend::DataType t, int rank) {
  host.resize(count * ringmend::size_of(t));
  for (std::size_t i = 0; i < count; ++i) {
    const float v = static_cast<float>(rank + 1);
    switch (t) {
      case ringmend::DataType::Float32:
        reinterpret_cast<float*>(host.data())[i] = v;
        break;
      case ringmend::DataType::Float64:
        reinterpret_cast<double*>(host.data())[i] = v;
        break;
      case ringmend::DataType::Int32:
        reinterpret_cast<std::int32_t*>(host.data())[i] = rank + 1;
        break;
      case ringmend::DataType::Int64:
        reinterpret_cast<std::int64_t*>(host.data())[i] = rank + 1;
        break;
      case ringmend::DataType::Float16:
        reinterpret_cast<ringmend::float16*>(host.data())[i] = ringmend::to_float16(v);
        break;
      case ringmend::DataType::BFloat16:
        reinterpret_cast<ringmend::bfloat16*>(host.data())[i] = ringmend::to_bfloat16(v);
        break;
    }
  }
}

double element(const std::vector<std::byte>& host, std::size_t i, ringmend::DataType t) {
  switch (t) {
    case ringmend::DataType::Float32:
      return reinterpret_cast<const float*>(host.data())[i];
    case ringmend::DataType::Float64:
      return reinterpret_cast<const double*>(host.data())[i];
    case ringmend::DataType::Int32:
      return reinterpret_cast<const std::int32_t*>(host.data())[i];
    case ringmend::DataType::Int64:
      return static_cast<double>(reinterpret_cast<const std::int64_t*>(host.data())[i]);
    case ringmend::DataType::Float16:
      return ringmend::to_float(reinterpret_cast<const ringmend::float16*>(host.data())[i]);
    case ringmend::DataType::BFloat16:
      return ringmend::to_float(reinterpret_cast<const ringmend::bfloat16*>(host.data())[i]);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);  // before MPI starts: a bad flag stops every rank alike
  ringmend::Runtime rt(&argc, &argv);
  auto& comm = rt.world();
  const int rank = comm.rank(), n = comm.size();
  int devices = 0;
  if (const cudaError_t rc = cudaGetDeviceCount(&devices); rc != cudaSuccess || devices == 0) {
    if (rank == 0)
      std::printf("# ringmend_allreduce_gpu: no GPU usable here (%s)\n",
                  rc != cudaSuccess ? cudaGetErrorString(rc) : "no device");
    return 1;
  }
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  const int device = (local ? std::atoi(local) : 0) % std::max(devices, 1);
  cuda(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t stream = nullptr;
  cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  // NCCL over every rank, where it accepts the placement.
  ncclComm_t nccl = nullptr;
  std::string nccl_note;
  if (o.runs_impl("nccl")) {
    ncclUniqueId id{};
    if (rank == 0) ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    const ncclResult_t rc = ncclCommInitRank(&nccl, n, id, rank);
    int ok = rc == ncclSuccess ? 1 : 0, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
      nccl_note = std::string("NCCL refused this placement: ") + ncclGetErrorString(rc);
      if (nccl) ncclCommAbort(nccl);
      nccl = nullptr;
    }
  }
  char bus[32] = {};
  cudaDeviceGetPCIBusId(bus, sizeof bus, device);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, device);
  if (rank == 0) {
    int nccl_version = 0;
    ncclGetVersion(&nccl_version);
    std::printf("# ringmend_allreduce_gpu: %d ranks, GPU %s (%s), NCCL %d, ringmend %s\n", n, prop.name, bus,
                nccl_version, ringmend::version());
    if (!nccl_note.empty()) std::printf("# %s\n", nccl_note.c_str());
    std::printf("# time: median of %d runs of %d calls (us); [min, max] over the runs\n", o.runs, o.iters);
    std::printf("%12s %12s %9s %6s %9s %11s %21s %9s %9s %7s\n", "size", "count", "type", "redop", "impl",
                "time(us)", "[min, max]", "algbw", "busbw", "#wrong");
  }
  const std::size_t esize = ringmend::size_of(o.type);
  void* d = nullptr;
  void* pinned = nullptr;
  cuda(cudaMalloc(&d, std::max<std::size_t>(o.max_bytes, esize)), "cudaMalloc");
  cuda(cudaHostAlloc(&pinned, std::max<std::size_t>(o.max_bytes, esize), cudaHostAllocDefault),
       "cudaHostAlloc");
  std::vector<std::byte> host;
  // An idle GPU runs at a fraction of its clock for its first milliseconds
  // of work: keep it busy for half a second before the first size.
  {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (std::chrono::steady_clock::now() < until) {
      cuda(cudaMemsetAsync(d, 0, std::max<std::size_t>(o.max_bytes, esize), stream), "cudaMemsetAsync");
      cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
  }
  ringmend::Placement where;
  where.memory = ringmend::MemoryKind::Cuda;
  where.cuda_stream = stream;

  for (std::size_t bytes = std::max(o.min_bytes, esize); bytes <= o.max_bytes; bytes *= o.factor) {
    const std::size_t count = bytes / esize;
    fill(host, count, o.type, rank);
    for (const char* impl : {"ringmend", "nccl", "mpi"}) {
      const std::string name = impl;
      if ((name == "ringmend" && !o.runs_impl(name)) || (name == "nccl" && !nccl) ||
          (name == "mpi" && (!o.runs_impl(name) || rb::mpi_type_of(o.type) == MPI_DATATYPE_NULL)))
        continue;
      const auto one = [&] {
        if (name == "ringmend") {
          comm.allreduce(d, count, o.type, ringmend::ReduceOp::Sum, where);
          cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        } else if (name == "nccl") {
          ncclAllReduce(d, d, count, ringmend::gpu::nccl_type(o.type), ncclSum, nccl, stream);
          cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        } else {
          cuda(cudaMemcpyAsync(pinned, d, count * esize, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
          cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
          MPI_Allreduce(MPI_IN_PLACE, pinned, static_cast<int>(count), rb::mpi_type_of(o.type), MPI_SUM,
                        MPI_COMM_WORLD);
          cuda(cudaMemcpyAsync(d, pinned, count * esize, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
          cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        }
      };
      // Timed on zeros (the sums stay zero; only time matters here).
      cuda(cudaMemset(d, 0, count * esize), "cudaMemset");
      cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      for (int w = 0; w < o.warmup; ++w) one();
      std::vector<double> runs;
      for (int r = 0; r < o.runs; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        const auto t0 = std::chrono::steady_clock::now();
        for (int it = 0; it < o.iters; ++it) one();
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                    o.iters;
        MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        runs.push_back(us);
      }
      // Then one checked call.
      cuda(cudaMemcpy(d, host.data(), count * esize, cudaMemcpyHostToDevice), "cudaMemcpy");
      cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // the default stream's copy, before `stream`
      one();
      std::vector<std::byte> back(count * esize);
      cuda(cudaMemcpy(back.data(), d, count * esize, cudaMemcpyDeviceToHost), "cudaMemcpy");
      long wrong = 0;
      const double want = n * (n + 1) / 2.0;
      for (std::size_t i = 0; i < count; ++i) wrong += element(back, i, o.type) != want;
      MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      std::sort(runs.begin(), runs.end());
      const double median = runs[runs.size() / 2];
      const double algbw = static_cast<double>(bytes) / median / 1e3;  // GB/s
      const double busbw = algbw * 2.0 * (n - 1) / std::max(n, 1);
      char spread[48];
      std::snprintf(spread, sizeof spread, "[%.1f, %.1f]", runs.front(), runs.back());
      if (rank == 0)
        std::printf("%12zu %12zu %9s %6s %9s %11.1f %21s %9.2f %9.2f %7ld\n", bytes, count,
                    std::string(ringmend::name_of(o.type)).c_str(), "sum", impl, median, spread, algbw, busbw,
                    wrong);
    }
    if (rank == 0) std::fflush(stdout);
  }
  if (nccl) ncclCommDestroy(nccl);
  cudaFree(d);
  cudaFreeHost(pinned);
  cudaStreamDestroy(stream);
  return 0;
}
