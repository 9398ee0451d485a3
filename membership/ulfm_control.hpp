// The ULFM backend of the control group (control.hpp): an MPI communicator
// under mpirun with ULFM. Also what a job without fault tolerance uses (a
// plain communicator: a failure then ends the job, as MPI decides).
#pragma once

#include <mpi.h>

#include <memory>

#include "membership/control.hpp"
#include "ulfm/ulfm.hpp"

namespace ringmend::membership {

class UlfmControl final : public Control {
 public:
  explicit UlfmControl(ulfm::CommHandle comm);
  // The first members: the live processes of `world` (a shrink, with fault
  // tolerance: MPI_Comm_dup fails on some ranks only when a process died
  // during MPI_Init), or a duplicate of it. Throws Error(Internal).
  static std::unique_ptr<UlfmControl> first_members(MPI_Comm world, bool fault_tolerant);

  MPI_Comm comm() const { return comm_.get(); }
  const ulfm::CommHandle& handle() const { return comm_; }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<int> world_ranks() const override;
  const char* backend() const override { return "ULFM"; }
  void watch() override;
  void unwatch() override { monitor_.reset(); }
  bool failure_noticed() override { return monitor_ && monitor_->failure_noticed(); }
  void revoke() override { ulfm::revoke(comm()); }
  bool revoked() override { return ulfm::is_revoked(comm()); }
  bool agree(int& flag, bool sleeping) override;
  bool agree_unless_revoked() override;
  bool uniform_outcomes() const override { return true; }
  bool allgather(const void* mine, std::size_t bytes, void* all) override;
  bool exchange(const std::vector<int>& peers, const std::vector<std::byte>& mine,
                std::vector<std::vector<std::byte>>& theirs) override;
  bool barrier() override { return MPI_Barrier(comm()) == MPI_SUCCESS; }
  std::optional<Shrunk> shrink(std::string& error) override;
  std::unique_ptr<Control> subset(const SubsetSpec& spec, std::string& error) override;
  std::optional<int> node_key() override;
  std::vector<int> known_failed() override { return ulfm::known_failed(comm()); }

 private:
  ulfm::CommHandle comm_;
  int rank_ = 0, size_ = 0;
  std::unique_ptr<ulfm::FailureMonitor> monitor_;
};

// The communicator of a group of the ULFM backend; MPI_COMM_NULL for any
// other backend (the spare pool and the GPU exchange use MPI directly).
MPI_Comm mpi_comm_of(const Control& control);

}  // namespace ringmend::membership
