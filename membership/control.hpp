// The members' control group of one epoch: what the epoch builder and the
// recovery ask of a membership backend. Two backends implement it:
//
//   * ulfm_control.hpp: an MPI communicator with ULFM (jobs under mpirun);
//     a failure is noticed by ULFM, a shrink is MPIX_Comm_shrink;
//   * native/native_control.hpp: a view of the native membership
//     (docs/membership.md; jobs under plain srun, no MPI runtime needed
//     after start-up); a shrink is a view change.
//
// Ranks are the positions in this group (0 .. size-1), ordered as the
// members' ids for the native backend and as the communicator's ranks for
// ULFM. Every operation that waits is bounded by a failure: it returns
// false (or nothing) when a member failed or the group was revoked, never
// waits for a dead process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ringmend::membership {

class Control {
 public:
  virtual ~Control() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The job-wide number of each rank of this group (the world rank under
  // MPI, the member id of the native membership); diagnostics and the
  // members of a start-up that failed.
  virtual std::vector<int> world_ranks() const = 0;
  // Which backend, for messages ("ULFM", "native").
  virtual const char* backend() const = 0;

  // Failure notification for the data path: after watch(), failure_noticed()
  // says, without blocking, whether a member failed or the group was
  // revoked (and keeps saying it). Every data-plane wait polls it.
  virtual void watch() = 0;
  virtual void unwatch() = 0;
  virtual bool failure_noticed() = 0;

  // Makes every member notice a failure (idempotent): the others stop what
  // they do in this group and come to its recovery.
  virtual void revoke() = 0;
  virtual bool revoked() = 0;

  // `flag` becomes the bitwise AND over the members; false when a failure
  // interrupted it. ULFM makes the outcome uniform; the native backend
  // makes it so through the view change that follows a failure (a member
  // that returned true then finds its next step interrupted). `sleeping`:
  // this process has nothing else to do and should leave the CPU to those
  // that do.
  virtual bool agree(int& flag, bool sleeping = false) = 0;
  // A meeting point's agreement on an all-ones flag, given up (false) once
  // this group is revoked: another member's recovery went through the
  // spare pool instead of coming here. True when every member came. The
  // native backend's views end such an agreement by themselves.
  virtual bool agree_unless_revoked() {
    int flag = 1;
    return agree(flag, true) && flag == 1;
  }
  // The backend's collectives are uniform (every member sees one outcome):
  // ULFM's; the native membership's all-gathers are not (docs/membership.md).
  virtual bool uniform_outcomes() const = 0;
  // Every member's `bytes` bytes at `mine`, in rank order, into `all`.
  virtual bool allgather(const void* mine, std::size_t bytes, void* all) = 0;
  // Bytes sent to each of `peers` and received from each (a symmetric
  // relation: every peer lists this rank too). Every member calls it the
  // same number of times, with or without peers.
  virtual bool exchange(const std::vector<int>& peers, const std::vector<std::byte>& mine,
                        std::vector<std::vector<std::byte>>& theirs) = 0;
  virtual bool barrier() = 0;

  // Revokes this group and agrees with the survivors on the next one:
  // `lost` are the ranks (of this group) that are gone. Nothing when the
  // shrink failed and should be tried again (`error` says why). Throws
  // ringmend::Error when this process cannot go on (it was fenced out of
  // the membership, or no membership was agreed in time).
  struct Shrunk {
    std::unique_ptr<Control> survivors;
    std::vector<int> lost;
  };
  virtual std::optional<Shrunk> shrink(std::string& error) = 0;

  // A control group of some of this group's ranks (this process one of
  // them), made by those ranks only, without waiting for the others: a
  // subgroup's (runtime/subgroup.hpp). Nothing when it cannot be made (the
  // backend has no subsets): `error` says why.
  struct SubsetSpec {
    std::vector<int> ranks;      // in this group, in the subset's order
    std::vector<int> node_keys;  // each one's node key in the subset (its first node mate's subset rank)
    // The same on each of its ranks, different for every subset the same
    // processes make over this group: tells their messages apart.
    std::uint64_t identity = 0;
    double timeout_seconds = 0;  // bounds a wait for a member that does not come (0: none)
  };
  virtual std::unique_ptr<Control> subset(const SubsetSpec& spec, std::string& error) = 0;
  // Why this backend makes no subsets, or null when it does.
  virtual const char* subsets_unsupported() const { return nullptr; }

  // The rank (in this group) of the first rank on this process's node;
  // nothing when the backend cannot tell.
  virtual std::optional<int> node_key() = 0;
  // The ranks the backend already knows failed (diagnostics).
  virtual std::vector<int> known_failed() = 0;
};

}  // namespace ringmend::membership
