// ringmend's allreduce against MPI_Allreduce of the same MPI, in one job:
// every type and operation over a size sweep from 0 bytes to 64 MiB with odd
// sizes and the sizes around each algorithm switch. Integers must match
// exactly; floating-point sums and products may differ only by rounding
// (the two libraries add in different orders), min/max exactly.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "ringmend/ringmend.hpp"

using namespace ringmend;

namespace {

MPI_Datatype mpi_type(DataType t) {
  switch (t) {
    case DataType::Float32:
      return MPI_FLOAT;
    case DataType::Float64:
      return MPI_DOUBLE;
    case DataType::Int32:
      return MPI_INT32_T;
    case DataType::Int64:
      return MPI_INT64_T;
    case DataType::Float16:  // MPI has no 16-bit float type: allreduce_correctness checks these
    case DataType::BFloat16:
      break;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return MPI_SUM;
    case ReduceOp::Prod:
      return MPI_PROD;
    case ReduceOp::Min:
      return MPI_MIN;
    case ReduceOp::Max:
      return MPI_MAX;
  }
  return MPI_OP_NULL;
}

template <class T>
void fill(std::vector<T>& v, ReduceOp op, std::mt19937_64& rng) {
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      // Products of values near 1 stay finite for any rank count.
      x = op == ReduceOp::Prod ? static_cast<T>(0.9 + 0.2 * std::uniform_real_distribution<double>(0, 1)(rng))
                               : static_cast<T>(std::uniform_real_distribution<double>(-1, 1)(rng));
    } else {
      x = op == ReduceOp::Prod ? static_cast<T>(static_cast<int>(rng() % 3) - 1)
                               : static_cast<T>(static_cast<std::int64_t>(rng() % 2001) - 1000);
    }
  }
}

template <class T>
std::size_t compare(const std::vector<T>& got, const std::vector<T>& want, ReduceOp op, int ranks) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      const bool exact = op == ReduceOp::Min || op == ReduceOp::Max;
      // Relative rounding of a sum of `ranks` terms of magnitude <= 1.
      const double tol =
          exact ? 0
                : 8.0 * ranks * std::numeric_limits<T>::epsilon() * std::max(1.0, std::fabs(double(want[i])));
      if (std::fabs(double(got[i]) - double(want[i])) > tol) ++wrong;
    } else {
      if (got[i] != want[i]) ++wrong;
    }
  }
  return wrong;
}

template <class T>
std::size_t check(Communicator& comm, std::size_t count, DataType t, ReduceOp op, std::uint64_t seed) {
  std::mt19937_64 rng(seed * 1000003u + static_cast<std::uint64_t>(comm.member_id()));
  std::vector<T> in(count), out(count), ref(count);
  fill(in, op, rng);
  comm.allreduce(in.data(), out.data(), count, t, op);
  MPI_Allreduce(in.data(), ref.data(), static_cast<int>(count), mpi_type(t), mpi_op(op), MPI_COMM_WORLD);
  return compare(out, ref, op, comm.size());
}

}  // namespace

int main(int argc, char** argv) {
  Runtime rt(&argc, &argv);
  Communicator& comm = rt.world();
  const std::size_t max_bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (std::size_t{64} << 20);
  // Element counts: odd sizes, the one-shot limit (16 KiB) and shared-memory
  // chunk (256 KiB) boundaries for 4- and 8-byte types, then doubling to the
  // maximum.
  std::vector<std::size_t> counts{0,    1,    3,    17,    1023,  2047,  2048,  2049,
                                  4095, 4096, 4097, 65535, 65536, 65537, 262147};
  for (std::size_t c = std::size_t{1} << 20; c * 4 <= max_bytes; c <<= 2) counts.push_back(c + 1);
  const DataType types[] = {DataType::Float32, DataType::Float64, DataType::Int32, DataType::Int64};
  const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max};
  std::size_t failures = 0;
  std::uint64_t seed = 0;
  for (std::size_t count : counts)
    for (DataType t : types)
      for (ReduceOp op : ops) {
        ++seed;
        // Beyond 4 MiB: one type per operation keeps the run short.
        if (count * size_of(t) > (std::size_t{4} << 20) && !(static_cast<int>(t) == static_cast<int>(op) % 4))
          continue;
        if (count * size_of(t) > max_bytes) continue;
        std::size_t wrong = 0;
        switch (t) {
          case DataType::Float32:
            wrong = check<float>(comm, count, t, op, seed);
            break;
          case DataType::Float64:
            wrong = check<double>(comm, count, t, op, seed);
            break;
          case DataType::Int32:
            wrong = check<std::int32_t>(comm, count, t, op, seed);
            break;
          case DataType::Int64:
            wrong = check<std::int64_t>(comm, count, t, op, seed);
            break;
          case DataType::Float16:  // not in `types`: MPI has no 16-bit float
          case DataType::BFloat16:
            break;
        }
        if (wrong) {
          ++failures;
          std::fprintf(stderr, "rank %d: count=%zu type=%s op=%s: %zu elements differ from MPI_Allreduce\n",
                       comm.rank(), count, std::string(name_of(t)).c_str(), std::string(name_of(op)).c_str(),
                       wrong);
        }
      }
  std::printf("TEST %s world rank %d: %zu failures\n", failures ? "FAILED" : "PASSED", comm.member_id(),
              failures);
  return failures ? 1 : 0;
}
