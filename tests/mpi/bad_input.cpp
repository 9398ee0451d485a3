// Bad input gives the same clear error on every rank, never a hang, and the
// communicator stays usable afterwards.
//
//   bad_input --case=count_mismatch|type_mismatch|op_mismatch|null_buffer|
//                    bad_type|bad_root|zero_count|overlap|bad_env|kind_mismatch|root_mismatch|
//                    grow_no_spares|grow_negative|release_all|release_out_of_range|
//                    release_mismatch|release_twice|after_release|host_as_gpu|
//                    allgatherv_counts_mismatch|allgatherv_short_counts|alltoall_pair_mismatch|
//                    alltoall_self_mismatch
#include <cstdio>
#include <numeric>

#include "test_data.hpp"

using namespace ringmend;
using namespace ringmend::testing;

namespace {

int follow_up_works(Communicator& comm) {
  TypedBuffer b(DataType::Int32, 1001);
  b.fill_input(comm.member_id(), ReduceOp::Sum, 1);
  comm.allreduce(b.data(), b.count, DataType::Int32, ReduceOp::Sum);
  return b.wrong(comm.member_ids(), ReduceOp::Sum, 1) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  require_known_options(argc, argv, {"case", "expect-text"});
  const std::string which = option(argc, argv, "case", "");
  const std::string expect_text = option(argc, argv, "expect-text", "");
  if (which == "bad_env") {
    // RINGMEND_CHUNK_BYTES is set to garbage by the test.
    try {
      Runtime rt(&argc, &argv);
      std::printf("TEST FAILED: bad RINGMEND_CHUNK_BYTES was accepted\n");
      return 1;
    } catch (const Error& e) {
      const bool ok = e.code() == Errc::BadEnvironment &&
                      std::string(e.what()).find("RINGMEND_CHUNK_BYTES") != std::string::npos;
      std::printf("TEST %s: %s\n", ok ? "PASSED" : "FAILED", e.what());
      return ok ? 0 : 1;
    }
  }
  Runtime rt(&argc, &argv);
  Communicator& comm = rt.world();
  const int odd = comm.size() > 1 ? 1 : 0;  // the rank that misbehaves
  const bool me_odd = comm.rank() == odd;
  std::size_t count = 5000;
  DataType t = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  std::vector<double> in(count + 16, 1.0), out(count + 16, 0.0);
  Errc expected = Errc::Mismatch;
  try {
    if (which == "count_mismatch") {
      comm.allreduce(in.data(), out.data(), me_odd ? count + 1 : count, t, op);
    } else if (which == "type_mismatch") {
      comm.allreduce(in.data(), out.data(), count, me_odd ? DataType::Float64 : t, op);
    } else if (which == "op_mismatch") {
      comm.allreduce(in.data(), out.data(), count, t, me_odd ? ReduceOp::Max : op);
    } else if (which == "null_buffer") {
      expected = Errc::InvalidArgument;
      comm.allreduce(me_odd ? nullptr : in.data(), out.data(), count, t, op);
    } else if (which == "bad_type") {
      expected = Errc::InvalidArgument;
      comm.allreduce(in.data(), out.data(), count, me_odd ? static_cast<DataType>(9) : t, op);
    } else if (which == "overlap") {
      expected = Errc::InvalidArgument;
      comm.allreduce(in.data(), me_odd ? in.data() + 1 : out.data(), count, t, op);
    } else if (which == "host_as_gpu") {
      // One rank calls host memory GPU memory: without a GPU (or without
      // CUDA built in) and with one alike, an error on every rank.
      expected = Errc::InvalidArgument;
      Placement where;
      where.memory = me_odd ? MemoryKind::Cuda : MemoryKind::Auto;
      comm.allreduce(in.data(), out.data(), count, t, op, where);
    } else if (which == "allgatherv_counts_mismatch") {
      // One rank believes its neighbour sends one element more: the block's
      // size is checked as it arrives.
      std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), 100);
      if (me_odd) counts[0] = 101;
      std::vector<double> all(std::accumulate(counts.begin(), counts.end(), std::size_t{0}));
      comm.allgatherv(in.data(), counts, DataType::Float64, all.data());
    } else if (which == "allgatherv_short_counts") {
      expected = Errc::InvalidArgument;
      std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size() - (me_odd ? 1 : 0)), 100);
      comm.allgatherv(in.data(), counts, DataType::Float64, out.data());
    } else if (which == "alltoall_pair_mismatch") {
      // The odd rank expects one element more from rank 0 than rank 0 sends it.
      std::vector<std::size_t> send(static_cast<std::size_t>(comm.size()), 50), recv = send;
      if (me_odd) recv[0] = 51;
      comm.alltoall(in.data(), send, DataType::Float64, out.data(), recv);
    } else if (which == "alltoall_self_mismatch") {
      expected = Errc::InvalidArgument;
      std::vector<std::size_t> send(static_cast<std::size_t>(comm.size()), 50), recv = send;
      if (me_odd) recv[static_cast<std::size_t>(comm.rank())] = 49;
      comm.alltoall(in.data(), send, DataType::Float64, out.data(), recv);
    } else if (which == "kind_mismatch") {
      // A barrier on one rank, a broadcast on the others: different calls
      // that never meet; said at once, not at the call's timeout.
      if (me_odd)
        comm.barrier();
      else
        comm.broadcast(in.data(), 64, 0);
    } else if (which == "root_mismatch") {
      comm.broadcast(in.data(), 64, me_odd ? 1 : 0);
    } else if (which == "bad_root") {
      expected = Errc::InvalidArgument;
      comm.broadcast(in.data(), 64, comm.size() + 3);
    } else if (which == "grow_no_spares") {
      expected = Errc::InvalidArgument;
      comm.grow(1);
    } else if (which == "grow_negative") {
      expected = Errc::InvalidArgument;
      comm.grow(me_odd ? -1 : 1);  // one rank's bad argument fails every rank
    } else if (which == "release_all") {
      expected = Errc::InvalidArgument;
      comm.release_last(comm.size());
    } else if (which == "release_out_of_range") {
      expected = Errc::InvalidArgument;
      comm.release({comm.size()});
    } else if (which == "release_twice") {
      expected = Errc::InvalidArgument;
      comm.release({0, 0});
    } else if (which == "release_mismatch") {
      comm.release({me_odd ? 0 : 1});
    } else if (which == "after_release") {
      // The released member's next call is an error; the others go on.
      CollectiveResult r = comm.release({odd});
      if (r.left) {
        try {
          comm.barrier();
          std::printf("TEST FAILED rank %d: a released member's call did not fail\n", comm.rank());
          return 1;
        } catch (const Error& e) {
          const bool ok = e.code() == Errc::Released;
          std::printf("TEST %s released member: %s\n", ok ? "PASSED" : "FAILED", e.what());
          return ok ? 0 : 1;
        }
      }
      const bool ok = r.released.size() == 1 && !r.left && comm.size() == 2;
      const int rc = ok ? follow_up_works(comm) : 1;
      std::printf("TEST %s rank %d: released one member, %d ranks left\n", rc ? "FAILED" : "PASSED",
                  comm.rank(), comm.size());
      return rc;
    } else if (which == "zero_count") {
      // A no-op on every rank: nothing is written, no error.
      CollectiveResult r = comm.allreduce(in.data(), out.data(), 0, t, op);
      const bool ok = out[0] == 0.0 && !r.recovered && r.contributors == comm.size();
      const int rc = ok ? follow_up_works(comm) : 1;
      std::printf("TEST %s rank %d: zero count is a no-op\n", rc ? "FAILED" : "PASSED", comm.rank());
      return rc;
    } else {
      std::fprintf(stderr, "unknown --case=%s\n", which.c_str());
      return 2;
    }
    std::printf("TEST FAILED rank %d: no error for %s\n", comm.rank(), which.c_str());
    return 1;
  } catch (const Error& e) {
    const bool ok = e.code() == expected && std::string(e.what()).find(expect_text) != std::string::npos;
    std::printf("rank %d: %s error: %s\n", comm.rank(), ok ? "expected" : "UNEXPECTED", e.what());
    if (!ok) {
      std::printf("TEST FAILED rank %d\n", comm.rank());
      return 1;
    }
  }
  const int rc = follow_up_works(comm);
  std::printf("TEST %s rank %d: follow-up allreduce %s\n", rc ? "FAILED" : "PASSED", comm.rank(),
              rc ? "failed" : "ok");
  return rc;
}
