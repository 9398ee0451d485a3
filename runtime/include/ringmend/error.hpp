// Errc and Error (defined in the bottom layer, core/).
#pragma once

#include "ringmend/core/error.hpp"
