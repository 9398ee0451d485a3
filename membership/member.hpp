// Members and what they tell each other when an epoch is built.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "topo/location.hpp"

namespace ringmend::membership {

// A member's identity, kept across epochs. The members started with the job
// have their MPI_COMM_WORLD rank as id; a process admitted later (Grow) gets
// a new id, never used before in the job.
using MemberId = std::int32_t;
inline constexpr MemberId kNoMember = -1;

// How far a member is in one of its subgroups (runtime/subgroup.hpp): the
// calls of it that it finished, at a build of the world's epoch.
struct SubgroupProgress {
  std::uint64_t identity = 0;  // the same on each of its members
  std::int64_t finished = 0;
};

// What each member tells the others at the start of every epoch. Fixed size,
// so that it travels in one MPI_Allgather.
struct MemberInfo {
  static constexpr int kSubgroupsListed = 16;
  // Identity and placement (filled in by the builder)
  MemberId id = kNoMember;        // kNoMember: a joiner, given an id in this epoch
  MemberId next_id = 0;           // the id the next joiner gets (members agree on it)
  std::int32_t joining = 0;       // 1: admitted in this epoch (it has no previous one)
  std::uint64_t epoch = 0;        // the epoch this member comes from
  std::int32_t node_key = -1;     // control rank of this node's first rank
  std::int32_t host = -1;         // world rank of the first process of its node, if known (SparePool)
  std::int32_t pid = 0;           // watched by node peers; names the node's segment
  std::uint32_t notice_ip = 0;    // where it hears hang notices (runtime/hang_notices.hpp), network order;
  std::uint16_t notice_port = 0;  // 0: it does not listen
  std::int32_t no_shm = 0;        // 1: a build it took part in found a node without shared memory
  std::uint64_t machine = 0;      // identifies the physical machine (boot id), to count ranks per CPU
  std::uint64_t nonce = 0;        // makes the node's segment name unique
  topo::Location where;           // hwloc binding, for the local order
  // Where its collectives stand (filled in by the caller, the communicator)
  std::int64_t seq = 0;  // collective in progress (next one when idle)
  std::int32_t finalizing = 0;
  std::int32_t errc = -1;         // Errc of an input error in collective seq, or -1
  std::int64_t held[2] = {0, 0};  // the collectives whose results it retains (for a catch-up)
  // Its subgroups still running (up to kSubgroupsListed: the others are
  // ended by a recovery of the world), for their survivors to judge alike
  // whether each can go on (runtime/subgroup.cpp).
  std::int32_t subgroups_listed = 0;
  SubgroupProgress subgroups[kSubgroupsListed] = {};
  char error[196] = {};
  char node[64] = {};  // where it runs, as an operator names it (for the log)

  void set_error(const std::string& text) { std::snprintf(error, sizeof error, "%s", text.c_str()); }
};

}  // namespace ringmend::membership
