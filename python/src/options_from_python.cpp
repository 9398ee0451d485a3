#include "options_from_python.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace py = pybind11;

namespace ringmend::python {

namespace {

using Setter = std::function<void(const py::handle&)>;

// Sets one member from a Python value cast to the member's type (a value
// of another type is a py::cast_error, reported below).
template <class T>
Setter cast_into(Options& o, std::optional<T> Options::*member) {
  return [&o, member](const py::handle& v) { o.*member = v.cast<T>(); };
}

// Sets one member from a Python string through its environment parser, so
// that a word it refuses is refused here alike, naming the option.
template <class T>
Setter parsed_into(Options& o, std::optional<T> Options::*member,
                   T (*parse)(const std::string&, const std::string&), const char* name) {
  return [&o, member, parse, name](const py::handle& v) { o.*member = parse(name, v.cast<std::string>()); };
}

}  // namespace

Options options_from_dict(const py::dict& options) {
  Options o;
  const std::map<std::string, Setter> fields = {
      {"chunk_bytes", cast_into(o, &Options::chunk_bytes)},
      {"small_bytes", cast_into(o, &Options::small_bytes)},
      {"timeout", cast_into(o, &Options::timeout_seconds)},
      {"recovery_timeout", cast_into(o, &Options::recovery_timeout_seconds)},
      {"start_timeout", cast_into(o, &Options::start_timeout_seconds)},
      {"finalize_timeout", cast_into(o, &Options::finalize_timeout_seconds)},
      {"spares", cast_into(o, &Options::spares)},
      {"spare_policy", parsed_into(o, &Options::spare_policy, parse_spare_policy, "spare_policy")},
      {"subgroup_recovery",
       parsed_into(o, &Options::subgroup_recovery, parse_subgroup_recovery, "subgroup_recovery")},
      {"shm", cast_into(o, &Options::shm)},
      {"shm_tune", cast_into(o, &Options::shm_tune)},
      {"ucx_workers_ahead", cast_into(o, &Options::ucx_workers_ahead)},
      {"nccl", cast_into(o, &Options::nccl)},
      {"nccl_shrink", cast_into(o, &Options::nccl_shrink)},
      {"test_ranks_per_node", cast_into(o, &Options::test_ranks_per_node)},
      {"shm_buffer_bytes", cast_into(o, &Options::shm_buffer_bytes)},
      {"shm_chunk_bytes", cast_into(o, &Options::shm_chunk_bytes)},
      {"shm_depth", cast_into(o, &Options::shm_depth)},
      {"log_level", parsed_into(o, &Options::log_level, parse_log_level, "log_level")},
      {"verbose", cast_into(o, &Options::verbose)},
      {"fault_spec", cast_into(o, &Options::fault_spec)},
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
