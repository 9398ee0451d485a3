// UCX's own messages about what a fault-tolerant job expects.
//
// A dead peer and an abandoned worker make UCX print errors and warnings
// that, in a job that recovers from failures, are not faults: ringmend's
// detectors and its recovery log report the death itself. Those messages
// go to ringmend's log at debug level instead of stderr:
//   - inside a QuietUcxScope, on the thread that holds it, every warning
//     and error but a leaked request: a worker given up on after a
//     failure is destroyed with what the interrupted call left in it
//     (messages no receive will match: "unexpected tag-receive
//     descriptor ... was not matched"; endpoints to a dead peer still
//     being connected);
//   - inside a QuietUcxScope that says a peer was lost, also UCX's own
//     receive requests and fragment buffers "not returned to mpool": a
//     message of several fragments (64 KiB segments when striping over
//     NICs) whose sender died half-way stays in the worker, matched to a
//     receive that ucp_request_cancel cannot take back, or unexpected,
//     until the worker is destroyed (UCX 1.13). Leaks of any other pool,
//     and of these without a failure, are still printed;
//   - anywhere, a connection refused or reset ("connect(...) failed:
//     Connection refused", "... Connection reset by peer", and UCX's hint
//     after it to raise the kernel's connection backlog): the peer's
//     process or worker is gone, or went while the connection was made.
//     UCX then fails the endpoint, which ringmend sees and reports.
// Every other message of UCX is printed as UCX is configured to.
#pragma once

#include <string_view>

namespace ringmend::transport {

// Whether a UCX message is a connect that failed because the peer is gone
// (refused or reset): the filter's test, apart for its unit test.
bool connect_failed_to_gone_peer(std::string_view ucx_message);

// Installs the filter; once per process, UcxContext does it (a channel,
// and so a QuietUcxScope, needs a context first).
void filter_ucx_log();

class QuietUcxScope {
 public:
  // `peer_lost`: the worker this scope tears down lost a peer or was
  // abandoned by an interrupted call.
  explicit QuietUcxScope(bool peer_lost = false);
  ~QuietUcxScope();
  QuietUcxScope(const QuietUcxScope&) = delete;
  QuietUcxScope& operator=(const QuietUcxScope&) = delete;

 private:
  bool peer_lost_;
};

}  // namespace ringmend::transport
