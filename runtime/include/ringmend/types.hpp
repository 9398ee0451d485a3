// Element types and reduction operations (defined in the bottom layer, core/).
#pragma once

#include "ringmend/core/types.hpp"
