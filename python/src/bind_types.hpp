// Bindings of ringmend._core's plain types (bind_types.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace ringmend::python {

void bind_enums(pybind11::module_& m);
void bind_errors(pybind11::module_& m);
void bind_results(pybind11::module_& m);

}  // namespace ringmend::python
