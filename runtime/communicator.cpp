// The public Communicator: the application's calls, each through the one
// error boundary (guarded) and on the thread that runs the calls
// (serially: the non-blocking calls' queue, when there is one).
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <utility>

#include "coll/selector.hpp"
#include "membership/native/native_spare_pool.hpp"
#include "ringmend/core/log.hpp"
#include "ringmend/core/outcome.hpp"
#include "runtime/communicator_impl.hpp"
#include "runtime/request.hpp"
#include "runtime/subgroup.hpp"

namespace ringmend {
// ------------------------------------------------------------- the facade

std::atomic<long>& application_errors() {
  static std::atomic<long> count{0};
  return count;
}

namespace {

// A failure the application did not cause is also logged, at `error` (a
// lost broadcast root, or a subgroup ended by a member's loss, at `warn`:
// the job goes on, and under recovery by the step that is its normal
// course), so that an operator sees it even where the application
// swallows it; bad input (argument, mismatch, setting) is the
// application's to report.
Error logged(Error e) {
  application_errors().fetch_add(1, std::memory_order_relaxed);
  const Errc c = e.code();
  if (!caused_by_input(c))
    log(c == Errc::RootLost || c == Errc::MemberLost ? LogLevel::Warn : LogLevel::Error,
        std::string("collective failed (") + to_string(c) + "): " + e.what());
  return e;
}

// The one error boundary: whatever a lower layer throws (MPI, UCX, shared
// memory, the standard library) reaches the caller as a ringmend::Error.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw logged(e);
  } catch (const std::bad_alloc&) {
    throw logged(Error(Errc::Internal, "out of memory"));
  } catch (const std::exception& e) {
    throw logged(Error(Errc::Internal, e.what()));
  }
}

}  // namespace

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)), world_(impl_.get()) {}
Communicator::Communicator(Impl& world, std::shared_ptr<Subgroup> subgroup)
    : world_(&world), subgroup_(std::move(subgroup)) {}
Communicator::~Communicator() {
  // A subgroup is let go where the calls run (its last queued call may
  // hold it), unless the world has ended (nothing runs any more).
  if (subgroup_ && !subgroup_->world_gone()) world_->serially([&] { subgroup_.reset(); });
}

Communicator::Impl& Communicator::world_only(const char* what) const {
  if (subgroup_)
    throw Error(Errc::InvalidArgument,
                std::string(what) + " is a call of the world communicator; a subgroup does not take it");
  return *impl_;
}

int Communicator::rank() const { return subgroup_ ? subgroup_->rank() : impl_->view_copy().rank; }
int Communicator::size() const { return subgroup_ ? subgroup_->size() : impl_->view_copy().size; }
std::uint64_t Communicator::epoch() const {
  return subgroup_ ? subgroup_->world_epoch() : impl_->view_copy().number;
}
int Communicator::member_id() const { return world_->view_copy().my_id; }
std::vector<int> Communicator::member_ids() const {
  return subgroup_ ? std::vector<int>(subgroup_->members().begin(), subgroup_->members().end())
                   : impl_->view_copy().members;
}
std::uint64_t Communicator::collectives_called() const {
  return subgroup_ ? subgroup_->calls() : impl_->seq.load();
}

CollectiveResult Communicator::run_call(const CollectiveCall& call) {
  return world_->serially(
      [&] { return guarded([&] { return subgroup_ ? subgroup_->call(call) : world_->call(call); }); });
}

CollectiveResult Communicator::allreduce(const void* input, void* output, std::size_t count, DataType type,
                                         ReduceOp op) {
  return run_call({coll::CollectiveKind::Allreduce, input, output, count, type, op, -1});
}

CollectiveResult Communicator::allreduce(void* inout, std::size_t count, DataType type, ReduceOp op) {
  return allreduce(inout, inout, count, type, op);
}

CollectiveResult Communicator::allreduce(const void* input, void* output, std::size_t count, DataType type,
                                         ReduceOp op, const Placement& where) {
  CollectiveCall call{coll::CollectiveKind::Allreduce, input, output, count, type, op, -1};
  call.memory = where.memory;
  call.cuda_stream = where.cuda_stream;
  return run_call(call);
}

CollectiveResult Communicator::allreduce(void* inout, std::size_t count, DataType type, ReduceOp op,
                                         const Placement& where) {
  return allreduce(inout, inout, count, type, op, where);
}

CollectiveResult Communicator::broadcast(void* buffer, std::size_t bytes, int root) {
  return run_call(
      {coll::CollectiveKind::Broadcast, buffer, buffer, bytes, DataType::Int32, ReduceOp::Sum, root});
}

namespace {

CollectiveCall allgather_call(const void* input, std::size_t count, DataType type, void* output,
                              std::size_t output_count) {
  CollectiveCall call{coll::CollectiveKind::Allgather, input, output, count, type, ReduceOp::Sum, -1};
  call.output_bytes = is_valid(type) ? output_count * size_of(type) : 0;
  return call;
}

}  // namespace

CollectiveResult Communicator::allgather(const void* input, std::size_t count, DataType type, void* output,
                                         std::size_t output_count) {
  return run_call(allgather_call(input, count, type, output, output_count));
}

namespace {

CollectiveCall allgatherv_call(const void* input, std::span<const std::size_t> counts, DataType type,
                               void* output) {
  CollectiveCall call{coll::CollectiveKind::AllgatherV, input, output, 0, type, ReduceOp::Sum, -1};
  call.counts.assign(counts.begin(), counts.end());
  call.count = CollectiveCall::total_of(call.counts);
  return call;
}

CollectiveCall alltoall_call(const void* input, std::span<const std::size_t> send_counts, DataType type,
                             void* output, std::span<const std::size_t> recv_counts) {
  CollectiveCall call{coll::CollectiveKind::Alltoall, input, output, 0, type, ReduceOp::Sum, -1};
  call.counts.assign(send_counts.begin(), send_counts.end());
  call.recv_counts.assign(recv_counts.begin(), recv_counts.end());
  call.count = CollectiveCall::total_of(call.counts);
  return call;
}

}  // namespace

CollectiveResult Communicator::allgatherv(const void* input, std::span<const std::size_t> counts,
                                          DataType type, void* output) {
  return run_call(allgatherv_call(input, counts, type, output));
}

CollectiveResult Communicator::alltoall(const void* input, std::span<const std::size_t> send_counts,
                                        DataType type, void* output,
                                        std::span<const std::size_t> recv_counts) {
  return run_call(alltoall_call(input, send_counts, type, output, recv_counts));
}

CollectiveResult Communicator::alltoall(const void* input, std::size_t count, DataType type, void* output) {
  const std::vector<std::size_t> each(static_cast<std::size_t>(size()), count);
  return alltoall(input, each, type, output, each);
}

CollectiveResult Communicator::reduce_scatter(const void* input, void* output, std::size_t count,
                                              DataType type, ReduceOp op) {
  return run_call({coll::CollectiveKind::ReduceScatter, input, output, count, type, op, -1});
}

CollectiveResult Communicator::barrier() {
  std::int64_t one = 1, total = 0;
  return allreduce(&one, &total, 1, DataType::Int64, ReduceOp::Sum);
}

namespace {

// Queues `call` (which runs the collective) on the communicator's call
// thread, started by the first non-blocking call.
template <class F>
Request queued(Communicator::Impl& impl, F call) {
  if (!impl.queue) impl.queue = std::make_unique<CallQueue>();
  auto state = std::make_shared<Request::State>();
  impl.queue->push([state, call = std::move(call)]() mutable {
    CollectiveResult result;
    std::exception_ptr error;
    try {
      result = guarded(call);
    } catch (...) {
      error = std::current_exception();
    }
    state->complete(std::move(result), std::move(error));
  });
  return Request(std::move(state));
}

}  // namespace

Request Communicator::queue_call(const CollectiveCall& call) {
  if (subgroup_) return queued(*world_, [sub = subgroup_, call] { return sub->call(call); });
  return queued(*world_, [impl = world_, call] { return impl->call(call); });
}

Request Communicator::iallreduce(const void* input, void* output, std::size_t count, DataType type,
                                 ReduceOp op) {
  return queue_call({coll::CollectiveKind::Allreduce, input, output, count, type, op, -1});
}

Request Communicator::iallreduce(void* inout, std::size_t count, DataType type, ReduceOp op) {
  return iallreduce(inout, inout, count, type, op);
}

Request Communicator::ibroadcast(void* buffer, std::size_t bytes, int root) {
  return queue_call(
      {coll::CollectiveKind::Broadcast, buffer, buffer, bytes, DataType::Int32, ReduceOp::Sum, root});
}

Request Communicator::ibroadcast_from_member(void* buffer, std::size_t bytes, int root_member) {
  return queued(*world_, [impl = world_, sub = subgroup_, buffer, bytes, root_member] {
    // The view is the same on every member between calls: all find the
    // root at the same rank, or all fail alike.
    const std::vector<int> members =
        sub ? std::vector<int>(sub->members().begin(), sub->members().end()) : impl->view().members;
    const auto it = std::find(members.begin(), members.end(), root_member);
    if (it == members.end())
      throw Error(Errc::RootLost, "broadcast: its root, member " + std::to_string(root_member) +
                                      ", is not a member (lost before the call ran, or never was)");
    const int root = static_cast<int>(it - members.begin());
    const CollectiveCall call{
        coll::CollectiveKind::Broadcast, buffer, buffer, bytes, DataType::Int32, ReduceOp::Sum, root};
    return sub ? sub->call(call) : impl->call(call);
  });
}

Request Communicator::iallgather(const void* input, std::size_t count, DataType type, void* output,
                                 std::size_t output_count) {
  return queue_call(allgather_call(input, count, type, output, output_count));
}

Request Communicator::iallgatherv(const void* input, std::span<const std::size_t> counts, DataType type,
                                  void* output) {
  return queue_call(allgatherv_call(input, counts, type, output));
}

Request Communicator::ialltoall(const void* input, std::span<const std::size_t> send_counts, DataType type,
                                void* output, std::span<const std::size_t> recv_counts) {
  return queue_call(alltoall_call(input, send_counts, type, output, recv_counts));
}

Request Communicator::ireduce_scatter(const void* input, void* output, std::size_t count, DataType type,
                                      ReduceOp op) {
  return queue_call({coll::CollectiveKind::ReduceScatter, input, output, count, type, op, -1});
}

Request Communicator::ibarrier() {
  // The two words live in the queued call itself.
  auto words = std::make_shared<std::array<std::int64_t, 2>>(std::array<std::int64_t, 2>{1, 0});
  const CollectiveCall call{
      coll::CollectiveKind::Allreduce, &(*words)[0], &(*words)[1], 1, DataType::Int64, ReduceOp::Sum, -1};
  return queued(*world_, [impl = world_, sub = subgroup_, words, call] {
    return sub ? sub->call(call) : impl->call(call);
  });
}

int Communicator::on_membership_change(std::function<void(const MembershipChange&)> callback) {
  world_only("on_membership_change");
  return impl_->serially([&] {
    const int id = impl_->next_callback_id++;
    impl_->callbacks.emplace(id, std::move(callback));
    return id;
  });
}

void Communicator::remove_membership_callback(int id) {
  world_only("remove_membership_callback");
  impl_->serially([&] { impl_->callbacks.erase(id); });
}

void Communicator::register_state(const std::string& name, void* data, std::size_t bytes) {
  world_only("register_state");
  impl_->serially([&] { guarded([&] { impl_->state.add(name, data, bytes); }); });
}

void Communicator::register_state(const std::string& name, std::function<std::vector<std::byte>()> save,
                                  std::function<void(std::span<const std::byte>)> load) {
  world_only("register_state");
  impl_->serially([&] { guarded([&] { impl_->state.add(name, std::move(save), std::move(load)); }); });
}

bool Communicator::unregister_state(const std::string& name) {
  world_only("unregister_state");
  return impl_->serially([&] { return impl_->state.remove(name); });
}
bool Communicator::joined() const { return world_->joined; }
bool Communicator::left() const { return world_->left; }

CollectiveResult Communicator::grow(int count) {
  world_only("grow");
  return impl_->serially([&] { return guarded([&] { return impl_->grow(count); }); });
}

CollectiveResult Communicator::release(std::span<const int> ranks) {
  world_only("release");
  std::string what = "release(ranks";
  for (std::size_t i = 0; i < ranks.size() && i < 8; ++i) what += (i ? ", " : " ") + std::to_string(ranks[i]);
  what += ranks.size() > 8 ? ", ...)" : ")";
  return impl_->serially([&] { return guarded([&] { return impl_->release(ranks, what, {}); }); });
}

CollectiveResult Communicator::release_last(int count) {
  world_only("release_last");
  return impl_->serially([&] {
    return guarded([&] {
      const std::string what = "release_last(" + std::to_string(count) + ")";
      // A count out of range is reported by the request, on every member alike.
      const int size = impl_->view().size;
      if (count < 0 || count >= size)
        return impl_->release(
            {}, what,
            what + ": the count must be between 0 and the size less one (" + std::to_string(size - 1) + ")");
      std::vector<int> ranks;
      for (int r = size - count; r < size; ++r) ranks.push_back(r);
      return impl_->release(ranks, what, {});
    });
  });
}

}  // namespace ringmend
