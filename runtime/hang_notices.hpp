// Hang notices: how a member that is stuck in its own code, alone on its
// node, learns that the others wait for it (docs/recovery.md, "Stuck
// members"). No node mate can read its progress record and its launcher
// cannot tell a long computation from a hang; so a member that has waited
// RINGMEND_HANG_TIMEOUT in collective #k sends a datagram to each member
// not on its node: "member m waits in #k since w seconds". Each process
// listens on a thread of its own, which runs while its application thread
// spins, and judges its own record by the rule the node mates use
// (progress::is_stuck): a process that has not come to #k for the hang
// timeout while another waited as long excludes itself (the record names
// the member whose notice did it) with SIGKILL, and the job recovers from
// it as from a death. A healthy process that receives a notice finds
// itself in the collective, or in a recovery, and ignores it.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "membership/epoch.hpp"

namespace ringmend {

class HangNotices {
 public:
  // Listens on `ip` (the control network's address of this node), or is
  // off when `hang_timeout_seconds` is 0 or no socket can be had (said in
  // the log: the others then get RINGMEND_TIMEOUT, as without notices).
  HangNotices(const std::string& ip, double hang_timeout_seconds);
  ~HangNotices();
  HangNotices(const HangNotices&) = delete;
  HangNotices& operator=(const HangNotices&) = delete;

  // This process's member id, for the notices addressed to it.
  void set_member(int id) { member_.store(id, std::memory_order_relaxed); }
  // Where this process listens (IPv4 address and port, network order; 0s
  // when off), for its MemberInfo.
  std::uint32_t ip() const { return ip_; }
  std::uint16_t port() const { return port_; }

  // Sends "member `me` has waited `waited` seconds in collective `seq`" to
  // every member of `e` not on `me`'s node (`same_node`) that listens.
  void tell_others(const membership::Epoch& e, std::uint64_t seq, double waited,
                   const std::vector<bool>& same_node) const;

 private:
  void listen();
  void judge_self(int from, std::uint64_t seq, double waited) const;

  double hang_timeout_;
  int socket_ = -1, stop_ = -1;  // the datagram socket, an eventfd that ends the thread
  std::uint32_t ip_ = 0;
  std::uint16_t port_ = 0;
  std::atomic<int> member_{-1};
  std::thread thread_;
};

}  // namespace ringmend
