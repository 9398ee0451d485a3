// Recovery primitives over ULFM: revoke, shrink, agree, failed-set queries.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <thread>

#include "ulfm/ulfm.hpp"

#if RINGMEND_HAVE_ULFM
#include <mpi-ext.h>
#endif

namespace ringmend::ulfm {

bool fault_tolerance_enabled() {
#if RINGMEND_HAVE_ULFM
  int* value = nullptr;
  int found = 0;
  if (MPI_Comm_get_attr(MPI_COMM_WORLD, MPIX_FT, &value, &found) == MPI_SUCCESS && found && value != nullptr)
    return *value != 0;
  return false;
#else
  return false;
#endif
}

std::string error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(len));
}

bool is_failure_error(int code) {
#if RINGMEND_HAVE_ULFM
  int cls = 0;
  MPI_Error_class(code, &cls);
  return cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_PROC_FAILED_PENDING || cls == MPIX_ERR_REVOKED;
#else
  (void)code;
  return false;
#endif
}

bool is_process_failure(int code) {
#if RINGMEND_HAVE_ULFM
  int cls = 0;
  MPI_Error_class(code, &cls);
  return cls == MPIX_ERR_PROC_FAILED;
#else
  (void)code;
  return false;
#endif
}

bool is_revoked(MPI_Comm comm) {
#if RINGMEND_HAVE_ULFM
  int flag = 0;
  return comm != MPI_COMM_NULL && MPIX_Comm_is_revoked(comm, &flag) == MPI_SUCCESS && flag;
#else
  (void)comm;
  return false;
#endif
}

void revoke(MPI_Comm comm) {
#if RINGMEND_HAVE_ULFM
  if (comm != MPI_COMM_NULL) MPIX_Comm_revoke(comm);
#else
  (void)comm;
#endif
}

int agree(MPI_Comm comm, int& flag) {
#if RINGMEND_HAVE_ULFM
  return MPIX_Comm_agree(comm, &flag);
#else
  int out = 0;
  int rc = MPI_Allreduce(&flag, &out, 1, MPI_INT, MPI_BAND, comm);
  flag = out;
  return rc;
#endif
}

int agree_sleeping(MPI_Comm comm, int& flag) {
#if RINGMEND_HAVE_ULFM
  MPI_Request req = MPI_REQUEST_NULL;
  if (int rc = MPIX_Comm_iagree(comm, &flag, &req); rc != MPI_SUCCESS) return rc;
  // The sleeps grow from 50 us to 1 ms: a process that waits long (for a
  // large transfer between others) wakes up rarely and leaves the CPUs to
  // them; one that waits briefly still answers within tens of microseconds.
  auto nap = std::chrono::microseconds(50);
  for (;;) {
    int done = 0;
    const int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done || rc != MPI_SUCCESS) return rc;
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(1000));
  }
#else
  return agree(comm, flag);
#endif
}

bool agree_while(MPI_Comm comm, const std::function<bool()>& stop, bool& success) {
  success = false;
#if RINGMEND_HAVE_ULFM
  static int flag;  // must outlive an abandoned request
  flag = 1;
  MPI_Request req = MPI_REQUEST_NULL;
  if (MPIX_Comm_iagree(comm, &flag, &req) != MPI_SUCCESS) return true;
  for (;;) {
    int done = 0;
    int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done || rc != MPI_SUCCESS) {
      success = rc == MPI_SUCCESS;
      return true;
    }
    if (stop()) return false;  // the request is left behind with the revoked communicator
  }
#else
  (void)stop;
  success = MPI_Barrier(comm) == MPI_SUCCESS;
  return true;
#endif
}

ShrinkOutcome shrink(MPI_Comm comm, int& rc) {
  ShrinkOutcome out;
#if RINGMEND_HAVE_ULFM
  MPI_Comm shrunk = MPI_COMM_NULL;
  rc = MPIX_Comm_shrink(comm, &shrunk);
  if (rc != MPI_SUCCESS) return out;
  out.comm = CommHandle(shrunk);
  MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);

  // The lost set is the old group minus the new one. Shrink agrees on the
  // new group, so every survivor computes the same set.
  GroupHandle old_group, new_group;
  MPI_Comm_group(comm, old_group.out());
  MPI_Comm_group(shrunk, new_group.out());
  int old_size = 0;
  MPI_Group_size(old_group.get(), &old_size);
  std::vector<int> old_ranks(static_cast<size_t>(old_size));
  std::iota(old_ranks.begin(), old_ranks.end(), 0);
  std::vector<int> in_new(old_ranks.size());
  MPI_Group_translate_ranks(old_group.get(), old_size, old_ranks.data(), new_group.get(), in_new.data());
  for (int r = 0; r < old_size; ++r)
    if (in_new[static_cast<size_t>(r)] == MPI_UNDEFINED) out.lost_members.push_back(r);
#else
  (void)comm;
  rc = MPI_ERR_UNSUPPORTED_OPERATION;
#endif
  return out;
}

ShrinkOutcome revoke_and_shrink(MPI_Comm comm, int& rc) {
  revoke(comm);
  return shrink(comm, rc);
}

std::vector<int> ranks_in(MPI_Comm comm, MPI_Comm parent) {
  GroupHandle group, parent_group;
  MPI_Comm_group(comm, group.out());
  MPI_Comm_group(parent, parent_group.out());
  int n = 0;
  MPI_Group_size(group.get(), &n);
  std::vector<int> idx(static_cast<size_t>(n)), ranks(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  MPI_Group_translate_ranks(group.get(), n, idx.data(), parent_group.get(), ranks.data());
  return ranks;
}

void progress(MPI_Comm comm) {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, 0x7eae, comm, &flag, MPI_STATUS_IGNORE);
}

void ack_failures(MPI_Comm comm) {
#if RINGMEND_HAVE_ULFM && defined(OMPI_HAVE_MPIX_COMM_ACK_FAILED)
  int acked = 0;
  MPIX_Comm_ack_failed(comm, INT32_MAX, &acked);
#elif RINGMEND_HAVE_ULFM
  MPIX_Comm_failure_ack(comm);
#else
  (void)comm;
#endif
}

std::vector<int> known_failed(MPI_Comm comm) {
  std::vector<int> ranks;
#if RINGMEND_HAVE_ULFM && defined(OMPI_HAVE_MPIX_COMM_GET_FAILED)
  GroupHandle failed, all;
  if (MPIX_Comm_get_failed(comm, failed.out()) != MPI_SUCCESS) return ranks;
  int n = 0;
  MPI_Group_size(failed.get(), &n);
  std::vector<int> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  ranks.resize(static_cast<size_t>(n));
  MPI_Comm_group(comm, all.out());
  MPI_Group_translate_ranks(failed.get(), n, idx.data(), all.get(), ranks.data());
  std::sort(ranks.begin(), ranks.end());
#else
  (void)comm;
#endif
  return ranks;
}

}  // namespace ringmend::ulfm
