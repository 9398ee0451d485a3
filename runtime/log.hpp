// The runtime's diagnostic log (RINGMEND_VERBOSE=1): one line per event on
// stderr, prefixed with this rank's place in the current epoch.
#pragma once

#include <string>

#include "membership/epoch.hpp"
#include "ringmend/core/options.hpp"

namespace ringmend {

void log(const Settings& settings, const membership::Epoch& epoch, const std::string& message);

}  // namespace ringmend
