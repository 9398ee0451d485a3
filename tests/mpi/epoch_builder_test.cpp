// The epoch builder on its own, with real MPI, UCX and shared memory:
// Start (ids = world ranks), Shrink (a member leaves; ids are kept, ranks
// renumbered) and Grow (a process joins with no previous epoch and gets a
// new id). After every epoch, each algorithm the selector offers runs over
// the epoch's channels and is checked exactly: an allreduce of the member
// ids at a latency size and at a pipelined size, and a broadcast.
//
// 4 ranks. World rank 2 leaves in the Shrink and comes back as a joiner.
// A second Grow takes its exchange gathered beforehand (as the spare pool
// gathers it with its roster) and must give the same epoch.
#include "membership/epoch_builder.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "coll/pipeline_tuner.hpp"
#include "coll/selector.hpp"
#include "membership/ulfm_control.hpp"
#include "topo/location.hpp"
#include "transport/ucx_environment.hpp"

using namespace ringmend;
using membership::Epoch;
using membership::MemberId;

namespace {

int world_rank = 0;

[[noreturn]] void fail(const std::string& why) {
  std::printf("TEST FAILED (world rank %d): %s\n", world_rank, why.c_str());
  std::fflush(stdout);
  std::exit(1);
}

void expect(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

class Wait final : public transport::WaitContext {
 public:
  explicit Wait(Epoch& e) : e_(e) {}
  void check() override {
    if (e_.failure_noticed()) throw transport::Interrupted("failure");
    if (std::chrono::steady_clock::now() > deadline_) fail("a collective did not finish within 30 s");
  }
  void on_phase(transport::Phase, int) override {}
  bool oversubscribed() const override { return e_.oversubscribed; }

 private:
  Epoch& e_;
  std::chrono::steady_clock::time_point deadline_ =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
};

// Runs the selected algorithms over the epoch and checks every result.
void exercise(Epoch& e, const Settings& s, std::uint64_t& seq, const char* label) {
  coll::PipelineTuner pipeline(s.shm_buffer_bytes, {s.shm_chunk_bytes, s.shm_depth}, s.shm_tune);
  const coll::Tuning tuning{s.small_bytes, s.chunk_bytes, &pipeline};
  const double my_id = e.my_id();
  double want = 0;
  for (MemberId id : e.members) want += id;
  for (std::size_t count : {std::size_t{3}, std::size_t{300000}}) {
    std::vector<double> in(count), out(count, -1);
    for (std::size_t i = 0; i < count; ++i) in[i] = my_id + static_cast<double>(i % 7);
    coll::Call call;
    call.kind = coll::CollectiveKind::Allreduce;
    call.allreduce = {in.data(), out.data(), count, DataType::Float64, ReduceOp::Sum, ++seq};
    const coll::Algorithm& a = coll::select(call.kind, count * sizeof(double), e.layout, tuning);
    Wait wait(e);
    a.run(call, e.channels(), e.layout, tuning, wait);
    for (std::size_t i = 0; i < count; ++i)
      if (out[i] != want + static_cast<double>(e.size) * static_cast<double>(i % 7))
        fail(std::string(label) + ": " + coll::name_of(a.id()) + " allreduce of " + std::to_string(count) +
             " doubles: element " + std::to_string(i) + " is " + std::to_string(out[i]));
  }
  std::vector<int> data(1000, e.rank == e.size - 1 ? 7 : 0);
  coll::Call call;
  call.kind = coll::CollectiveKind::Broadcast;
  call.broadcast = {data.data(), data.size() * sizeof(int), e.size - 1, ++seq};
  Wait wait(e);
  coll::select(call.kind, call.bytes(), e.layout, tuning).run(call, e.channels(), e.layout, tuning, wait);
  for (int v : data)
    if (v != 7) fail(std::string(label) + ": broadcast gave " + std::to_string(v));
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 4) fail("run with 4 ranks");
  try {
    const Settings settings = Options{}.resolve();
    transport::set_ucx_environment_defaults();
    transport::UcxContext ucx;
    membership::EpochBuilder builder(settings, ucx, world_rank, size, topo::inspect_self().where);
    std::vector<std::string> steps;
    builder.after_step = [&](membership::BuildStep step, const Epoch&) { steps.push_back(name_of(step)); };
    std::uint64_t seq = 0;
    membership::MemberInfo mine;

    // Start: ids are the world ranks.
    auto e0 = builder.build(
        nullptr, membership::Start{membership::UlfmControl::first_members(MPI_COMM_WORLD, false)}, mine);
    expect(e0->ready, "Start: epoch not ready");
    expect(steps == std::vector<std::string>{"exchange", "plan", "fabric", "agreement"},
           "Start: the steps ran out of order");
    expect(e0->number == 0 && e0->size == 4 && e0->my_id() == world_rank, "Start: wrong epoch, size or id");
    expect(e0->members == std::vector<MemberId>{0, 1, 2, 3}, "Start: ids are not the world ranks");
    exercise(*e0, settings, seq, "Start");

    // Shrink: member 2 leaves (as a release would; no process dies).
    MPI_Comm survivors = MPI_COMM_NULL;
    MPI_Comm_split(membership::mpi_comm_of(*e0->ctrl), world_rank == 2 ? MPI_UNDEFINED : 0, world_rank,
                   &survivors);
    std::unique_ptr<Epoch> e1;
    if (world_rank != 2) {
      e1 = builder.build(
          e0.get(),
          membership::Shrink{{2}, std::make_unique<membership::UlfmControl>(ulfm::CommHandle(survivors))},
          mine);
      expect(e1->ready, "Shrink: epoch not ready");
      expect(e1->number == 1 && e1->size == 3, "Shrink: wrong epoch number or size");
      expect(e1->members == std::vector<MemberId>{0, 1, 3}, "Shrink: ids not kept");
      expect(e1->my_id() == world_rank, "Shrink: this member's id changed");
      expect(e1->rank == (world_rank == 3 ? 2 : world_rank), "Shrink: ranks not renumbered");
      exercise(*e1, settings, seq, "Shrink");
    }
    e0.reset();

    // Grow: world rank 2 comes back as a new process would, with no epoch.
    MPI_Comm grown = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &grown);
    auto e2 = builder.build(
        e1.get(),
        membership::Grow{
            1, std::make_unique<membership::UlfmControl>(ulfm::CommHandle(grown)), false, {}, {}},
        mine);
    expect(e2->ready, "Grow: epoch not ready");
    expect(e2->number == 2 && e2->size == 4, "Grow: wrong epoch number or size");
    expect(e2->members == std::vector<MemberId>{0, 1, 4, 3}, "Grow: the joiner did not get a new id");
    expect(e2->next_id == 5, "Grow: the next id is not past the joiner's");
    if (world_rank == 2) seq = 6;  // a joiner takes the step counter from the others (state transfer)
    exercise(*e2, settings, seq, "Grow");
    // Grow again, with the exchange gathered before the build, as the spare
    // pool gathers it with its roster: the same epoch as the builder's own
    // exchange gives. That needs each node's host (SparePool::host): the
    // first world rank on this rank's node.
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node);
    int host = world_rank;
    MPI_Allreduce(MPI_IN_PLACE, &host, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    builder.set_host(host);
    MPI_Comm regrown = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &regrown);
    const membership::MemberInfo identified = builder.identify(e2.get(), mine, false, false);
    std::vector<membership::MemberInfo> gathered(4);
    MPI_Allgather(&identified, sizeof identified, MPI_BYTE, gathered.data(), sizeof identified, MPI_BYTE,
                  regrown);
    steps.clear();
    auto e3 = builder.build(
        e2.get(),
        membership::Grow{
            0, std::make_unique<membership::UlfmControl>(ulfm::CommHandle(regrown)), false, {}, gathered},
        mine);
    expect(e3->ready, "Grow with a gathered exchange: epoch not ready");
    expect(steps == std::vector<std::string>{"exchange", "plan", "fabric", "agreement"},
           "Grow with a gathered exchange: the steps ran out of order");
    expect(e3->number == 3 && e3->members == e2->members && e3->next_id == e2->next_id,
           "Grow with a gathered exchange: wrong epoch number, ids or next id");
    for (std::size_t r = 0; r < 4; ++r)
      expect(e3->infos[r].node_key == e2->infos[r].node_key && e3->infos[r].pid == e2->infos[r].pid,
             "Grow with a gathered exchange: rank " + std::to_string(r) + "'s node or process differs");
    exercise(*e3, settings, seq, "Grow with a gathered exchange");
    // A gathered exchange that does not match the communicator is a bug.
    MPI_Comm wrong = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &wrong);
    gathered.pop_back();
    bool refused = false;
    try {
      builder.build(
          e3.get(),
          membership::Grow{
              0, std::make_unique<membership::UlfmControl>(ulfm::CommHandle(wrong)), false, {}, gathered},
          mine);
    } catch (const std::logic_error&) {
      refused = true;
    }
    expect(refused, "Grow with a gathered exchange of 3 for 4 ranks was not refused");

    // Nobody closes its endpoints while a peer still receives from them.
    e3->ctrl->barrier();
    e1.reset();
    e2.reset();
    e3.reset();
  } catch (const std::exception& e) {
    fail(e.what());
  }
  std::printf("TEST PASSED (world rank %d)\n", world_rank);
  MPI_Finalize();
  return 0;
}
