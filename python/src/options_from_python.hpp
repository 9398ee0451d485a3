// ringmend.Runtime's keyword options (a dict of Python values) as
// ringmend::Options: every name known, every value of the right type, else
// Error(InvalidArgument) naming it.
#pragma once

#include <pybind11/pybind11.h>

#include "ringmend/ringmend.hpp"

namespace ringmend::python {

Options options_from_dict(const pybind11::dict& options);

}  // namespace ringmend::python
