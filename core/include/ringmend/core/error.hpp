// The errors ringmend reports to the application (part of the bottom layer,
// core/). Every failure that reaches a caller of the public API is an Error
// with one of these codes: the runtime converts whatever a lower layer throws
// (MPI, UCX, shared memory, the standard library) at one boundary.
#pragma once

#include <stdexcept>
#include <string>

namespace ringmend {

enum class Errc {
  InvalidArgument,            // bad argument on some rank (null buffer, bad type, bad option, ...)
  Mismatch,                   // ranks called a collective with different arguments
  Timeout,                    // a collective exceeded RINGMEND_TIMEOUT
  FaultToleranceUnavailable,  // a rank failed but the job runs without ULFM
  RootLost,                   // the root of a broadcast failed before anyone got the data
  BadEnvironment,             // a RINGMEND_* variable has an invalid value
  Internal,                   // MPI or UCX failed in a way ringmend cannot recover from
  Released,                   // this process left the job (Communicator::release) and calls no collective
  SizeChanged,                // the group's size changed during a call laid out for it (reduce_scatter)
  MemberLost,                 // a member of a subgroup failed: the subgroup runs no more calls (split again)
};

const char* to_string(Errc code);

// True for the errors the application's own input causes (an argument, a
// call that differs across ranks, a setting): the application reports
// those; the others are also logged for the operator.
constexpr bool caused_by_input(Errc code) {
  return code == Errc::InvalidArgument || code == Errc::Mismatch || code == Errc::BadEnvironment ||
         code == Errc::Released;
}

class Error : public std::runtime_error {
 public:
  Error(Errc code, const std::string& what) : std::runtime_error(what), code_(code) {}
  Errc code() const { return code_; }

 private:
  Errc code_;
};

}  // namespace ringmend
