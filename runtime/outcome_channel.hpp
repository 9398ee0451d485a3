// The Runtime's side of the launcher's pipe (ringmend/core/outcome.hpp):
// what only this process knows about how its run ends, told as words.
#pragma once

#include <string>

namespace ringmend {

// The launcher's pipe, when ringmend-rank started this process; -1 otherwise.
int outcome_fd_from_environment();

// One write of `words` and a newline (nothing when `fd` < 0): the launcher
// reads what arrived once the rank has exited.
void tell_launcher(int fd, const std::string& words);

}  // namespace ringmend
