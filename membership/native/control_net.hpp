// The native membership's control network: TCP between the processes of a
// job, one listener per process, frames (frame.hpp) in both directions.
//
// Each process sends on connections it opened itself (lazily, at the first
// frame for a peer) and receives on those its peers opened, so no two
// processes ever race to connect to each other. A connection that closes
// or resets without a Bye, or that cannot be opened, reports its peer
// lost: a peer process that died on a node whose kernel lives is noticed
// in well under a millisecond (a node that goes silent is the heartbeats'
// business, heartbeat_ring.hpp).
//
// Nothing here blocks: sends are queued and written as the socket takes
// them, and the event loop belongs to the caller, who polls the
// descriptors this class lists beside its own (group.hpp).
#pragma once

#include <poll.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "membership/native/frame.hpp"

namespace ringmend::membership::native {

// The IPv4 address the control network listens on: that of the interface
// named by `interface` (RINGMEND_CONTROL_INTERFACE) when given, else of the
// first interface that is up and not loopback, else 127.0.0.1. Throws
// std::runtime_error for a named interface that has no IPv4 address.
std::string control_ip(const std::string& interface);

class ControlNet {
 public:
  // Listens on an ephemeral port of `bind_ip` (an IPv4 address of this
  // node) for the processes of job `job_key`.
  ControlNet(std::uint64_t job_key, MemberId self, const std::string& bind_ip);
  ~ControlNet();
  ControlNet(const ControlNet&) = delete;
  ControlNet& operator=(const ControlNet&) = delete;

  // "IP:PORT", what the peers connect to.
  const std::string& address() const { return address_; }
  MemberId self() const { return self_; }
  // The job's key, when it is agreed after the network was opened (before
  // any peer is added).
  void set_job_key(std::uint64_t key) { job_key_ = key; }
  std::uint64_t job_key() const { return job_key_; }

  void add_peer(MemberId id, const std::string& address);
  // Queues `frame` for `to`, connecting first if need be; written at once
  // as far as the socket takes it. A peer not known, or forgotten, is
  // skipped.
  void send(MemberId to, const Frame& frame);
  // Closes the connections with `id` and forgets it (it left the view).
  void forget(MemberId id);
  // Sends Bye to every peer connected to and writes what is queued, for at
  // most `timeout_ms`; then closes everything.
  void close_gracefully(std::uint64_t epoch, int timeout_ms);

  // The caller's event loop polls these (appended to `fds`)...
  void pollfds(std::vector<pollfd>& fds) const;
  struct Events {
    std::vector<Frame> frames;
    std::vector<MemberId> lost;  // each peer once
  };
  // ...and hands back what poll() said about them (all of `fds`: entries
  // that are not this network's are skipped).
  void handle(const std::vector<pollfd>& fds, Events& out);

  // Bytes queued and not yet written (tests, diagnostics).
  std::size_t queued_bytes() const;

 private:
  struct Connection;
  void accept_all();
  void flush(Connection& c);
  // Reads what `c` has and hands on its frames; true when `c` is over
  // (closed, reset, or not speaking our protocol).
  bool drain(Connection& c, Events& out);
  void close_connection(int fd, bool failed, Events& out);
  void report_lost(MemberId peer, Events& out);

  std::uint64_t job_key_;
  MemberId self_;
  int listener_ = -1;
  std::string address_;
  std::map<MemberId, std::string> peers_;
  std::set<MemberId> forgotten_, reported_, said_bye_;
  std::map<int, std::unique_ptr<Connection>> connections_;  // by descriptor
  std::map<MemberId, int> outgoing_;                        // peer -> descriptor
  std::vector<MemberId> failed_connects_;                   // reported at the next handle()
};

}  // namespace ringmend::membership::native
