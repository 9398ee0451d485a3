// RAII owners for the MPI handles ringmend creates.
#pragma once

#include <mpi.h>

#include <utility>

namespace ringmend::ulfm {

// Owns a communicator; frees it on destruction. Freeing a revoked
// communicator is allowed by ULFM and completes locally.
class CommHandle {
 public:
  CommHandle() = default;
  explicit CommHandle(MPI_Comm c) : comm_(c) {}
  ~CommHandle() { reset(); }
  CommHandle(const CommHandle&) = delete;
  CommHandle& operator=(const CommHandle&) = delete;
  CommHandle(CommHandle&& o) noexcept : comm_(std::exchange(o.comm_, MPI_COMM_NULL)) {}
  CommHandle& operator=(CommHandle&& o) noexcept {
    if (this != &o) {
      reset();
      comm_ = std::exchange(o.comm_, MPI_COMM_NULL);
    }
    return *this;
  }
  MPI_Comm get() const { return comm_; }
  explicit operator bool() const { return comm_ != MPI_COMM_NULL; }
  void reset() {
    if (comm_ != MPI_COMM_NULL) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Comm_free(&comm_);
      comm_ = MPI_COMM_NULL;
    }
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// Owns a group.
class GroupHandle {
 public:
  GroupHandle() = default;
  explicit GroupHandle(MPI_Group g) : group_(g) {}
  ~GroupHandle() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (group_ != MPI_GROUP_NULL && !finalized) MPI_Group_free(&group_);
  }
  GroupHandle(const GroupHandle&) = delete;
  GroupHandle& operator=(const GroupHandle&) = delete;
  MPI_Group get() const { return group_; }
  MPI_Group* out() { return &group_; }

 private:
  MPI_Group group_ = MPI_GROUP_NULL;
};

}  // namespace ringmend::ulfm
