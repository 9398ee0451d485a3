// One rank of a soak job (scripts/soak.sh): a seeded random sequence of
// allreduces (1 element to --max-bytes, every type and op, in place and out
// of place), broadcasts and barriers, while ranks are SIGKILLed from outside
// at random moments, start-up included.
//
//   soak_worker --dir=D --seed=S [--calls=N] [--max-bytes=B]
//
// Every rank draws the same sequence from the seed, so the ranks agree on
// each call's arguments without talking. Each allreduce result is checked
// exactly against the members the result says contributed; every call's
// outcome (arguments, contributors, a hash of the data) goes to
// D/results.<member id>, with the membership epoch after the call, which
// the script compares across survivors. The pid
// is written to D/pid.<world rank> before MPI starts, so that the script can
// kill a rank during MPI_Init. Exit status: 0 all verified, 1 a wrong result
// or an unexpected error, 4 the Runtime refused to start (the error is in
// the results file).
//
// With spares (RINGMEND_SPARES, ringmend-run --spares) the call number and
// a payload of --state-bytes drawn from the seed are registered state: a
// spare admitted in a lost rank's place checks the payload it received,
// draws the calls it missed, logs "joined ..." and goes on at the
// survivors' call, so that its lines from there on equal theirs.
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "../mpi/test_data.hpp"
#include "ringmend/core/hash.hpp"

using namespace ringmend;
using namespace ringmend::testing;

namespace {

std::string ids(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// A log-uniform element count from 1 to max_count: small and large messages
// are drawn equally often per decade.
std::size_t draw_count(std::mt19937_64& rng, std::size_t max_count) {
  std::uniform_real_distribution<double> e(0.0, std::log2(static_cast<double>(max_count)));
  return std::clamp<std::size_t>(static_cast<std::size_t>(std::exp2(e(rng))), 1, max_count);
}

const DataType kTypes[] = {DataType::Float32, DataType::Float64, DataType::Int32,
                           DataType::Int64,   DataType::Float16, DataType::BFloat16};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max};

// One call's arguments, drawn from the job's sequence.
struct CallDraw {
  std::uint64_t kind;  // < 12 allreduce, < 17 broadcast, else barrier
  DataType type;
  ReduceOp op;
  bool in_place;
  std::size_t count;
  std::uint64_t root_draw;
};

CallDraw draw_call(std::mt19937_64& rng, std::size_t max_bytes) {
  CallDraw d{};
  d.kind = rng() % 20;
  d.type = kTypes[rng() % std::size(kTypes)];
  d.op = kOps[rng() % std::size(kOps)];
  d.in_place = rng() % 2;
  d.count = draw_count(rng, std::max<std::size_t>(1, max_bytes / size_of(d.type)));
  d.root_draw = rng();
  return d;
}

unsigned char payload_byte(std::uint64_t seed, std::size_t i) {
  return static_cast<unsigned char>((i * 131 + seed) >> 3);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = option(argc, argv, "dir", ".");
  const std::uint64_t seed = std::stoull(option(argc, argv, "seed", "1"));
  const int calls = std::stoi(option(argc, argv, "calls", "60"));
  const std::size_t max_bytes = std::stoull(option(argc, argv, "max-bytes", "16777216"));
  const std::size_t state_bytes = std::stoull(option(argc, argv, "state-bytes", "0"));
  // The launcher's rank: mpirun's, else srun's (ringmend-run --launcher srun).
  const char* world_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!world_rank) world_rank = std::getenv("SLURM_PROCID");
  std::ofstream(dir + "/pid." + (world_rank ? world_rank : "x")) << ::getpid() << "\n";

  std::ofstream log;
  auto open_log = [&](int member) {
    log.open(dir + "/results." + std::to_string(member));
    log << std::unitbuf;
  };
  std::unique_ptr<Runtime> rt;
  try {
    rt = std::make_unique<Runtime>(&argc, &argv);
  } catch (const Error& e) {
    open_log(world_rank ? std::atoi(world_rank) : -1);
    log << "start-error " << to_string(e.code()) << ": " << e.what() << "\n";
    std::fprintf(stderr, "soak_worker: the runtime did not start: %s\n", e.what());
    return 4;
  }
  Communicator& comm = rt->world();
  open_log(comm.member_id());
  int call = 1;
  // Members hold the payload; a joiner's copy is zeros until its
  // registration restores what it received.
  std::vector<unsigned char> payload(state_bytes, 0);
  if (!comm.joined())
    for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = payload_byte(seed, i);
  // The root of the call in flight, by member id: a joiner that enters a
  // broadcast interrupted by a loss must name the root the members named
  // in their view, which its own (newer) view would renumber.
  int call_root = -1;
  comm.register_state("soak.call", &call, sizeof call);
  comm.register_state("soak.root", &call_root, sizeof call_root);
  bool resuming = comm.joined();
  if (state_bytes > 0) comm.register_state("soak.payload", payload.data(), payload.size());
  std::mt19937_64 rng(seed);
  int failures = 0;
  if (comm.joined()) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < payload.size(); ++i) wrong += payload[i] != payload_byte(seed, i);
    log << "joined call=" << call << " size=" << comm.size() << " epoch=" << comm.epoch()
        << " members=" << ids(comm.member_ids()) << " state=" << payload.size()
        << (wrong ? " WRONG state bytes=" + std::to_string(wrong) : std::string()) << "\n";
    if (wrong) ++failures;
    for (int missed = 1; missed < call; ++missed) draw_call(rng, max_bytes);
  } else {
    log << "started size=" << comm.size() << " epoch=" << comm.epoch()
        << " members=" << ids(comm.member_ids()) << "\n";
  }

  for (; call <= calls && failures == 0; ++call) {
    const auto [kind, type, op, in_place, count, root_draw] = draw_call(rng, max_bytes);
    std::ostringstream line;
    line << "call " << call;
    try {
      if (kind < 12) {
        TypedBuffer in(type, count), out(type, count);
        in.fill_input(comm.member_id(), op, call);
        const CollectiveResult r = in_place ? comm.allreduce(in.data(), count, type, op)
                                            : comm.allreduce(in.data(), out.data(), count, type, op);
        TypedBuffer& res = in_place ? in : out;
        const std::vector<int> from = contributors_of(comm, r);
        const std::size_t wrong = res.wrong(from, op, call);
        line << " allreduce " << name_of(type) << " " << name_of(op) << " n=" << count
             << (in_place ? " in-place" : " out-of-place") << " contributors=" << ids(from)
             << " hash=" << fnv1a(res.data(), count * size_of(type));
        if (wrong) {
          line << " WRONG=" << wrong;
          ++failures;
        }
      } else if (kind < 17) {
        const std::vector<int> ids_now = comm.member_ids();
        const int root_id = resuming ? call_root : ids_now[root_draw % ids_now.size()];
        call_root = root_id;
        // (A joiner is never admitted into a broadcast whose root was lost:
        // that call fails with RootLost first.)
        const int root =
            static_cast<int>(std::find(ids_now.begin(), ids_now.end(), root_id) - ids_now.begin());
        const std::size_t bytes = count * size_of(type);
        std::vector<unsigned char> buf(bytes);
        for (std::size_t i = 0; i < bytes; ++i)
          buf[i] =
              comm.rank() == root ? static_cast<unsigned char>(i * 31 + static_cast<std::size_t>(call)) : 0;
        const std::uint64_t expect = [&] {
          std::vector<unsigned char> ref(bytes);
          for (std::size_t i = 0; i < bytes; ++i)
            ref[i] = static_cast<unsigned char>(i * 31 + static_cast<std::size_t>(call));
          return fnv1a(ref.data(), bytes);
        }();
        line << " broadcast bytes=" << bytes << " root=" << root_id;
        try {
          const CollectiveResult r = comm.broadcast(buf.data(), bytes, root);
          const std::uint64_t h = fnv1a(buf.data(), bytes);
          line << " hash=" << h;
          if (h != expect) {
            line << " WRONG";
            ++failures;
          }
        } catch (const Error& e) {
          const auto& m = comm.member_ids();
          if (e.code() != Errc::RootLost || std::find(m.begin(), m.end(), root_id) != m.end()) throw;
          line << " root-lost";
        }
      } else {
        comm.barrier();
        line << " barrier";
      }
    } catch (const Error& e) {
      line << " error " << to_string(e.code()) << ": " << e.what();
      ++failures;
    }
    // Every survivor sees a recovery in the same call (docs/recovery.md).
    line << " epoch=" << comm.epoch() << " size=" << comm.size();
    resuming = false;
    log << line.str() << "\n";
  }
  log << (failures ? "failed" : "finished") << " size=" << comm.size() << " epoch=" << comm.epoch()
      << " members=" << ids(comm.member_ids()) << "\n";
  return failures ? 1 : 0;
}
