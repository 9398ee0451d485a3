#include "membership/ulfm_control.hpp"

#include <string>

#include "membership/address_exchange.hpp"
#include "membership/ulfm_subset_control.hpp"
#include "ringmend/core/error.hpp"

namespace ringmend::membership {

UlfmControl::UlfmControl(ulfm::CommHandle comm) : comm_(std::move(comm)) {
  MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_.get(), &rank_);
  MPI_Comm_size(comm_.get(), &size_);
}

std::unique_ptr<UlfmControl> UlfmControl::first_members(MPI_Comm world, bool fault_tolerant) {
  if (fault_tolerant) {
    int rc = MPI_SUCCESS;
    ulfm::ShrinkOutcome live = ulfm::shrink(world, rc);
    if (rc != MPI_SUCCESS)
      throw Error(Errc::Internal, "MPIX_Comm_shrink of the world failed: " + ulfm::error_string(rc));
    return std::make_unique<UlfmControl>(std::move(live.comm));
  }
  MPI_Comm dup = MPI_COMM_NULL;
  if (int rc = MPI_Comm_dup(world, &dup); rc != MPI_SUCCESS)
    throw Error(Errc::Internal, "MPI_Comm_dup failed: " + ulfm::error_string(rc));
  return std::make_unique<UlfmControl>(ulfm::CommHandle(dup));
}

std::vector<int> UlfmControl::world_ranks() const { return ulfm::ranks_in(comm(), MPI_COMM_WORLD); }

void UlfmControl::watch() {
  if (!monitor_) monitor_ = std::make_unique<ulfm::FailureMonitor>(comm());
}

// Open MPI numbers the agreements on a communicator in order and pairs the
// n-th of every process: an agreement given up must not be made again
// (runtime/recovery.cpp, above meet(), says why), hence the non-blocking one.
bool UlfmControl::agree_unless_revoked() {
  MPI_Comm c = comm();
  bool success = false;
  return ulfm::agree_while(
             c, [c] { return ulfm::is_revoked(c); }, success) &&
         success;
}

bool UlfmControl::agree(int& flag, bool sleeping) {
  return (sleeping ? ulfm::agree_sleeping(comm(), flag) : ulfm::agree(comm(), flag)) == MPI_SUCCESS;
}

bool UlfmControl::allgather(const void* mine, std::size_t bytes, void* all) {
  return MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes), MPI_BYTE,
                       comm()) == MPI_SUCCESS;
}

bool UlfmControl::exchange(const std::vector<int>& peers, const std::vector<std::byte>& mine,
                           std::vector<std::vector<std::byte>>& theirs) {
  if (peers.empty()) return true;
  return exchange_addresses(comm(), peers, mine, theirs);
}

std::optional<Control::Shrunk> UlfmControl::shrink(std::string& error) {
  int rc = MPI_SUCCESS;
  ulfm::ShrinkOutcome shrunk = ulfm::revoke_and_shrink(comm(), rc);
  if (rc != MPI_SUCCESS) {
    error = ulfm::error_string(rc);
    return std::nullopt;
  }
  Shrunk out;
  out.survivors = std::make_unique<UlfmControl>(std::move(shrunk.comm));
  out.lost = std::move(shrunk.lost_members);
  return out;
}

// Point-to-point on this communicator (ulfm_subset_control.hpp says why
// not a communicator of the subset's own): made at once, without a message.
std::unique_ptr<Control> UlfmControl::subset(const SubsetSpec& spec, std::string& error) {
  for (int r : spec.ranks)
    if (r < 0 || r >= size_) {
      error = "rank " + std::to_string(r) + " is not in the group";
      return nullptr;
    }
  return std::make_unique<UlfmSubsetControl>(comm_.share(), spec.ranks, spec.node_keys,
                                             UlfmSubsetControl::first_tag(comm(), spec.identity),
                                             spec.identity, spec.timeout_seconds);
}

// Ranks sharing a node, from MPI (not from host names, which two "nodes" of
// one machine may share). MPI_Comm_split_type makes a communicator, which
// costs collectives on a context id among all ranks: only a first epoch and
// a Grow pay it, and neither when the processes know their node's host
// (a job with spares: SparePool::host).
std::optional<int> UlfmControl::node_key() {
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(comm(), MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return std::nullopt;
  ulfm::CommHandle node_comm(node);
  ulfm::GroupHandle node_group, group;
  MPI_Comm_group(node, node_group.out());
  MPI_Comm_group(comm(), group.out());
  int first = 0, key = -1;
  MPI_Group_translate_ranks(node_group.get(), 1, &first, group.get(), &key);
  return key;
}

MPI_Comm mpi_comm_of(const Control& control) {
  const auto* ulfm = dynamic_cast<const UlfmControl*>(&control);
  return ulfm ? ulfm->comm() : MPI_COMM_NULL;
}

}  // namespace ringmend::membership
