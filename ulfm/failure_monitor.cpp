#include "ulfm/ulfm.hpp"

namespace ringmend::ulfm {

FailureMonitor::FailureMonitor(MPI_Comm comm) : comm_(comm) { rearm(); }

void FailureMonitor::rearm() {
  disarm();
  noticed_ = false;
  int rc = MPI_Irecv(&buffer_, 1, MPI_INT, MPI_ANY_SOURCE, kNeverSentTag, comm_, &request_);
  if (rc != MPI_SUCCESS) {
    // Posting fails only on a communicator that is already revoked or has
    // known failures: that is a failure notice in itself.
    request_ = MPI_REQUEST_NULL;
    noticed_ = true;
  }
}

FailureMonitor::~FailureMonitor() { disarm(); }

bool FailureMonitor::failure_noticed() {
  if (noticed_ || request_ == MPI_REQUEST_NULL) return noticed_;
  int done = 0;
  int rc = MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
  // Any completion is a notice: an error (failure or revocation) or, should a
  // message ever arrive on the private tag, a peer asking us to recover.
  if (rc != MPI_SUCCESS || done) noticed_ = true;
  return noticed_;
}

void FailureMonitor::disarm() {
  if (request_ == MPI_REQUEST_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    // Cancel and free without waiting: on a revoked communicator the request
    // may never complete normally, and this must not block.
    MPI_Cancel(&request_);
    MPI_Request_free(&request_);
  }
  request_ = MPI_REQUEST_NULL;
}

}  // namespace ringmend::ulfm
