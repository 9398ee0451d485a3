#include "membership/ulfm_control.hpp"

#include "membership/address_exchange.hpp"
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

// MPI_Comm_create_group: collective over the subset only (the other ranks
// of this communicator may be anywhere), and it fails, rather than waits,
// when one of them died (ULFM).
std::unique_ptr<Control> UlfmControl::subset(const std::vector<int>& ranks, int tag, std::string& error) {
  ulfm::GroupHandle all, some;
  MPI_Comm_group(comm(), all.out());
  if (int rc = MPI_Group_incl(all.get(), static_cast<int>(ranks.size()), ranks.data(), some.out());
      rc != MPI_SUCCESS) {
    error = "MPI_Group_incl: " + ulfm::error_string(rc);
    return nullptr;
  }
  MPI_Comm made = MPI_COMM_NULL;
  if (int rc = MPI_Comm_create_group(comm(), some.get(), tag, &made); rc != MPI_SUCCESS) {
    error = "MPI_Comm_create_group: " + ulfm::error_string(rc);
    return nullptr;
  }
  return std::make_unique<UlfmControl>(ulfm::CommHandle(made));
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
