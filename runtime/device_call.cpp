// Allreduce of GPU buffers (docs/gpu.md): one collective call of the
// runtime, with the same recovery, catch-up and error rules as a host call.
//
//   * One GPU per node (or ranks of a node that share a GPU, or NCCL off):
//     the input is copied to pinned host memory in pieces, the host
//     algorithm of the epoch runs over the copy (the flat ring reads it in
//     pieces, so the copy overlaps its messages), and each part of the
//     result goes back to the GPU once final (gpu/host_staging.hpp).
//   * Every local rank with a GPU of its own: NCCL's reduce-scatter inside
//     the node, each rank's slice reduced across nodes on its rail (ranks
//     of the same local index) through pinned host memory, NCCL's allgather
//     inside the node. One NCCL communicator per epoch, made at the epoch's
//     first GPU call; a failure aborts it on every local survivor (or
//     revokes it, to be shrunk: RINGMEND_NCCL_SHRINK).
//
// Every wait on GPU work polls the runtime's failure notification and
// deadline (gpu/event_wait.hpp): an NCCL kernel whose peer died never
// completes, and the survivors must notice, abort it and recover.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "coll/ring_allreduce.hpp"
#include "gpu/gpu.hpp"
#include "ringmend/core/hash.hpp"
#include "ringmend/core/log.hpp"
#include "runtime/communicator_impl.hpp"

namespace ringmend {

// What each rank tells the others before an epoch's first GPU call.
struct GpuCard {
  std::uint64_t gpu_key = 0;  // equal for ranks that share a GPU (NCCL's own rule: host id + bus id)
  std::int32_t nccl_ok = 0;   // NCCL could be opened here
  std::int32_t pad = 0;
  ncclUniqueId id{};  // the node leader's: its node's communicator
};

// One epoch's exchange before its first GPU call. Kept on the heap, and kept
// when the exchange is cut short: MPI may still touch an abandoned request's
// buffers until its communicator is revoked.
struct GpuExchange {
  GpuCard mine;
  std::vector<GpuCard> cards;  // every rank's
};

struct DeviceContext {
  ~DeviceContext() {
    comm.abort();
    gpu::join_background_aborts();  // before the program's end: they run NCCL's code
  }
  int device = -1;
  gpu::HostStaging staging;        // the whole buffer: the path through host memory
  gpu::HostStaging slice_staging;  // this rank's slice on the NCCL path across nodes
  gpu::Stream stream;              // NCCL's work and the copies around it
  gpu::Event entry, reduced, gathered;
  gpu::Buffer work[2]{gpu::Buffer(gpu::Buffer::Kind::Device),
                      gpu::Buffer(gpu::Buffer::Kind::Device)};  // NCCL path, by call parity: the padded
                                                                // buffer, kept as the retained result
  std::uint64_t work_seq[2] = {0, 0};
  // The NCCL decision and communicator of one epoch.
  std::optional<std::uint64_t> decided_epoch;  // the epoch use_nccl was decided for
  bool use_nccl = false;
  gpu::NcclComm comm;
  std::vector<membership::MemberId> comm_members;  // its ranks, by member id
  std::unique_ptr<GpuExchange> exchange;
  std::vector<std::unique_ptr<GpuExchange>> abandoned;  // exchanges cut short (see GpuExchange)
  int shrink_ok = 0, shrink_all = 0;                    // the shrink agreement's buffers (likewise kept)
};

// One GPU call.
struct DeviceRun {
  const void* input = nullptr;
  void* output = nullptr;
  cudaStream_t caller = nullptr;
  bool stream_given = false;
  enum class Path { None, Staged, Nccl, CaughtUp } path = Path::None;
};

void DeviceContextDeleter::operator()(DeviceContext* p) const { delete p; }

bool is_gpu_pointer(const void* p) { return gpu::device_of(p) >= 0; }
std::string gpu_in_use() { return gpu::gpu_in_use_pci_bus_id(); }

bool Communicator::cuda_built() { return true; }
bool Communicator::cuda_usable() { return gpu::cuda_usable(); }

namespace {

// NCCL refuses two ranks of one communicator on one GPU, which it tells by
// host hash (NCCL_HOSTID, else the host name) and PCI bus id: the same key here.
std::uint64_t gpu_key(int device) {
  char bus[64] = {};
  gpu::check(cudaDeviceGetPCIBusId(bus, sizeof bus, device), "cudaDeviceGetPCIBusId");
  const char* hostid = std::getenv("NCCL_HOSTID");
  std::string host;
  if (hostid && *hostid) {
    host = hostid;
  } else {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    host = name;
  }
  return fnv1a(host + "/" + bus);
}

// Waits for a non-blocking MPI call on the control communicator (`started`:
// what starting it returned) as every ringmend wait does: a failure noticed
// by MPI or by the runtime cuts it short.
void wait_mpi(MPI_Request& req, int started, const char* what, transport::WaitContext& ctx) {
  if (started != MPI_SUCCESS)
    throw transport::Interrupted(std::string(what) + " could not start (a member failed)");
  gpu::wait_until(
      [&] {
        int done = 0;
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
          throw transport::Interrupted(std::string("a member failed during ") + what);
        return done != 0;
      },
      ctx);
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::optional<CollectiveResult> Communicator::Impl::run_on_device(const CollectiveCall& call) {
  // No CUDA context in this process: every buffer is host memory (asked
  // once, not once per buffer; this runs before every host allreduce).
  if (call.memory == MemoryKind::Auto && !gpu::context_made()) return std::nullopt;
  // (Asked once for an in-place call: this runs before every host call too.)
  // MemoryKind::Cuda: the caller says so; ask CUDA whatever the contexts.
  const auto how =
      call.memory == MemoryKind::Cuda ? gpu::Recognise::InAnyContext : gpu::Recognise::IfContextMade;
  const int in = gpu::device_of(call.input, how);
  const int out = call.output == call.input ? in : gpu::device_of(call.output, how);
  if (call.memory == MemoryKind::Auto && in < 0 && out < 0) return std::nullopt;  // host buffers
  CollectiveCall c = call;
  const auto refuse = [&](const std::string& why) {
    c.placement_error = why;
    return run(c);  // the error, on every rank (validate)
  };
  if (call.count > 0) {
    if (!gpu::cuda_usable())
      return refuse("GPU memory asked for (MemoryKind::Cuda), but no GPU is usable here");
    if (in < 0 || out < 0 || in != out)
      return refuse("input and output must both be host memory or both on one GPU (input: " +
                    (in < 0 ? std::string("host") : "GPU " + std::to_string(in)) +
                    ", output: " + (out < 0 ? std::string("host") : "GPU " + std::to_string(out)) + ")");
    if (gpu_ && gpu_->device != in)
      return refuse("this process used GPU " + std::to_string(gpu_->device) +
                    " before; a communicator uses one GPU");
  }
  if (call.count == 0 || call.input == nullptr) {  // a no-op, or validate's error
    c.memory = MemoryKind::Host;
    return run(c);
  }
  gpu::DeviceGuard guard(in);
  if (!gpu_) {
    gpu_.reset(new DeviceContext);
    gpu_->device = in;
  }
  DeviceRun d;
  d.input = call.input;
  d.output = call.output;
  d.caller = static_cast<cudaStream_t>(call.cuda_stream);
  d.stream_given = call.cuda_stream != nullptr;
  c.gpu = &d;
  gpu_->staging.set_context(this);
  gpu_->staging.begin(d.input, d.output, call.bytes(), d.caller);
  CollectiveResult result = run(c);
  DeviceContext& g = *gpu_;
  switch (d.path) {
    case DeviceRun::Path::Staged:
      g.staging.finish(d.caller, d.stream_given);
      break;
    case DeviceRun::Path::Nccl:
      // The result was queued on our stream (out of the work buffer); the
      // caller follows it.
      g.gathered.record(g.stream.get());
      if (d.stream_given)
        gpu::check(cudaStreamWaitEvent(d.caller, g.gathered.get(), 0), "cudaStreamWaitEvent");
      else
        gpu::check(cudaEventSynchronize(g.gathered.get()), "cudaEventSynchronize");  // a local copy
      break;
    case DeviceRun::Path::CaughtUp:  // done by the staging (device_result_from)
    case DeviceRun::Path::None:
      break;
  }
  return result;
}

void Communicator::Impl::execute_device(const CollectiveCall& c, std::uint64_t call_seq) {
  DeviceContext& g = *gpu_;
  DeviceRun& d = *c.gpu;
  const bool nccl = [&] {
    // The decision and the communicator belong to the epoch.
    // (Also when a recovery that ended in an error aborted this epoch's
    // communicator.)
    if (g.decided_epoch != epoch_->number || (g.use_nccl && !g.comm)) {
      g.decided_epoch.reset();
      g.use_nccl = decide_nccl();
      g.decided_epoch = epoch_->number;
    }
    return g.use_nccl;
  }();
  if (nccl) {
    execute_nccl(c, call_seq);
    d.path = DeviceRun::Path::Nccl;
    return;
  }
  // Through host memory, with the epoch's host algorithm. Every attempt of
  // the call reads the same host copy of the input.
  g.staging.set_context(this);  // (finish() of an earlier attempt drops it)
  g.staging.begin_attempt();
  CollectiveCall h = c;
  h.gpu = nullptr;
  h.input = g.staging.host_input();
  h.output = g.staging.host_output();
  h.staging = &g.staging;
  if (faults_.armed()) faults_.at(FaultPhase::GpuCopyIn, current_seq_, 0, epoch_->number);
  execute(h, call_seq);
  if (faults_.armed()) faults_.at(FaultPhase::GpuCopyOut, current_seq_, 0, epoch_->number);
  d.path = DeviceRun::Path::Staged;
}

bool Communicator::Impl::decide_nccl() {
  const membership::Epoch& e = *epoch_;
  const coll::Layout& l = e.layout;
  DeviceContext& g = *gpu_;
  // Every node one rank: nothing to share inside a node, known to all alike.
  if (!settings_.nccl || l.leaders.size() == static_cast<std::size_t>(e.size)) return false;
  // Every rank says whether it can run NCCL and which GPU it has; each node
  // leader brings its node's unique id. One allgather over the control
  // communicator, polled like every wait (a death cuts it short).
  g.exchange = std::make_unique<GpuExchange>();
  GpuExchange& x = *g.exchange;
  x.mine.gpu_key = gpu_key(g.device);
  x.mine.nccl_ok = gpu::NcclLibrary::available() ? 1 : 0;
  const bool leader = !l.local_ranks.empty() && l.local_ranks.front() == e.rank;
  if (leader && x.mine.nccl_ok)
    gpu::check_nccl(gpu::NcclLibrary::get().get_unique_id(&x.mine.id), "ncclGetUniqueId");
  x.cards.assign(static_cast<std::size_t>(e.size), GpuCard{});
  MPI_Request req = MPI_REQUEST_NULL;
  const MPI_Comm ctrl = membership::mpi_comm_of(*e.ctrl);
  try {
    if (ctrl == MPI_COMM_NULL) {  // the native membership: its all-gather returns at a failure
      if (!e.ctrl->allgather(&x.mine, sizeof(GpuCard), x.cards.data()))
        throw transport::Interrupted("the GPU exchange: a member failed");
    } else {
      wait_mpi(req,
               MPI_Iallgather(&x.mine, sizeof(GpuCard), MPI_BYTE, x.cards.data(), sizeof(GpuCard), MPI_BYTE,
                              ctrl, &req),
               "the GPU exchange", *this);
    }
  } catch (...) {
    g.abandoned.push_back(std::move(g.exchange));
    throw;
  }
  // The same answer on every rank: NCCL everywhere, nodes alike (one slice
  // per local rank, carried on its rail), no two local ranks on one GPU.
  const std::size_t local = l.local_ranks.size();
  bool use = local >= 2 && e.plan.nodes.size() * local == static_cast<std::size_t>(e.size) &&
             (!l.multi_node() || (l.node_shm && l.rails == static_cast<int>(local)));
  for (const GpuCard& card : x.cards) use = use && card.nccl_ok;
  for (const auto& node : e.plan.nodes)
    for (std::size_t i = 0; i < node.size() && use; ++i)
      for (std::size_t j = i + 1; j < node.size(); ++j)
        if (x.cards[static_cast<std::size_t>(node[i])].gpu_key ==
            x.cards[static_cast<std::size_t>(node[j])].gpu_key)
          use = false;
  if (!use) {
    g.comm.abort_in_background();
    log("GPU calls of epoch " + std::to_string(e.number) +
        " go through host memory (no NCCL inside the node)");
    return false;
  }
  // This node's members in local order: the communicator's ranks.
  std::vector<membership::MemberId> members;
  for (int r : l.local_ranks) members.push_back(e.members[static_cast<std::size_t>(r)]);
  const int me =
      static_cast<int>(std::find(l.local_ranks.begin(), l.local_ranks.end(), e.rank) - l.local_ranks.begin());
  const auto start = std::chrono::steady_clock::now();
  // A communicator of the previous epoch whose ranks all survive in order
  // (only some lost) can be shrunk instead of made anew.
  std::vector<int> excluded;
  bool shrinkable = shrink_mode() && g.comm && members.size() < g.comm_members.size();
  for (std::size_t i = 0, j = 0; shrinkable && i < g.comm_members.size(); ++i) {
    if (j < members.size() && g.comm_members[i] == members[j]) {
      ++j;
    } else if (std::find(members.begin(), members.end(), g.comm_members[i]) == members.end()) {
      excluded.push_back(static_cast<int>(i));
    } else {
      shrinkable = false;  // reordered
    }
    if (i + 1 == g.comm_members.size() && j != members.size()) shrinkable = false;  // someone new
  }
  const char* how = "made";
  gpu::NcclComm shrunk;
  if (shrinkable) {
    try {
      shrunk = g.comm.shrink(excluded, *this);
    } catch (const std::exception& err) {  // an NCCL error (a failure is noticed by the agreement below)
      ringmend::log(LogLevel::Info, std::string("ncclCommShrink failed (") + err.what() +
                                        "); the node makes a new communicator");
    }
  }
  // Every rank of a node must take the same way: when any shrink failed,
  // all make a new communicator (from the id of this exchange, unused yet).
  if (settings_.nccl_shrink) {
    g.shrink_ok = !shrinkable || static_cast<bool>(shrunk) ? 1 : 0;
    if (ctrl == MPI_COMM_NULL) {
      int all = g.shrink_ok;
      if (!e.ctrl->agree(all)) throw transport::Interrupted("the NCCL shrink agreement: a member failed");
      g.shrink_all = all;
    } else {
      MPI_Request agree = MPI_REQUEST_NULL;
      wait_mpi(agree, MPI_Iallreduce(&g.shrink_ok, &g.shrink_all, 1, MPI_INT, MPI_MIN, ctrl, &agree),
               "the NCCL shrink agreement", *this);
    }
    if (!g.shrink_all) {
      shrunk.abort_in_background();
      shrinkable = false;
    }
  }
  if (shrinkable) {
    g.comm.abort_in_background();
    g.comm = std::move(shrunk);
    how = "shrunk (ncclCommShrink)";
  } else {
    g.comm.abort_in_background();
    const ncclUniqueId& id = x.cards[static_cast<std::size_t>(l.local_ranks.front())].id;
    g.comm = gpu::NcclComm::make(id, static_cast<int>(members.size()), me, *this);
    how = g.comm_members.empty() ? "made" : "made anew (ncclCommInitRank)";
  }
  g.comm_members = members;
  char text[200];
  std::snprintf(text, sizeof text, "NCCL communicator of %zu ranks for epoch %llu %s in %.1f ms (NCCL %d)",
                members.size(), static_cast<unsigned long long>(e.number), how, ms_since(start),
                gpu::NcclLibrary::get().version);
  ringmend::log(me == 0 ? LogLevel::Info : LogLevel::Debug, text);
  return true;
}

void Communicator::Impl::execute_nccl(const CollectiveCall& c, std::uint64_t call_seq) {
  const membership::Epoch& e = *epoch_;
  DeviceContext& g = *gpu_;
  DeviceRun& d = *c.gpu;
  const gpu::NcclLibrary& nccl = gpu::NcclLibrary::get();
  const std::size_t esize = size_of(c.type);
  const std::size_t local = static_cast<std::size_t>(g.comm.ranks());
  const std::size_t me =
      static_cast<std::size_t>(std::find(e.layout.local_ranks.begin(), e.layout.local_ranks.end(), e.rank) -
                               e.layout.local_ranks.begin());
  const std::size_t per = (c.count + local - 1) / local;  // elements of each local rank's slice
  gpu::Buffer& work = g.work[call_seq % 2];
  work.reserve(per * local * esize);
  g.work_seq[call_seq % 2] = 0;  // being overwritten
  std::byte* slice = work.data() + me * per * esize;
  const cudaStream_t s = g.stream.get();

  // After the caller's earlier work; the input is copied so that it stays
  // intact (in place too) for a re-execution after a failure. In place,
  // after an attempt through host memory that copied parts of a result out
  // over the input, the input is the host copy that attempt made.
  g.entry.record(d.caller);
  gpu::check(cudaStreamWaitEvent(s, g.entry.get(), 0), "cudaStreamWaitEvent");
  if (d.input == d.output && g.staging.wrote_output()) {
    g.staging.set_context(this);
    g.staging.wait_input(0, c.bytes());
    gpu::check(cudaMemcpyAsync(work.data(), g.staging.host_input(), c.bytes(), cudaMemcpyHostToDevice, s),
               "cudaMemcpyAsync");
  } else {
    gpu::check(cudaMemcpyAsync(work.data(), d.input, c.bytes(), cudaMemcpyDeviceToDevice, s),
               "cudaMemcpyAsync");
  }
  g.comm.check_enqueued(nccl.reduce_scatter(work.data(), slice, per, gpu::nccl_type(c.type),
                                            gpu::nccl_op(c.op), g.comm.get(), s),
                        "ncclReduceScatter");
  g.comm.wait_enqueued(*this);
  if (faults_.armed()) faults_.at(FaultPhase::NcclReduceScatter, current_seq_, 0, e.number);
  if (e.layout.multi_node()) {
    // The slice across nodes, on this rank's rail, through host memory.
    g.reduced.record(s);
    wait_nccl(g.reduced);
    gpu::HostStaging& rail = g.slice_staging;
    rail.begin(slice, slice, per * esize, s);
    rail.set_context(this);
    coll::AllreduceArgs a{rail.host_input(), rail.host_output(), per, c.type, c.op, call_seq};
    a.staging = &rail;
    coll::ring_allreduce(*e.channels().inter, e.layout.rail_ring, a, *this, settings_.chunk_bytes);
    rail.finish(s, true);
  }
  g.comm.check_enqueued(nccl.all_gather(slice, work.data(), per, gpu::nccl_type(c.type), g.comm.get(), s),
                        "ncclAllGather");
  g.comm.wait_enqueued(*this);
  if (faults_.armed()) faults_.at(FaultPhase::NcclAllgather, current_seq_, 0, e.number);
  // The call is over on this rank only once NCCL's work is (a peer that
  // dies now leaves the allgather spinning).
  g.gathered.record(s);
  wait_nccl(g.gathered);
  if (faults_.armed()) faults_.at(FaultPhase::GpuCopyOut, current_seq_, 0, e.number);
  // Local from here: the result out, and kept on the GPU for a survivor
  // that misses the end of the call (copied to the host only if one does).
  // After any part an earlier attempt through host memory copied out.
  if (g.staging.wrote_output()) g.staging.order_after_copies_out(s);
  gpu::check(cudaMemcpyAsync(d.output, work.data(), c.bytes(), cudaMemcpyDeviceToDevice, s),
             "cudaMemcpyAsync");
  g.work_seq[call_seq % 2] = call_seq;
  retained_seq_[call_seq % 2] = call_seq;
  retained_bytes_[call_seq % 2] = c.bytes();
}

void Communicator::Impl::wait_nccl(const gpu::Event& event) {
  const gpu::NcclComm& comm = gpu_->comm;
  gpu::wait_until(
      [&] {
        const bool done = event.done();
        comm.throw_if_failed();
        return done;
      },
      *this);
}

void Communicator::Impl::device_result_from(const CollectiveCall& c, const void* host) {
  DeviceRun& d = *c.gpu;
  // Through the staging's copy stream: after any copy out of this call's
  // earlier attempts through host memory, which it would otherwise race.
  gpu_->staging.finish_from(host, d.caller, d.stream_given);
  d.path = DeviceRun::Path::CaughtUp;
}

void Communicator::Impl::stop_device_collectives() {
  if (!gpu_ || !gpu_->comm) return;
  gpu::DeviceGuard guard(gpu_->device);
  if (shrink_mode()) {
    gpu_->comm.revoke();  // kept, to be shrunk in the next epoch
    log("NCCL communicator revoked");
  } else {
    gpu_->comm.abort_in_background();
    log("NCCL communicator being aborted");
  }
}

bool Communicator::Impl::shrink_mode() const {
  if (!settings_.nccl_shrink) return false;
  // Shrinking a communicator whose peer died needs its work stopped first
  // (ncclCommRevoke, 2.28.7+). Without it, NCCL 2.28.3's ncclCommShrink
  // with NCCL_SHRINK_ABORT failed after a peer's death, and a thread it had
  // started then crashed the process (SIGFPE): a new communicator instead.
  const gpu::NcclLibrary& nccl = gpu::NcclLibrary::get();
  static const bool warned = [&] {
    if (!nccl.comm_revoke || !nccl.comm_shrink)
      ringmend::log(LogLevel::Warn, "RINGMEND_NCCL_SHRINK=1 needs NCCL 2.28.7+ (ncclCommRevoke); NCCL " +
                                        std::to_string(nccl.version) + " makes a new communicator instead");
    return true;
  }();
  (void)warned;
  return nccl.comm_revoke && nccl.comm_shrink;
}

void Communicator::Impl::device_retained_to_host(std::uint64_t of_call, void* host, std::size_t bytes) {
  if (!gpu_ || gpu_->work_seq[of_call % 2] != of_call) return;
  gpu::DeviceGuard guard(gpu_->device);
  gpu::check(cudaMemcpy(host, gpu_->work[of_call % 2].data(), bytes, cudaMemcpyDeviceToHost),
             "cudaMemcpy (retained)");
}

}  // namespace ringmend
