// Every type and operation, in place and out of place, sizes from 0 to over
// 16 MiB including counts not divisible by the number of ranks; broadcast
// from every root; barrier. Results are checked exactly.
#include <cstdio>

#include "test_data.hpp"

using namespace ringmend;
using namespace ringmend::testing;

int main(int argc, char** argv) {
  Runtime rt(&argc, &argv);
  Communicator& comm = rt.world();
  const int n = comm.size();
  std::size_t failures = 0;
  const std::vector<std::size_t> counts{0,
                                        1,
                                        2,
                                        3,
                                        7,
                                        static_cast<std::size_t>(n),
                                        static_cast<std::size_t>(n) + 1,
                                        1000,
                                        65537,
                                        262147,
                                        (16u << 20) / 4 + 3};
  const DataType types[] = {DataType::Float32, DataType::Float64, DataType::Int32,
                            DataType::Int64,   DataType::Float16, DataType::BFloat16};
  const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max};
  int salt = 0;
  for (std::size_t count : counts)
    for (DataType t : types)
      for (ReduceOp op : ops) {
        // The largest size only for float sum (every type at 16 MiB is slow under sanitizers).
        if (count > 1000000 && !(t == DataType::Float32 && op == ReduceOp::Sum) &&
            !(t == DataType::Int64 && op == ReduceOp::Max))
          continue;
        for (int in_place = 0; in_place < 2; ++in_place) {
          ++salt;
          TypedBuffer in(t, count), out(t, count);
          in.fill_input(comm.member_id(), op, salt);
          CollectiveResult r = in_place ? comm.allreduce(in.data(), count, t, op)
                                        : comm.allreduce(in.data(), out.data(), count, t, op);
          TypedBuffer& result = in_place ? in : out;
          std::size_t wrong = result.wrong(comm.member_ids(), op, salt);
          if (wrong || r.recovered || r.contributors != n) {
            ++failures;
            std::fprintf(stderr, "rank %d: allreduce count=%zu type=%s op=%s in_place=%d: %zu wrong\n",
                         comm.rank(), count, std::string(name_of(t)).c_str(),
                         std::string(name_of(op)).c_str(), in_place, wrong);
          }
        }
      }
  // Broadcast from every root, several sizes.
  for (int root = 0; root < n; ++root)
    for (std::size_t bytes : {std::size_t{1}, std::size_t{4097}, std::size_t{3} << 20}) {
      std::vector<unsigned char> buf(bytes);
      for (std::size_t i = 0; i < bytes; ++i)
        buf[i] =
            comm.rank() == root ? static_cast<unsigned char>(i * 31 + static_cast<std::size_t>(root)) : 0;
      comm.broadcast(buf.data(), bytes, root);
      for (std::size_t i = 0; i < bytes; ++i)
        if (buf[i] != static_cast<unsigned char>(i * 31 + static_cast<std::size_t>(root))) {
          ++failures;
          std::fprintf(stderr, "rank %d: broadcast root=%d bytes=%zu wrong at %zu\n", comm.rank(), root,
                       bytes, i);
          break;
        }
    }
  if (comm.barrier().contributors != n) ++failures;
  std::printf("TEST %s world rank %d: %zu failures\n", failures ? "FAILED" : "PASSED", comm.member_id(),
              failures);
  return failures ? 1 : 0;
}
