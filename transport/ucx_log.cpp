#include "transport/ucx_log.hpp"

#include <ucs/debug/log_def.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

#include "ringmend/core/log.hpp"

namespace ringmend::transport {
namespace {

thread_local int quiet_depth = 0;
thread_local int peer_lost_depth = 0;
// The last message on this thread was a connection to a gone peer: UCX's
// hint about the kernel's backlog follows it.
thread_local bool after_gone_peer_connect = false;

bool expected_anywhere(std::string_view text) {
  const bool was_after = after_gone_peer_connect;
  after_gone_peer_connect = connect_failed_to_gone_peer(text);
  return after_gone_peer_connect || (was_after && text.starts_with("try to increase"));
}

ucs_log_func_rc_t to_debug(const char* file, unsigned line, const char*, ucs_log_level_t level,
                           const ucs_log_component_config_t*, const char* format, va_list ap) {
  if (level > UCS_LOG_LEVEL_WARN) return UCS_LOG_FUNC_RC_CONTINUE;
  char text[512];
  va_list copy;
  va_copy(copy, ap);
  std::vsnprintf(text, sizeof text, format, copy);
  va_end(copy);
  const bool expected = expected_anywhere(text);  // first: it follows every message
  // A request not given back is a leak, abandoned worker or not: printed.
  const std::string_view t(text);
  const bool leak = t.find("was not returned to mpool") != std::string_view::npos;
  // What a sender that died half-way through a message left behind.
  const bool half_received =
      leak && peer_lost_depth > 0 && (t.ends_with("mpool ucp_requests") || t.ends_with("mpool ucp_am_bufs"));
  if (!expected && (quiet_depth == 0 || (leak && !half_received))) return UCS_LOG_FUNC_RC_CONTINUE;
  if (log_enabled(LogLevel::Debug))
    log(LogLevel::Debug,
        std::string("UCX (expected after a failure; ") + file + ":" + std::to_string(line) + "): " + text);
  return UCS_LOG_FUNC_RC_STOP;
}

}  // namespace

bool connect_failed_to_gone_peer(std::string_view text) {
  // Refused: nobody listens at the address any more; reset: the peer's
  // kernel dropped the connection as its process died.
  return text.starts_with("connect(") &&
         (text.ends_with("failed: Connection refused") || text.ends_with("failed: Connection reset by peer"));
}

void filter_ucx_log() {
  // UCX keeps its handlers in a fixed list for the process's life.
  static std::once_flag installed;
  std::call_once(installed, [] { ucs_log_push_handler(&to_debug); });
}

QuietUcxScope::QuietUcxScope(bool peer_lost) : peer_lost_(peer_lost) {
  ++quiet_depth;
  if (peer_lost_) ++peer_lost_depth;
}

QuietUcxScope::~QuietUcxScope() {
  --quiet_depth;
  if (peer_lost_) --peer_lost_depth;
}

}  // namespace ringmend::transport
