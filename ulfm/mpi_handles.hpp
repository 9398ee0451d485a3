// RAII owners for the MPI handles ringmend creates.
#pragma once

#include <mpi.h>

#include <memory>
#include <utility>

namespace ringmend::ulfm {

// Owns a communicator; frees it when its last owner goes (share() makes
// another owner: the spare pool lends its communicator to an epoch that
// admitted every spare, so that no new one has to be agreed on). Freeing a
// revoked communicator is allowed by ULFM and completes locally.
class CommHandle {
 public:
  CommHandle() = default;
  explicit CommHandle(MPI_Comm c) : owner_(c == MPI_COMM_NULL ? nullptr : std::make_shared<Owner>(c)) {}
  CommHandle(const CommHandle&) = delete;
  CommHandle& operator=(const CommHandle&) = delete;
  CommHandle(CommHandle&&) noexcept = default;
  CommHandle& operator=(CommHandle&&) noexcept = default;
  ~CommHandle() = default;
  MPI_Comm get() const { return owner_ ? owner_->comm : MPI_COMM_NULL; }
  explicit operator bool() const { return owner_ != nullptr; }
  void reset() { owner_.reset(); }
  CommHandle share() const {
    CommHandle other;
    other.owner_ = owner_;
    return other;
  }

 private:
  struct Owner {
    explicit Owner(MPI_Comm c) : comm(c) {}
    ~Owner() {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Comm_free(&comm);
    }
    Owner(const Owner&) = delete;
    Owner& operator=(const Owner&) = delete;
    MPI_Comm comm;
  };
  std::shared_ptr<Owner> owner_;
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
