// ringmend.torch._backend: the torch.distributed backend "ringmend" (a
// c10d::Backend of torch 2.x), over ringmend's non-blocking calls.
//
// Every collective is queued on the communicator's call thread and returns a
// c10d::Work made from a future, completed by the call thread when the call
// ends: DDP's gradient buckets are reduced while the backward pass goes on.
// torch fixes a group's rank and size at construction; ringmend's
// membership changes under it when ranks die. The group keeps torch's
// numbering and size; the calls run over the members alive (see
// docs/torch.md): a sum has one term per member that contributed, AVG
// divides by that number, and allgather (even or uneven), reduce_scatter
// and all_to_all (ringmend's own, coll/ring_allgather.hpp, coll/ring_reduce_
// scatter.hpp, coll/pairwise_alltoall.hpp), whose blocks are torch's ranks,
// fail clearly once ranks are missing.
#include <ATen/ATen.h>
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "ringmend/ringmend.hpp"

namespace py = pybind11;

namespace ringmend::torch_backend {
namespace {

// The error torch shows for a ringmend::Error: c10::Error keeps the text;
// the code leads it, so that Python code can tell the kinds apart.
std::exception_ptr as_torch_error(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    return std::make_exception_ptr(
        std::runtime_error(std::string("ringmend ") + to_string(err.code()) + ": " + err.what()));
  } catch (...) {
    return e;
  }
}

DataType data_type_of(const at::Tensor& t, const char* op) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return DataType::Float32;
    case at::kDouble:
      return DataType::Float64;
    case at::kInt:
      return DataType::Int32;
    case at::kLong:
      return DataType::Int64;
    case at::kHalf:
      return DataType::Float16;
    case at::kBFloat16:
      return DataType::BFloat16;
    default:
      TORCH_CHECK(false, "ringmend ", op, ": tensors of ", t.scalar_type(),
                  " are not supported (float32, float64, int32, int64, float16, bfloat16)");
  }
}

void check_tensor(const at::Tensor& t, const char* op) {
  TORCH_CHECK(t.device().is_cpu(), "ringmend ", op, ": the tensor is on ", t.device(),
              "; the ringmend backend reduces CPU tensors");
  TORCH_CHECK(t.is_contiguous(), "ringmend ", op, ": the tensor is not contiguous");
  data_type_of(t, op);
}

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK(tensors.size() == 1, "ringmend ", op, ": takes one tensor per call (got ", tensors.size(),
              "); call it once per tensor");
  check_tensor(tensors[0], op);
  return tensors[0];
}

struct ReduceChoice {
  ReduceOp op;
  bool average;
};

ReduceChoice reduce_op_of(const c10d::ReduceOp& op, const char* what) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return {ReduceOp::Sum, false};
    case c10d::ReduceOp::AVG:
      return {ReduceOp::Sum, true};
    case c10d::ReduceOp::PRODUCT:
      return {ReduceOp::Prod, false};
    case c10d::ReduceOp::MIN:
      return {ReduceOp::Min, false};
    case c10d::ReduceOp::MAX:
      return {ReduceOp::Max, false};
    default:
      TORCH_CHECK(false, "ringmend ", what, ": reduction ", static_cast<int>(op.op_),
                  " is not supported (SUM, AVG, PRODUCT, MIN, MAX)");
  }
}

c10::intrusive_ptr<c10::ivalue::Future> tensor_list_future() {
  return c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
}

// A call in flight, as torch sees it: complete when the future is, and
// its wait() raises the call's error (torch's Work made from a future only
// waits).
class RingmendWork final : public c10d::Work {
 public:
  RingmendWork(c10d::OpType type, c10::intrusive_ptr<c10::ivalue::Future> future)
      : Work(-1, type), future_(std::move(future)) {}

  bool isCompleted() override { return future_->completed(); }
  bool isSuccess() const override { return future_->completed() && !future_->hasError(); }
  std::exception_ptr exception() const override {
    return future_->completed() && future_->hasError() ? future_->exception_ptr() : nullptr;
  }
  std::vector<at::Tensor> result() override { return future_->value().toTensorVector(); }
  bool wait(std::chrono::milliseconds timeout) override {
    if (timeout == kNoTimeout) {
      future_->wait();
    } else {
      // ringmend bounds each call (RINGMEND_TIMEOUT); this bounds the wait.
      const auto until = std::chrono::steady_clock::now() + timeout;
      while (!future_->completed()) {
        TORCH_CHECK(std::chrono::steady_clock::now() < until, "ringmend: the wait timed out after ",
                    timeout.count(), " ms; the call goes on");
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    if (future_->hasError()) std::rethrow_exception(future_->exception_ptr());
    return true;
  }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace

class RingmendBackend final : public c10d::Backend {
 public:
  // `owner` keeps the Python communicator (and its Runtime) alive.
  // `members`: the member id of each of the group's torch ranks (a
  // subgroup's); empty for the default group, whose torch ranks are the
  // member ids of the job's start.
  RingmendBackend(Communicator& comm, py::object owner, int rank, int size, std::vector<int> members = {})
      : Backend(rank, size), comm_(comm), owner_(std::move(owner)), members_(std::move(members)) {}
  ~RingmendBackend() override {
    if (!Py_IsInitialized()) {  // torch may drop its groups after the interpreter
      owner_.release();
      return;
    }
    py::gil_scoped_acquire gil;
    owner_ = py::object();
  }

  const std::string getBackendName() const override { return "ringmend"; }

  // The members alive now (torch's getSize() stays the size at creation).
  int live_size() const { return comm_.size(); }
  int live_rank() const { return comm_.rank(); }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    const at::Tensor t = single(tensors, "allreduce");
    const ReduceChoice r = reduce_op_of(opts.reduceOp, "allreduce");
    TORCH_CHECK(!r.average || at::isFloatingType(t.scalar_type()),
                "ringmend allreduce: AVG needs a floating-point tensor");
    return queue(
        c10d::OpType::ALLREDUCE, {t},
        [&] { return comm_.iallreduce(t.data_ptr(), t.numel(), data_type_of(t, ""), r.op); },
        [t, average = r.average](const CollectiveResult& res) {
          if (average && res.contributors > 0) t.div_(res.contributors);
        });
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override {
    // One call over the tensors laid end to end (one type).
    TORCH_CHECK(!tensors.empty(), "ringmend allreduce_coalesced: no tensors");
    for (const auto& t : tensors) {
      check_tensor(t, "allreduce_coalesced");
      TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(),
                  "ringmend allreduce_coalesced: the tensors must have one type");
    }
    const ReduceChoice r = reduce_op_of(opts.reduceOp, "allreduce_coalesced");
    at::Tensor flat = at::cat(flattened(tensors));
    return queue(
        c10d::OpType::ALLREDUCE_COALESCED, tensors,
        [&] { return comm_.iallreduce(flat.data_ptr(), flat.numel(), data_type_of(flat, ""), r.op); },
        [flat, tensors, average = r.average](const CollectiveResult& res) {
          if (average && res.contributors > 0) flat.div_(res.contributors);
          spread_blocks(flat, tensors);
        });
  }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    const at::Tensor t = single(tensors, "broadcast");
    // torch's ranks are the member ids of the job's start (the group keeps
    // its numbering): the root is found among the members when the call runs.
    const int root = members_.empty() ? static_cast<int>(opts.rootRank)
                                      : members_.at(static_cast<std::size_t>(opts.rootRank));
    return queue(c10d::OpType::BROADCAST, {t},
                 [&] { return comm_.ibroadcast_from_member(t.data_ptr(), t.nbytes(), root); }, {});
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions&) override {
    return queue(c10d::OpType::BARRIER, {}, [&] { return comm_.ibarrier(); }, {});
  }

  // Each rank's input lands in its slot (ringmend's allgather); output
  // tensors of different sizes make it an uneven allgather (allgatherv),
  // rank r's input of the size of output r. Needs every rank.
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions&) override {
    const at::Tensor in = single(inputs, "allgather");
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
                "ringmend allgather: needs one list of ", getSize(), " output tensors");
    bool even = true;
    for (const auto& o : outputs[0]) {
      check_tensor(o, "allgather");
      TORCH_CHECK(o.scalar_type() == in.scalar_type(),
                  "ringmend allgather: every output tensor must be of the input's type");
      even = even && o.numel() == in.numel();
    }
    if (even) return gather_into(in, outputs[0]);
    TORCH_CHECK(outputs[0][static_cast<std::size_t>(getRank())].numel() == in.numel(),
                "ringmend allgather: this rank's output tensor (", getRank(),
                ") must be of the input's size");
    return gather_uneven(in, outputs[0]);
  }

  // all_to_all_single: the splits count rows of the first dimension (none:
  // equal blocks), ringmend's alltoall straight between the two tensors.
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<std::int64_t>& output_splits,
                                               std::vector<std::int64_t>& input_splits,
                                               const c10d::AllToAllOptions&) override {
    check_tensor(input, "alltoall_base");
    check_tensor(output, "alltoall_base");
    std::vector<std::size_t> send, recv;
    std::string problem =
        input.scalar_type() == output.scalar_type() ? "" : "input and output differ in type";
    if (problem.empty()) problem = counts_of_splits(input, input_splits, "input", send);
    if (problem.empty()) problem = counts_of_splits(output, output_splits, "output", recv);
    // Split sizes are this rank's own: a bad one must fail the others too.
    if (!problem.empty())
      return refused("alltoall_base: " + problem,
                     [&] { return comm_.ialltoall(nullptr, {}, data_type_of(input, ""), nullptr, {}); });
    return exchange(input, output, std::move(send), std::move(recv), {output}, {});
  }

  // all_to_all over lists: input s goes to rank s, output s comes from it.
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions&) override {
    const auto size = static_cast<std::size_t>(getSize());
    TORCH_CHECK(inputs.size() == size && outputs.size() == size, "ringmend alltoall: needs ", size,
                " input and ", size, " output tensors");
    std::vector<std::size_t> send, recv;
    for (std::size_t r = 0; r < size; ++r) {
      check_tensor(inputs[r], "alltoall");
      check_tensor(outputs[r], "alltoall");
      TORCH_CHECK(inputs[r].scalar_type() == inputs[0].scalar_type() &&
                      outputs[r].scalar_type() == inputs[0].scalar_type(),
                  "ringmend alltoall: every tensor must be of one type");
      send.push_back(static_cast<std::size_t>(inputs[r].numel()));
      recv.push_back(static_cast<std::size_t>(outputs[r].numel()));
    }
    const at::Tensor flat_in = at::cat(flattened(inputs));
    at::Tensor flat_out = at::empty({static_cast<std::int64_t>(sum_of(recv))}, inputs[0].options());
    return exchange(flat_in, flat_out, std::move(send), std::move(recv), outputs,
                    [outputs](const at::Tensor& all) { spread_blocks(all, outputs); });
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions&) override {
    check_tensor(input, "_allgather_base");
    check_tensor(output, "_allgather_base");
    TORCH_CHECK(output.numel() == input.numel() * getSize() && output.scalar_type() == input.scalar_type(),
                "ringmend _allgather_base: the output must hold size x the input, of its type");
    at::Tensor flat = output.view({-1});
    return gather_into(input, flat.chunk(getSize()), flat);
  }

  // ringmend's reduce_scatter of the inputs laid end to end.
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    const at::Tensor out = single(outputs, "reduce_scatter");
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
                "ringmend reduce_scatter: needs one list of ", getSize(), " input tensors");
    for (const auto& i : inputs[0]) {
      check_tensor(i, "reduce_scatter");
      TORCH_CHECK(i.numel() == out.numel() && i.scalar_type() == out.scalar_type(),
                  "ringmend reduce_scatter: every input tensor must match the output's size and type");
    }
    return scatter_into(at::cat(flattened(inputs[0])), out, opts.reduceOp);
  }

  // reduce_scatter_tensor (FSDP's call): the input is size x the output.
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override {
    check_tensor(input, "_reduce_scatter_base");
    check_tensor(output, "_reduce_scatter_base");
    TORCH_CHECK(input.numel() == output.numel() * getSize() && output.scalar_type() == input.scalar_type(),
                "ringmend _reduce_scatter_base: the input must hold size x the output, of its type");
    return scatter_into(input, output, opts.reduceOp);
  }

 private:
  static std::size_t sum_of(const std::vector<std::size_t>& counts) {
    std::size_t total = 0;
    for (std::size_t n : counts) total += n;
    return total;
  }

  // `all`'s blocks, end to end, into `to` (one block per tensor, its size).
  static void spread_blocks(const at::Tensor& all, const std::vector<at::Tensor>& to) {
    std::int64_t at = 0;
    for (const auto& t : to) {
      t.view({-1}).copy_(all.narrow(0, at, t.numel()));
      at += t.numel();
    }
  }

  // Elements per rank of `t` split into rows of its first dimension, into
  // `counts`; what is wrong with the splits, if anything.
  std::string counts_of_splits(const at::Tensor& t, const std::vector<std::int64_t>& splits,
                               const char* which, std::vector<std::size_t>& counts) const {
    const auto size = static_cast<std::int64_t>(getSize());
    const std::int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const std::int64_t per_row = rows == 0 ? 0 : t.numel() / rows;
    if (splits.empty()) {
      if (rows % size != 0)
        return "the " + std::string(which) + "'s " + std::to_string(rows) +
               " rows do not split evenly over " + std::to_string(size) + " ranks; pass split sizes";
      counts.assign(static_cast<std::size_t>(size), static_cast<std::size_t>(rows / size * per_row));
      return {};
    }
    std::int64_t total = 0;
    bool negative = false;
    for (std::int64_t s : splits) {
      negative = negative || s < 0;
      total += s;
      counts.push_back(static_cast<std::size_t>(s < 0 ? 0 : s * per_row));
    }
    if (negative || static_cast<std::int64_t>(splits.size()) != size || total != rows)
      return std::to_string(splits.size()) + " " + which + " split sizes adding up to " +
             std::to_string(total) + " rows; needs " + std::to_string(size) +
             ", none negative, adding up to " + std::to_string(rows);
    return {};
  }

  // A call this rank cannot make (`problem`, found here alone): `start`
  // queues one that every rank's ringmend refuses, so that the others fail
  // too instead of waiting for this one; this rank's Work fails with
  // `problem`.
  template <class Start>
  c10::intrusive_ptr<c10d::Work> refused(const std::string& problem, Start&& start) {
    auto future = tensor_list_future();
    Request request;
    {
      std::lock_guard lock(calls_);
      request = start();
    }
    request.on_complete([request, future, problem] {
      try {
        request.wait();
      } catch (...) {
      }
      future->setError(std::make_exception_ptr(std::runtime_error("ringmend " + problem)));
    });
    return c10::make_intrusive<RingmendWork>(c10d::OpType::ALLTOALL_BASE, future);
  }

  // ringmend's uneven allgather into one buffer, then each rank's block to
  // its tensor.
  c10::intrusive_ptr<c10d::Work> gather_uneven(const at::Tensor& in, std::vector<at::Tensor> slots) {
    std::vector<std::size_t> counts;
    for (const auto& s : slots) counts.push_back(static_cast<std::size_t>(s.numel()));
    at::Tensor buffer = at::empty({static_cast<std::int64_t>(sum_of(counts))}, in.options());
    const int size = getSize();
    return queue(
        c10d::OpType::ALLGATHER, slots,
        [&] { return comm_.iallgatherv(in.data_ptr(), counts, data_type_of(in, ""), buffer.data_ptr()); },
        [in, buffer, slots, size](const CollectiveResult& res) {
          require_everyone(res, size, "allgather");
          spread_blocks(buffer, slots);
        });
  }

  // ringmend's alltoall from `in` to `out`; `spread`, if given, then takes
  // the result (`outputs`: what the Work hands back).
  c10::intrusive_ptr<c10d::Work> exchange(const at::Tensor& in, const at::Tensor& out,
                                          std::vector<std::size_t> send, std::vector<std::size_t> recv,
                                          std::vector<at::Tensor> outputs,
                                          std::function<void(const at::Tensor&)> spread) {
    const int size = getSize();
    return queue(
        c10d::OpType::ALLTOALL, std::move(outputs),
        [&] { return comm_.ialltoall(in.data_ptr(), send, data_type_of(in, ""), out.data_ptr(), recv); },
        // `in` is held until the call has read it (the list's input is a temporary).
        [in, out, size, spread](const CollectiveResult& res) {
          require_everyone(res, size, "alltoall");
          if (spread) spread(out);
        });
  }

  static std::vector<at::Tensor> flattened(const std::vector<at::Tensor>& tensors) {
    std::vector<at::Tensor> flat;
    flat.reserve(tensors.size());
    for (const auto& t : tensors) flat.push_back(t.view({-1}));
    return flat;
  }

  static void require_everyone(const CollectiveResult& res, int size, const char* op) {
    if (res.contributors != size || !res.lost.empty())
      throw Error(Errc::InvalidArgument,
                  std::string(op) + " needs every rank of the group, and " +
                      std::to_string(size - res.contributors + static_cast<int>(res.lost.size())) +
                      " are gone; after a membership change, create the group again to use it");
  }

  // ringmend's allgather into one buffer of size x the input (the output
  // itself when it is one contiguous tensor), then each rank's block to its
  // slot. Needs every rank of the group (torch numbers the slots).
  // `spread`, if given, takes the whole result instead of `slots`
  // (`outputs`: what the Work hands back then).
  c10::intrusive_ptr<c10d::Work> gather_into(const at::Tensor& in, std::vector<at::Tensor> slots,
                                             at::Tensor whole = {},
                                             std::function<void(const at::Tensor&)> spread = {},
                                             std::vector<at::Tensor> outputs = {}) {
    const int size = getSize();
    at::Tensor buffer = whole.defined() ? whole : at::empty({in.numel() * size}, in.options());
    const bool direct = whole.defined();
    return queue(
        c10d::OpType::ALLGATHER, spread ? outputs : slots,
        [&] {
          return comm_.iallgather(in.data_ptr(), static_cast<std::size_t>(in.numel()), data_type_of(in, ""),
                                  buffer.data_ptr(), static_cast<std::size_t>(buffer.numel()));
        },
        // `in` is held until the call has read it (the coalesced input is a temporary).
        [in, buffer, slots, size, direct, spread, n = in.numel()](const CollectiveResult& res) {
          require_everyone(res, size, "allgather");
          if (spread) return spread(buffer);
          if (direct) return;
          for (int r = 0; r < size; ++r)
            slots[static_cast<std::size_t>(r)].view({-1}).copy_(buffer.narrow(0, r * n, n));
        });
  }

  // Several all_gather_into_tensor at once (DTensor's full_tensor, FSDP):
  // one allgather of the inputs laid end to end (one type), each output
  // then taking its part of every rank's block.
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions&) override {
    TORCH_CHECK(!inputs.empty() && outputs.size() == inputs.size(),
                "ringmend allgather_into_tensor_coalesced: needs as many outputs as inputs, at least one");
    const int size = getSize();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      check_tensor(inputs[i], "allgather_into_tensor_coalesced");
      check_tensor(outputs[i], "allgather_into_tensor_coalesced");
      TORCH_CHECK(inputs[i].scalar_type() == inputs[0].scalar_type() &&
                      outputs[i].scalar_type() == inputs[0].scalar_type() &&
                      outputs[i].numel() == inputs[i].numel() * size,
                  "ringmend allgather_into_tensor_coalesced: one type, each output size x its input");
    }
    at::Tensor flat = at::cat(flattened(inputs));
    return gather_into(
        flat, {}, {},
        [outputs, inputs, size, m = flat.numel()](const at::Tensor& all) {
          std::int64_t at = 0;
          for (std::size_t i = 0; i < inputs.size(); ++i) {
            const std::int64_t n = inputs[i].numel();
            at::Tensor out = outputs[i].view({-1});
            for (int r = 0; r < size; ++r) out.narrow(0, r * n, n).copy_(all.narrow(0, r * m + at, n));
            at += n;
          }
        },
        outputs);
  }

  // ringmend's reduce_scatter of `flat` (size blocks) into `out`, which
  // must not overlap it (a re-run after a failure reads the input again).
  c10::intrusive_ptr<c10d::Work> scatter_into(at::Tensor flat, at::Tensor out, const c10d::ReduceOp& op) {
    const ReduceChoice r = reduce_op_of(op, "reduce_scatter");
    TORCH_CHECK(!r.average || at::isFloatingType(out.scalar_type()),
                "ringmend reduce_scatter: AVG needs a floating-point tensor");
    const int size = getSize();
    return queue(
        c10d::OpType::REDUCE_SCATTER, {out},
        [&] {
          return comm_.ireduce_scatter(flat.data_ptr(), out.data_ptr(), static_cast<std::size_t>(out.numel()),
                                       data_type_of(out, ""), r.op);
        },
        [flat, out, size, average = r.average](const CollectiveResult& res) {
          require_everyone(res, size, "reduce_scatter");
          if (average) out.div_(res.contributors);
        });
  }

  // Queues the call made by `start`; when it completes, `then` runs on the
  // call thread and the future gets `outputs` (or the error).
  template <class Start>
  c10::intrusive_ptr<c10d::Work> queue(c10d::OpType type, std::vector<at::Tensor> outputs, Start&& start,
                                       std::function<void(const CollectiveResult&)> then) {
    auto future = tensor_list_future();
    Request request;
    {
      // DDP calls from the autograd thread, the application from its own.
      std::lock_guard lock(calls_);
      request = start();
    }
    request.on_complete([request, future, outputs = std::move(outputs), then = std::move(then)] {
      try {
        const CollectiveResult res = request.wait();  // complete: returns at once
        if (then) then(res);
        future->markCompleted(c10::IValue(outputs));
      } catch (...) {
        future->setError(as_torch_error(std::current_exception()));
      }
    });
    return c10::make_intrusive<RingmendWork>(type, future);
  }

  Communicator& comm_;
  py::object owner_;
  std::vector<int> members_;
  std::mutex calls_;
};

}  // namespace ringmend::torch_backend

PYBIND11_MODULE(_backend, m) {
  using ringmend::torch_backend::RingmendBackend;
  m.doc() = "The torch.distributed backend \"ringmend\" (use `import ringmend.torch`)";
  py::module_::import("torch.distributed");  // registers c10d::Backend's Python type
  py::class_<RingmendBackend, c10d::Backend, c10::intrusive_ptr<RingmendBackend>>(m, "RingmendBackend")
      .def(py::init(
               [](py::capsule communicator, py::object owner, int rank, int size, std::vector<int> members) {
                 auto* comm = static_cast<ringmend::Communicator*>(communicator.get_pointer());
                 return c10::make_intrusive<RingmendBackend>(*comm, std::move(owner), rank, size,
                                                             std::move(members));
               }),
           py::arg("communicator"), py::arg("owner"), py::arg("rank"), py::arg("size"),
           py::arg("members") = std::vector<int>{})
      .def_property_readonly("live_size", &RingmendBackend::live_size)
      .def_property_readonly("live_rank", &RingmendBackend::live_rank);
}
