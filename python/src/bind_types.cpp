// The plain types of ringmend._core: enumerations, ringmend.Error, and what
// a call and a membership change report (module.cpp binds the rest).
#include "bind_types.hpp"

#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "ringmend/ringmend.hpp"

namespace py = pybind11;
using namespace ringmend;

namespace {

std::string ids_text(const std::vector<int>& ids) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

}  // namespace

namespace ringmend::python {

// The enumerations: element types, reductions, error codes, log levels.
void bind_enums(py::module_& m) {
  py::enum_<DataType>(m, "DataType")
      .value("FLOAT32", DataType::Float32)
      .value("FLOAT64", DataType::Float64)
      .value("INT32", DataType::Int32)
      .value("INT64", DataType::Int64)
      .value("FLOAT16", DataType::Float16)
      .value("BFLOAT16", DataType::BFloat16);
  py::enum_<ReduceOp>(m, "ReduceOp")
      .value("SUM", ReduceOp::Sum)
      .value("PROD", ReduceOp::Prod)
      .value("MIN", ReduceOp::Min)
      .value("MAX", ReduceOp::Max);
  py::enum_<Errc>(m, "Errc")
      .value("INVALID_ARGUMENT", Errc::InvalidArgument)
      .value("MISMATCH", Errc::Mismatch)
      .value("TIMEOUT", Errc::Timeout)
      .value("FAULT_TOLERANCE_UNAVAILABLE", Errc::FaultToleranceUnavailable)
      .value("ROOT_LOST", Errc::RootLost)
      .value("BAD_ENVIRONMENT", Errc::BadEnvironment)
      .value("INTERNAL", Errc::Internal)
      .value("RELEASED", Errc::Released)
      .value("SIZE_CHANGED", Errc::SizeChanged)
      .value("MEMBER_LOST", Errc::MemberLost);
  py::enum_<LogLevel>(m, "LogLevel")
      .value("ERROR", LogLevel::Error)
      .value("WARN", LogLevel::Warn)
      .value("INFO", LogLevel::Info)
      .value("DEBUG", LogLevel::Debug);
}

// ringmend.Error (a RuntimeError with `code`, an Errc), from ringmend::Error.
void bind_errors(py::module_& m) {
  // ringmend.Error(RuntimeError) with `code`, an Errc.
  // Never destroyed (see describe()).
  static const auto* error_type = new py::exception<Error>(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      py::object err = py::handle(error_type->ptr())(e.what());
      err.attr("code") = e.code();
      PyErr_SetObject(error_type->ptr(), err.ptr());
    }
  });
}

// What a call and a membership change report.
void bind_results(py::module_& m) {
  py::class_<CollectiveResult>(m, "CollectiveResult")
      .def_readonly("recovered", &CollectiveResult::recovered)
      .def_readonly("lost", &CollectiveResult::lost)
      .def_readonly("joined", &CollectiveResult::joined)
      .def_readonly("released", &CollectiveResult::released)
      .def_readonly("contributors", &CollectiveResult::contributors)
      .def_readonly("epoch", &CollectiveResult::epoch)
      .def_readonly("left", &CollectiveResult::left)
      .def("__repr__", [](const CollectiveResult& r) {
        std::string s = "CollectiveResult(contributors=" + std::to_string(r.contributors) +
                        ", epoch=" + std::to_string(r.epoch);
        if (r.recovered) s += ", recovered=True";
        if (!r.lost.empty()) s += ", lost=" + ids_text(r.lost);
        if (!r.joined.empty()) s += ", joined=" + ids_text(r.joined);
        if (!r.released.empty()) s += ", released=" + ids_text(r.released);
        if (r.left) s += ", left=True";
        return s + ")";
      });

  py::class_<MembershipChange>(m, "MembershipChange")
      .def_readonly("old_epoch", &MembershipChange::old_epoch)
      .def_readonly("new_epoch", &MembershipChange::new_epoch)
      .def_readonly("lost", &MembershipChange::lost)
      .def_readonly("joined", &MembershipChange::joined)
      .def_readonly("released", &MembershipChange::released)
      .def_readonly("old_size", &MembershipChange::old_size)
      .def_readonly("new_size", &MembershipChange::new_size)
      .def_readonly("new_rank", &MembershipChange::new_rank)
      .def_readonly("recovery_seconds", &MembershipChange::recovery_seconds)
      .def_readonly("shrink_seconds", &MembershipChange::shrink_seconds)
      .def_readonly("rebuild_seconds", &MembershipChange::rebuild_seconds)
      .def_readonly("admit_seconds", &MembershipChange::admit_seconds)
      .def_readonly("state_seconds", &MembershipChange::state_seconds)
      .def_readonly("state_bytes", &MembershipChange::state_bytes)
      .def_readonly("attempts", &MembershipChange::attempts)
      .def("__repr__", [](const MembershipChange& c) {
        return "MembershipChange(epoch " + std::to_string(c.old_epoch) + " -> " +
               std::to_string(c.new_epoch) + ", size " + std::to_string(c.old_size) + " -> " +
               std::to_string(c.new_size) + ", lost=" + ids_text(c.lost) + ", joined=" + ids_text(c.joined) +
               ", released=" + ids_text(c.released) + ")";
      });
}

}  // namespace ringmend::python
