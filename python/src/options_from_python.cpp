#include "options_from_python.hpp"

#include <functional>
#include <map>
#include <string>

namespace py = pybind11;

namespace ringmend::python {

Options options_from_dict(const py::dict& options) {
  Options o;
  const auto size = [](const py::handle& v) { return v.cast<std::size_t>(); };
  const auto seconds = [](const py::handle& v) { return v.cast<double>(); };
  const auto flag = [](const py::handle& v) { return v.cast<bool>(); };
  const std::map<std::string, std::function<void(const py::handle&)>> fields = {
      {"chunk_bytes", [&](const py::handle& v) { o.chunk_bytes = size(v); }},
      {"small_bytes", [&](const py::handle& v) { o.small_bytes = size(v); }},
      {"timeout", [&](const py::handle& v) { o.timeout_seconds = seconds(v); }},
      {"recovery_timeout", [&](const py::handle& v) { o.recovery_timeout_seconds = seconds(v); }},
      {"start_timeout", [&](const py::handle& v) { o.start_timeout_seconds = seconds(v); }},
      {"finalize_timeout", [&](const py::handle& v) { o.finalize_timeout_seconds = seconds(v); }},
      {"spares", [&](const py::handle& v) { o.spares = size(v); }},
      {"spare_policy",
       [&](const py::handle& v) {
         o.spare_policy = parse_spare_policy("spare_policy", v.cast<std::string>());
       }},
      {"subgroup_recovery",
       [&](const py::handle& v) {
         o.subgroup_recovery = parse_subgroup_recovery("subgroup_recovery", v.cast<std::string>());
       }},
      {"shm", [&](const py::handle& v) { o.shm = flag(v); }},
      {"shm_tune", [&](const py::handle& v) { o.shm_tune = flag(v); }},
      {"ucx_workers_ahead", [&](const py::handle& v) { o.ucx_workers_ahead = flag(v); }},
      {"nccl", [&](const py::handle& v) { o.nccl = flag(v); }},
      {"nccl_shrink", [&](const py::handle& v) { o.nccl_shrink = flag(v); }},
      {"test_ranks_per_node", [&](const py::handle& v) { o.test_ranks_per_node = size(v); }},
      {"shm_buffer_bytes", [&](const py::handle& v) { o.shm_buffer_bytes = size(v); }},
      {"shm_chunk_bytes", [&](const py::handle& v) { o.shm_chunk_bytes = size(v); }},
      {"shm_depth", [&](const py::handle& v) { o.shm_depth = size(v); }},
      {"log_level",
       [&](const py::handle& v) { o.log_level = parse_log_level("log_level", v.cast<std::string>()); }},
      {"verbose", [&](const py::handle& v) { o.verbose = flag(v); }},
      {"fault_spec", [&](const py::handle& v) { o.fault_spec = v.cast<std::string>(); }},
  };
  for (const auto& [key, value] : options) {
    const std::string name = key.cast<std::string>();
    const auto it = fields.find(name);
    if (it == fields.end()) {
      std::string known;
      for (const auto& f : fields) known += (known.empty() ? "" : ", ") + f.first;
      throw Error(Errc::InvalidArgument, "Runtime: unknown option '" + name + "' (options: " + known + ")");
    }
    try {
      it->second(value);
    } catch (const py::cast_error&) {
      throw Error(Errc::InvalidArgument, "Runtime: option '" + name + "' has a value of the wrong type (" +
                                             std::string(py::str(py::type::of(value).attr("__name__"))) +
                                             ")");
    } catch (const Error& e) {
      throw Error(Errc::InvalidArgument, "Runtime: option '" + name + "': " + e.what());
    }
  }
  return o;
}

}  // namespace ringmend::python
