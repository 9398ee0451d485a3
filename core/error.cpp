#include "ringmend/core/error.hpp"

namespace ringmend {

const char* to_string(Errc code) {
  switch (code) {
    case Errc::InvalidArgument:
      return "invalid argument";
    case Errc::Mismatch:
      return "inconsistent call across ranks";
    case Errc::Timeout:
      return "timeout";
    case Errc::FaultToleranceUnavailable:
      return "fault tolerance unavailable";
    case Errc::RootLost:
      return "broadcast root lost";
    case Errc::BadEnvironment:
      return "bad environment variable";
    case Errc::Internal:
      return "internal error";
    case Errc::Released:
      return "released from the job";
    case Errc::SizeChanged:
      return "group size changed during the call";
    case Errc::MemberLost:
      return "a member of the subgroup was lost";
  }
  return "unknown error";
}

}  // namespace ringmend
