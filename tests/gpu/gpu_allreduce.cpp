// GPU buffers through ringmend, checked against a host reference on every
// rank: every type and operation, 0 B to 256 MiB, odd sizes, in place and
// out of place, with and without a stream. With RINGMEND_FAULT a member is
// killed inside a call; every survivor checks every call's result over the
// members whose inputs it holds (docs/gpu.md).
//
//   gpu_allreduce --probe                       exit 0 if a GPU is usable, 77 (skip) if not
//   gpu_allreduce [--max-bytes N] [--calls N]   correctness sweep, then N calls of 1 MiB + 3 floats
//   gpu_allreduce --fault-calls N --count C     N calls of C float32/int32 (the fault tests)
//   [--cuda-first]  the GPU made current before the Runtime starts
//                 [--sleep-ms MS] [--pid-dir DIR]  a pause after each call; each rank writes
//                                                  DIR/rankR.pid once started (kill_random_gpu.sh)
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ringmend/ringmend.hpp"
#include "test_data.hpp"

namespace {

using ringmend::DataType;
using ringmend::ReduceOp;

void cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) {
    std::fprintf(stderr, "CUDA %s: %s\n", what, cudaGetErrorString(rc));
    std::exit(3);
  }
}

struct Checker {
  explicit Checker(ringmend::Communicator& c) : comm(c) {}
  ringmend::Communicator& comm;
  int failures = 0;
  void* d_in = nullptr;
  void* d_out = nullptr;
  std::size_t capacity = 0;
  cudaStream_t stream = nullptr;
  int salt = 0;  // a different input in every call

  void reserve(std::size_t bytes) {
    if (bytes <= capacity) return;
    if (d_in) cuda(cudaFree(d_in), "cudaFree");
    if (d_out) cuda(cudaFree(d_out), "cudaFree");
    cuda(cudaMalloc(&d_in, bytes), "cudaMalloc");
    cuda(cudaMalloc(&d_out, bytes), "cudaMalloc");
    capacity = bytes;
  }

  // How the call is made: an explicit placement (MemoryKind::Cuda, with or
  // without a stream), MemoryKind::Auto (recognised by CUDA), or
  // non-blocking (iallreduce, recognised likewise).
  enum class How { Cuda, CudaStream, Auto, NonBlocking };

  bool call(std::size_t count, DataType t, ReduceOp op, bool in_place, How how, const char* what) {
    const bool with_stream = how == How::CudaStream;
    const std::size_t bytes = count * ringmend::size_of(t);
    reserve(std::max<std::size_t>(bytes, 1));
    const std::vector<int> before = comm.member_ids();
    ++salt;
    // The tests' inputs by member id, and their reduction (tests/mpi/test_data.hpp).
    ringmend::testing::TypedBuffer host(t, count);
    host.fill_input(comm.member_id(), op, salt);
    cuda(cudaMemcpy(d_in, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    if (!in_place) cuda(cudaMemset(d_out, 0xff, bytes), "cudaMemset");
    // cudaMemcpy from pageable memory may return before its last piece
    // lands, and cudaMemset is queued on the default stream: neither is
    // ordered with the non-blocking stream the call may be given.
    cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    ringmend::Placement where;
    where.memory = how == How::Auto ? ringmend::MemoryKind::Auto : ringmend::MemoryKind::Cuda;
    where.cuda_stream = with_stream ? stream : nullptr;
    void* out = in_place ? d_in : d_out;
    const ringmend::CollectiveResult r = how == How::NonBlocking
                                             ? comm.iallreduce(d_in, out, count, t, op).wait()
                                             : comm.allreduce(d_in, out, count, t, op, where);
    if (with_stream) cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    std::memset(host.data(), 0x5a, host.bytes.size());
    cuda(cudaMemcpy(host.data(), out, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    // The result holds every member's input of before the call when a
    // survivor had finished it; else those of the members after it.
    const std::vector<int> members =
        r.contributors == static_cast<int>(before.size()) ? before : comm.member_ids();
    if (const std::size_t wrong = host.wrong(members, op, salt); wrong > 0) {
      static const char* const kHow[] = {"", " on a stream", " (auto)", " (non-blocking)"};
      std::printf("rank %d: %s %s/%s count %zu %s%s: %zu elements wrong (%zu members)\n", comm.rank(), what,
                  std::string(ringmend::name_of(t)).c_str(), std::string(ringmend::name_of(op)).c_str(),
                  count, in_place ? "in place" : "out of place", kHow[static_cast<int>(how)], wrong,
                  members.size());
      ++failures;
      return false;
    }
    if (r.recovered)
      std::printf("rank %d: call #%llu recovered: lost %zu, now %d ranks, %d contributors\n", comm.rank(),
                  static_cast<unsigned long long>(comm.collectives_called()), r.lost.size(), comm.size(),
                  r.contributors);
    return true;
  }
};

bool arg_flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return true;
  return false;
}

const char* arg_text(int argc, char** argv, const char* name) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return nullptr;
}

std::size_t arg_size(int argc, char** argv, const char* name, std::size_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::strtoull(argv[i + 1], nullptr, 10);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--probe") == 0) {
    int n = 0;
    const cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess || n == 0) {
      std::printf("no GPU usable here (%s)\n", rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
      return 77;
    }
    if (!ringmend::Communicator::cuda_built()) {
      std::printf("ringmend was built without CUDA\n");
      return 77;
    }
    return 0;
  }
  try {
    // --cuda-first: the program works on its GPU before ringmend starts (a
    // current context), as most training programs do; else only after.
    if (arg_flag(argc, argv, "--cuda-first")) {
      int n = 0;
      cuda(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
      const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
      cuda(cudaSetDevice((local ? std::atoi(local) : 0) % n), "cudaSetDevice");
      cuda(cudaFree(nullptr), "cudaFree");  // makes the context
    }
    ringmend::Runtime rt(&argc, &argv);
    auto& comm = rt.world();
    int devices = 0;
    cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    cuda(cudaSetDevice((local ? std::atoi(local) : 0) % devices), "cudaSetDevice");
    if (const char* dir = arg_text(argc, argv, "--pid-dir")) {
      const std::string file = std::string(dir) + "/rank" + std::to_string(comm.member_id()) + ".pid";
      if (FILE* f = std::fopen(file.c_str(), "w")) {
        std::fprintf(f, "%d\n", static_cast<int>(getpid()));
        std::fclose(f);
      }
    }
    Checker check(comm);
    cuda(cudaStreamCreateWithFlags(&check.stream, cudaStreamNonBlocking), "cudaStreamCreate");

    const std::size_t fault_calls = arg_size(argc, argv, "--fault-calls", 0);
    if (fault_calls > 0) {
      const std::size_t count = arg_size(argc, argv, "--count", (1 << 20) + 3);
      const std::size_t sleep_ms = arg_size(argc, argv, "--sleep-ms", 0);
      for (std::size_t c = 0; c < fault_calls; ++c) {
        const DataType t = c % 2 ? DataType::Int32 : DataType::Float32;
        check.call(count, t, ReduceOp::Sum, c % 3 == 0, static_cast<Checker::How>(c % 4), "fault run");
        if (sleep_ms) usleep(static_cast<useconds_t>(sleep_ms * 1000));
      }
    } else {
      const std::size_t max_bytes = arg_size(argc, argv, "--max-bytes", 256u << 20);
      // Every type and operation at odd sizes up to 1 MiB + a few elements,
      // in place or not, each of the four ways of calling in turn.
      const std::size_t counts[] = {0, 1, 3, 17, 1023, 4097, 65537, (1u << 18) + 5};
      int k = 0;
      for (DataType t : {DataType::Float32, DataType::Float64, DataType::Int32, DataType::Int64,
                         DataType::Float16, DataType::BFloat16})
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max})
          for (std::size_t count : counts) {
            check.call(count, t, op, (count & 1) != 0, static_cast<Checker::How>(k++ % 4), "sweep");
          }
      // Large messages, float32 sum, up to max_bytes (+ an odd tail).
      for (std::size_t bytes = 4u << 20; bytes <= max_bytes; bytes *= 4) {
        check.call(bytes / 4 - 1, DataType::Float32, ReduceOp::Sum, false, Checker::How::CudaStream, "large");
        check.call(bytes / 4, DataType::Float32, ReduceOp::Sum, true, Checker::How::NonBlocking, "large");
      }
      // A host buffer marked as GPU memory is an error on every rank.
      std::vector<float> host_buffer(16, 1.0f);
      ringmend::Placement wrong;
      wrong.memory = ringmend::MemoryKind::Cuda;
      try {
        comm.allreduce(host_buffer.data(), host_buffer.size(), DataType::Float32, ReduceOp::Sum, wrong);
        std::printf("rank %d: a host buffer passed as GPU memory was accepted\n", comm.rank());
        ++check.failures;
      } catch (const ringmend::Error& e) {
        if (e.code() != ringmend::Errc::InvalidArgument) {
          std::printf("rank %d: wrong error for a host buffer as GPU memory: %s\n", comm.rank(), e.what());
          ++check.failures;
        }
      }
    }
    // The job goes on after: one more call over everyone left.
    check.call(4099, DataType::Float32, ReduceOp::Sum, false, Checker::How::Cuda, "last");
    if (check.failures == 0)
      std::printf("rank %d: TEST PASSED (%d ranks at the end)\n", comm.rank(), comm.size());
    cudaStreamDestroy(check.stream);
    cudaFree(check.d_in);
    cudaFree(check.d_out);
    return check.failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
