// ringmend._core: the C++ API for Python (pybind11). The package
// (python/ringmend/__init__.py) re-exports it; buffers are described by
// ringmend._buffers (NumPy arrays and torch tensors on the CPU), so that this
// module links neither NumPy nor torch.
//
// The GIL is released for the length of every collective: other Python
// threads go on while a call waits on its peers. Membership callbacks and
// the log sink take it back; a Python exception raised in a membership
// callback cannot cross the recovery that called it, so it is kept and
// raised when the collective returns.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bind_types.hpp"
#include "options_from_python.hpp"
#include "ringmend/ringmend.hpp"

namespace py = pybind11;
using namespace ringmend;

namespace {

// A Python object held by C++ code that may drop it without the GIL (a
// callback inside the library): released under the GIL, or leaked when the
// interpreter is already gone.
struct HeldObject {
  py::object object;
  explicit HeldObject(py::object o) : object(std::move(o)) {}
  HeldObject(const HeldObject&) = delete;
  HeldObject& operator=(const HeldObject&) = delete;
  ~HeldObject() {
    if (!Py_IsInitialized()) {
      object.release();
      return;
    }
    py::gil_scoped_acquire gil;
    object = py::object();
  }
};

std::size_t sum_of(const std::vector<std::size_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), std::size_t{0});
}

// What ringmend._buffers.describe() tells of an array.
struct BufferView {
  void* address = nullptr;
  std::size_t count = 0;
  DataType type = DataType::Float32;
  std::size_t bytes = 0;
  std::string problem;  // why ringmend cannot use the array (then the rest is empty)
};

BufferView describe(const py::handle& array, bool writable) {
  // Never destroyed: a static py::object would be released after the
  // interpreter has gone.
  static const auto* describe_fn = new py::object(py::module_::import("ringmend._buffers").attr("describe"));
  const py::tuple t = (*describe_fn)(array, writable);
  BufferView v;
  v.problem = t[4].cast<std::string>();
  if (!v.problem.empty()) return v;
  v.address = reinterpret_cast<void*>(t[0].cast<std::uintptr_t>());
  v.count = t[1].cast<std::size_t>();
  v.type = t[2].cast<DataType>();
  v.bytes = t[3].cast<std::size_t>();
  return v;
}

// A non-blocking call from Python: keeps its arrays alive until the call
// has completed, also when the Python object goes first (then the arrays
// wait among the orphans, released at a later call).
class PyRequest {
 public:
  PyRequest(Request request, std::vector<py::object> arrays, std::string problem,
            std::shared_ptr<std::optional<py::error_already_set>> callback_error)
      : request_(std::move(request)),
        arrays_(std::move(arrays)),
        problem_(std::move(problem)),
        callback_error_(std::move(callback_error)) {}
  PyRequest(const PyRequest&) = delete;
  PyRequest& operator=(const PyRequest&) = delete;
  ~PyRequest() {
    if (!arrays_.empty() && !request_.test()) orphans().push_back({request_, std::move(arrays_)});
  }

  CollectiveResult wait() {
    CollectiveResult r;
    try {
      py::gil_scoped_release nogil;
      r = request_.wait();
    } catch (const Error& e) {
      arrays_.clear();
      // This rank's arrays were unusable: its own error says why.
      if (!problem_.empty() && e.code() == Errc::InvalidArgument) throw py::type_error(problem_);
      throw;
    }
    arrays_.clear();
    if (*callback_error_) {
      py::error_already_set e = std::move(**callback_error_);
      callback_error_->reset();
      throw e;
    }
    return r;
  }
  bool test() const { return request_.test(); }

  // Drops the arrays of the orphans whose calls have completed.
  static void release_completed_orphans() {
    auto& list = orphans();
    std::erase_if(list, [](const Orphan& o) { return o.request.test(); });
  }

 private:
  struct Orphan {
    Request request;
    std::vector<py::object> arrays;
  };
  static std::vector<Orphan>& orphans() {
    // Touched under the GIL only; never destroyed (its objects may outlive
    // the interpreter).
    static auto* list = new std::vector<Orphan>;
    return *list;
  }

  Request request_;
  std::vector<py::object> arrays_;
  std::string problem_;
  std::shared_ptr<std::optional<py::error_already_set>> callback_error_;
};

// The Python side of a Communicator: the C++ one is owned by the Runtime,
// whose Python object this keeps alive; it also keeps the arrays registered
// as state and the membership callbacks.
class PyRuntime;
class PyCommunicator {
 public:
  PyCommunicator(Communicator& comm, py::object runtime);
  // A subgroup of the world (Communicator::split, group), owned.
  PyCommunicator(std::unique_ptr<Communicator> owned, py::object runtime)
      : PyCommunicator(*owned, std::move(runtime)) {
    owned_ = std::move(owned);
  }
  ~PyCommunicator() {
    py::gil_scoped_release nogil;  // a subgroup is let go where the calls run
    owned_.reset();
  }
  PyCommunicator(const PyCommunicator&) = delete;
  PyCommunicator& operator=(const PyCommunicator&) = delete;

  std::unique_ptr<PyCommunicator> split(int color, int key) {
    std::unique_ptr<Communicator> sub;
    call([&] {
      sub = comm_.split(color, key);
      return CollectiveResult{};
    });
    if (!sub) return nullptr;
    return std::make_unique<PyCommunicator>(std::move(sub), runtime_);
  }
  std::unique_ptr<PyCommunicator> group(const std::vector<int>& ranks) {
    std::unique_ptr<Communicator> sub;
    call([&] {
      sub = comm_.group(ranks);
      return CollectiveResult{};
    });
    return std::make_unique<PyCommunicator>(std::move(sub), runtime_);
  }

  // The communicator, while its Runtime is open.
  Communicator& get();

  CollectiveResult allreduce(const py::object& input, const py::object& output, ReduceOp op) {
    const auto [in, out, in_place, problem] = operands("allreduce", input, output);
    if (!problem.empty()) return fail_collectively(problem, in.count, in.type, op);
    return call([&] {
      return in_place ? comm_.allreduce(in.address, in.count, in.type, op)
                      : comm_.allreduce(in.address, out.address, in.count, in.type, op);
    });
  }

  CollectiveResult broadcast(const py::object& buffer, int root) {
    const BufferView b = describe(buffer, true);
    if (!b.problem.empty()) {
      // Every member must hear of it: the call goes on with a null buffer,
      // which the runtime rejects on every rank.
      return fail_with("broadcast: " + b.problem,
                       [&] { return comm_.broadcast(nullptr, b.bytes ? b.bytes : 1, root); });
    }
    return call([&] { return comm_.broadcast(b.address, b.bytes, root); });
  }

  CollectiveResult barrier() {
    return call([&] { return comm_.barrier(); });
  }

  // Every rank's `input` into `output` (size x input's elements, one type).
  // An unusable array goes on as a null buffer every rank rejects.
  CollectiveResult allgather(const py::object& input, const py::object& output) {
    const BufferView in = describe(input, false), out = describe(output, true);
    std::string problem = !in.problem.empty() ? in.problem : out.problem;
    if (problem.empty() && in.type != out.type) problem = "input and output differ in type";
    if (!problem.empty())
      return fail_with("allgather: " + problem, [&] {
        return comm_.allgather(nullptr, in.count ? in.count : 1, in.type, nullptr, 0);
      });
    return call([&] { return comm_.allgather(in.address, in.count, in.type, out.address, out.count); });
  }

  // Rank r's counts[r] elements of `input`, every rank's end to end in
  // `output` (the sum of the counts).
  CollectiveResult allgatherv(const py::object& input, const std::vector<std::size_t>& counts,
                              const py::object& output) {
    const BufferView in = describe(input, false), out = describe(output, true);
    std::string problem = !in.problem.empty() ? in.problem : out.problem;
    if (problem.empty() && in.type != out.type) problem = "input and output differ in type";
    const auto rank = static_cast<std::size_t>(comm_.rank());
    if (problem.empty() && counts.size() == static_cast<std::size_t>(comm_.size())) {
      if (in.count != counts[rank])
        problem = "the input holds " + std::to_string(in.count) + " elements, this rank's count is " +
                  std::to_string(counts[rank]);
      else if (out.count != sum_of(counts))
        problem = "the output holds " + std::to_string(out.count) + " elements, the counts add up to " +
                  std::to_string(sum_of(counts));
    }
    if (!problem.empty())
      return fail_with("allgatherv: " + problem,
                       [&] { return comm_.allgatherv(nullptr, {}, in.type, nullptr); });
    return call([&] { return comm_.allgatherv(in.address, counts, in.type, out.address); });
  }

  // send_counts[s] elements of `input` to rank s, recv_counts[s] from it
  // into `output`, blocks end to end in rank order.
  CollectiveResult alltoall(const py::object& input, const std::vector<std::size_t>& send_counts,
                            const py::object& output, const std::vector<std::size_t>& recv_counts) {
    const BufferView in = describe(input, false), out = describe(output, true);
    std::string problem = !in.problem.empty() ? in.problem : out.problem;
    if (problem.empty() && in.type != out.type) problem = "input and output differ in type";
    if (problem.empty() && in.count != sum_of(send_counts))
      problem = "the input holds " + std::to_string(in.count) + " elements, the send counts add up to " +
                std::to_string(sum_of(send_counts));
    if (problem.empty() && out.count != sum_of(recv_counts))
      problem = "the output holds " + std::to_string(out.count) + " elements, the receive counts add up to " +
                std::to_string(sum_of(recv_counts));
    if (!problem.empty())
      return fail_with("alltoall: " + problem,
                       [&] { return comm_.alltoall(nullptr, {}, in.type, nullptr, {}); });
    return call([&] { return comm_.alltoall(in.address, send_counts, in.type, out.address, recv_counts); });
  }

  // `input` holds size() blocks of output's elements; this rank's block of
  // the reduction lands in `output`.
  CollectiveResult reduce_scatter(const py::object& input, const py::object& output, ReduceOp op) {
    const BufferView in = describe(input, false), out = describe(output, true);
    std::string problem = !in.problem.empty() ? in.problem : out.problem;
    if (problem.empty() && in.type != out.type) problem = "input and output differ in type";
    if (problem.empty() && in.count != out.count * static_cast<std::size_t>(comm_.size()))
      problem = "the input holds " + std::to_string(in.count) + " elements, not size() x the output's " +
                std::to_string(out.count);
    if (!problem.empty())
      return fail_with("reduce_scatter: " + problem, [&] {
        return comm_.reduce_scatter(nullptr, nullptr, out.count ? out.count : 1, out.type, op);
      });
    return call([&] { return comm_.reduce_scatter(in.address, out.address, out.count, out.type, op); });
  }

  // Non-blocking: the arrays stay referenced until the call completes. An
  // unusable array is queued as a null buffer that every rank rejects, and
  // this rank's wait() raises TypeError.
  std::unique_ptr<PyRequest> iallreduce(const py::object& input, const py::object& output, ReduceOp op) {
    PyRequest::release_completed_orphans();
    const auto [in, out, in_place, problem] = operands("iallreduce", input, output);
    Communicator& c = get();
    Request r = !problem.empty() ? c.iallreduce(nullptr, nullptr, in.count ? in.count : 1, in.type, op)
                : in_place       ? c.iallreduce(in.address, in.count, in.type, op)
                                 : c.iallreduce(in.address, out.address, in.count, in.type, op);
    return request(std::move(r), {input, output}, problem);
  }
  std::unique_ptr<PyRequest> ibroadcast(const py::object& buffer, int root) {
    PyRequest::release_completed_orphans();
    const BufferView b = describe(buffer, true);
    const std::string problem = b.problem.empty() ? "" : "ibroadcast: " + b.problem;
    Request r = problem.empty() ? get().ibroadcast(b.address, b.bytes, root)
                                : get().ibroadcast(nullptr, b.bytes ? b.bytes : 1, root);
    return request(std::move(r), {buffer}, problem);
  }
  std::unique_ptr<PyRequest> ibarrier() { return request(get().ibarrier(), {}, ""); }
  CollectiveResult grow(int count) {
    return call([&] { return comm_.grow(count); });
  }
  CollectiveResult release(const std::vector<int>& ranks) {
    return call([&] { return comm_.release(ranks); });
  }
  CollectiveResult release_last(int count) {
    return call([&] { return comm_.release_last(count); });
  }

  // Registering and removing callbacks and state queue behind the calls in
  // flight (docs/nonblocking.md), whose callbacks may need the GIL: it is
  // released while they wait.
  int on_membership_change(py::function fn) {
    auto held = std::make_shared<HeldObject>(std::move(fn));
    Communicator& c = get();
    py::gil_scoped_release nogil;
    return c.on_membership_change([pending = callback_error_, held](const MembershipChange& change) {
      py::gil_scoped_acquire gil;
      try {
        held->object(change);
      } catch (py::error_already_set& e) {
        if (!*pending) pending->emplace(std::move(e));
      }
    });
  }
  void remove_membership_callback(int id) {
    Communicator& c = get();
    py::gil_scoped_release nogil;
    c.remove_membership_callback(id);
  }

  void register_state(const std::string& name, const py::object& array) {
    const BufferView b = describe(array, true);
    if (!b.problem.empty())
      throw Error(Errc::InvalidArgument, "register_state('" + name + "'): " + b.problem);
    {
      Communicator& c = get();
      py::gil_scoped_release nogil;
      c.register_state(name, b.address, b.bytes);
    }
    states_[name] = array;  // the memory must outlive the registration
  }
  bool unregister_state(const std::string& name) {
    bool removed = false;
    {
      Communicator& c = get();
      py::gil_scoped_release nogil;
      removed = c.unregister_state(name);
    }
    states_.erase(name);  // after: a state transfer in flight may still read it
    return removed;
  }

 private:
  // An allreduce's arrays (in place when `output` is None or `input`
  // itself), and why ringmend cannot use them ("" when it can).
  struct Operands {
    BufferView in, out;
    bool in_place;
    std::string problem;
  };
  static Operands operands(const char* what, const py::object& input, const py::object& output) {
    const bool in_place = output.is_none() || output.is(input);
    const BufferView in = describe(input, in_place);
    const BufferView out = in_place ? in : describe(output, true);
    return {in, out, in_place, problem_of(what, in, out, in_place)};
  }
  static std::string problem_of(const char* what, const BufferView& in, const BufferView& out,
                                bool in_place) {
    std::string problem = !in.problem.empty() ? "input: " + in.problem : "";
    if (problem.empty() && !out.problem.empty()) problem = "output: " + out.problem;
    if (problem.empty() && !in_place && (in.type != out.type || in.count != out.count))
      problem = "input and output differ (" + std::string(name_of(in.type)) + " x " +
                std::to_string(in.count) + " against " + std::string(name_of(out.type)) + " x " +
                std::to_string(out.count) + ")";
    return problem.empty() ? problem : std::string(what) + ": " + problem;
  }
  std::unique_ptr<PyRequest> request(Request r, std::vector<py::object> arrays, std::string problem) {
    return std::make_unique<PyRequest>(std::move(r), std::move(arrays), std::move(problem), callback_error_);
  }

  // Runs a collective without the GIL; then raises what a membership
  // callback raised during it, if anything.
  template <class F>
  CollectiveResult call(F&& f) {
    get();  // not after close()
    CollectiveResult r;
    {
      py::gil_scoped_release nogil;
      r = f();
    }
    raise_callback_error();
    return r;
  }
  void raise_callback_error() {
    if (!*callback_error_) return;
    py::error_already_set e = std::move(**callback_error_);
    callback_error_->reset();
    throw e;
  }

  // This rank cannot take part with its arrays: the collective still runs,
  // with a null buffer the runtime rejects on every rank alike (so that no
  // peer waits for this one), and this rank raises TypeError with the cause.
  CollectiveResult fail_collectively(const std::string& problem, std::size_t count, DataType type,
                                     ReduceOp op) {
    return fail_with(problem, [&] { return comm_.allreduce(nullptr, nullptr, count ? count : 1, type, op); });
  }
  template <class F>
  CollectiveResult fail_with(const std::string& problem, F&& f) {
    try {
      call(std::forward<F>(f));
    } catch (const Error& e) {
      if (e.code() != Errc::InvalidArgument) throw;  // a failure of the call itself
    }
    throw py::type_error(problem);
  }

  std::unique_ptr<Communicator> owned_;  // a subgroup's, destroyed after comm_'s last use
  Communicator& comm_;
  py::object runtime_;
  PyRuntime& runtime_state_;
  std::map<std::string, py::object> states_;
  // Shared with the callbacks, which may outlive this object.
  std::shared_ptr<std::optional<py::error_already_set>> callback_error_ =
      std::make_shared<std::optional<py::error_already_set>>();
};

// The Runtime and its world communicator; close() ends MPI (once per
// process: MPI cannot start again).
class PyRuntime {
 public:
  // `state` maps names to writable arrays registered on the world before a
  // spare starts to wait (StateBuffer): a spare admitted in a lost member's
  // place receives them in place before its Runtime returns.
  PyRuntime(const py::dict& options, const py::dict& state) {
    Options o = python::options_from_dict(options);
    std::vector<StateBuffer> buffers = to_state(state);
    py::gil_scoped_release nogil;  // start-up waits on the other ranks
    runtime_ = std::make_unique<Runtime>(nullptr, nullptr, std::move(o), std::move(buffers));
  }

  Runtime& get() {
    if (!runtime_) throw Error(Errc::InvalidArgument, "this Runtime was closed");
    return *runtime_;
  }
  bool closed() const { return !runtime_; }

  void close() {
    if (!runtime_) return;
    std::unique_ptr<Runtime> r = std::move(runtime_);
    py::gil_scoped_release nogil;  // the shutdown agrees with the other ranks
    r.reset();
  }

 private:
  std::vector<StateBuffer> to_state(const py::dict& state) {
    std::vector<StateBuffer> buffers;
    for (const auto& [key, array] : state) {
      if (!py::isinstance<py::str>(key))
        throw Error(Errc::InvalidArgument, "Runtime: state names must be strings");
      const std::string name = key.cast<std::string>();
      const BufferView b = describe(array, true);
      if (!b.problem.empty())
        throw Error(Errc::InvalidArgument, "Runtime: state '" + name + "': " + b.problem);
      buffers.push_back({name, b.address, b.bytes});
      state_arrays_.push_back(py::reinterpret_borrow<py::object>(array));  // outlives the registration
    }
    return buffers;
  }

  std::unique_ptr<Runtime> runtime_;
  std::vector<py::object> state_arrays_;
};

PyCommunicator::PyCommunicator(Communicator& comm, py::object runtime)
    : comm_(comm), runtime_(std::move(runtime)), runtime_state_(runtime_.cast<PyRuntime&>()) {}

Communicator& PyCommunicator::get() {
  if (runtime_state_.closed())
    throw Error(Errc::InvalidArgument, "the Runtime of this communicator was closed");
  return comm_;
}

void bind_communicator(py::module_& m) {
  py::class_<PyRequest>(m, "Request").def("wait", &PyRequest::wait).def("test", &PyRequest::test);

  py::class_<PyCommunicator>(m, "Communicator")
      .def_property_readonly("rank", [](PyCommunicator& c) { return c.get().rank(); })
      .def_property_readonly("size", [](PyCommunicator& c) { return c.get().size(); })
      .def_property_readonly("epoch", [](PyCommunicator& c) { return c.get().epoch(); })
      .def_property_readonly("member_id", [](PyCommunicator& c) { return c.get().member_id(); })
      .def_property_readonly("member_ids", [](PyCommunicator& c) { return c.get().member_ids(); })
      .def_property_readonly("collectives_called",
                             [](PyCommunicator& c) { return c.get().collectives_called(); })
      .def_property_readonly("joined", [](PyCommunicator& c) { return c.get().joined(); })
      .def_property_readonly("left", [](PyCommunicator& c) { return c.get().left(); })
      .def("allreduce", &PyCommunicator::allreduce, py::arg("input"), py::arg("output") = py::none(),
           py::arg("op") = ReduceOp::Sum)
      .def("broadcast", &PyCommunicator::broadcast, py::arg("buffer"), py::arg("root"))
      .def("split", &PyCommunicator::split, py::arg("color"), py::arg("key") = 0,
           "A subgroup of the ranks that pass the same color, ordered by (key, rank); a collective "
           "of the world. None for a negative color.")
      .def("group", &PyCommunicator::group, py::arg("ranks"),
           "A subgroup of the world ranks listed, in that order; called by those ranks only.")
      .def_property_readonly("is_subgroup", [](PyCommunicator& c) { return c.get().is_subgroup(); })
      .def("barrier", &PyCommunicator::barrier)
      .def("allgather", &PyCommunicator::allgather, py::arg("input"), py::arg("output"),
           "Every rank's input, rank r's at output[r * input.size]; output holds size x input")
      .def("allgatherv", &PyCommunicator::allgatherv, py::arg("input"), py::arg("counts"), py::arg("output"),
           "Rank r's counts[r] elements, every rank's end to end in rank order in output (sum(counts))")
      .def("alltoall", &PyCommunicator::alltoall, py::arg("input"), py::arg("send_counts"), py::arg("output"),
           py::arg("recv_counts"),
           "send_counts[s] elements of input to rank s, recv_counts[s] from rank s into output, blocks end "
           "to end in rank order")
      .def("reduce_scatter", &PyCommunicator::reduce_scatter, py::arg("input"), py::arg("output"),
           py::arg("op") = ReduceOp::Sum,
           "input holds size blocks of output.size elements; this rank gets the reduction of its block")
      .def("iallreduce", &PyCommunicator::iallreduce, py::arg("input"), py::arg("output") = py::none(),
           py::arg("op") = ReduceOp::Sum)
      .def("ibroadcast", &PyCommunicator::ibroadcast, py::arg("buffer"), py::arg("root"))
      .def("ibarrier", &PyCommunicator::ibarrier)
      .def("grow", &PyCommunicator::grow, py::arg("count"))
      .def("release", &PyCommunicator::release, py::arg("ranks"))
      .def("release_last", &PyCommunicator::release_last, py::arg("count"))
      .def("on_membership_change", &PyCommunicator::on_membership_change, py::arg("callback"))
      .def("remove_membership_callback", &PyCommunicator::remove_membership_callback, py::arg("id"))
      .def("register_state", &PyCommunicator::register_state, py::arg("name"), py::arg("array"))
      // The C++ communicator, for ringmend.torch's process group (which keeps
      // this object alive while it uses it).
      .def("_capsule", [](PyCommunicator& c) { return py::capsule(&c.get(), "ringmend.Communicator"); })
      .def("unregister_state", &PyCommunicator::unregister_state, py::arg("name"));
}

void bind_runtime(py::module_& m) {
  py::class_<PyRuntime>(m, "Runtime")
      .def(py::init<const py::dict&, const py::dict&>(), py::arg("options") = py::dict(),
           py::arg("state") = py::dict())
      .def("_make_world",
           [](py::object self) {
             auto& r = self.cast<PyRuntime&>();
             return std::make_unique<PyCommunicator>(r.get().world(), self);
           })
      .def_property_readonly("fault_tolerant", [](PyRuntime& r) { return r.get().fault_tolerant(); })
      .def_property_readonly("fault_tolerance_status",
                             [](PyRuntime& r) { return r.get().fault_tolerance_status(); })
      .def_property_readonly("control_address", [](PyRuntime& r) { return r.get().control_address(); })
      .def_property_readonly(
          "subgroup_recovery",
          [](PyRuntime& r) { return std::string(name_of(r.get().settings().subgroup_recovery)); },
          "\"call\" or \"step\": what a loss in the world does to subgroups (RINGMEND_SUBGROUP_RECOVERY)")
      .def("_application_failed", [](PyRuntime& r) { r.get().application_failed(); })
      .def_property_readonly("closed", &PyRuntime::closed)
      .def("close", &PyRuntime::close);
}

void bind_functions(py::module_& m) {
  m.def("version", &version);
  m.def("ft_mpirun_args", &ft_mpirun_args);
  m.def(
      "set_log_sink",
      [](py::object sink) {
        if (sink.is_none()) {
          set_log_sink({});
          return;
        }
        auto held = std::make_shared<HeldObject>(std::move(sink));
        set_log_sink([held](LogLevel level, const std::string& line) {
          py::gil_scoped_acquire gil;
          try {
            held->object(level, line);
          } catch (py::error_already_set& e) {
            e.discard_as_unraisable("ringmend log sink");
          }
        });
      },
      py::arg("sink"));
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "ringmend's C++ API (use the package `ringmend`)";
  ringmend::python::bind_enums(m);
  ringmend::python::bind_errors(m);
  ringmend::python::bind_results(m);
  bind_communicator(m);
  bind_runtime(m);
  bind_functions(m);
}
