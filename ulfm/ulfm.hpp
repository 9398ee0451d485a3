// ulfm/ — the fault-tolerant MPI layer.
//
// What this folder offers the runtime:
//   * FailureMonitor: notices, without blocking, that a process of the control
//     communicator failed or that the communicator was revoked. Every
//     data-plane wait polls it.
//   * shrink_membership(): the recovery step — revoke, shrink, agree — that
//     leaves every survivor with the same new communicator and failed set.
//   * ft_mpirun_args(): the one list of mpirun arguments that turns ULFM on.
//   * fault_tolerance_enabled(): whether this MPI job runs with ULFM on.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ulfm/mpi_handles.hpp"

namespace ringmend::ulfm {

// mpirun arguments enabling ULFM (see ulfm/ft_mpirun_args.txt).
std::vector<std::string> ft_mpirun_args();

// True when the library was built against a ULFM MPI and the job was launched
// with fault tolerance on (MPIX_FT attribute where the MPI exposes it).
bool fault_tolerance_enabled();

// Human-readable text for an MPI error code.
std::string error_string(int code);

// True for the error classes that mean "a process failed or the communicator
// was revoked": the signal to start recovery.
bool is_failure_error(int code);
// True for the class that means "the peer of this operation failed" (not a
// revoked communicator).
bool is_process_failure(int code);

// Watches a control communicator for process failures and revocation.
//
// Keeps one receive from MPI_ANY_SOURCE posted on the communicator with a
// tag nobody sends on. ULFM completes that request with an error as soon as
// any process of the communicator fails (MPIX_ERR_PROC_FAILED[_PENDING]) or
// the communicator is revoked (MPIX_ERR_REVOKED), so testing it is a cheap,
// non-blocking failure check that also drives MPI's progress engine.
class FailureMonitor {
 public:
  FailureMonitor() = default;
  explicit FailureMonitor(MPI_Comm comm);
  ~FailureMonitor();
  FailureMonitor(const FailureMonitor&) = delete;
  FailureMonitor& operator=(const FailureMonitor&) = delete;

  // Non-blocking. Returns true once a failure or revocation has been seen
  // (and keeps returning true until the monitor is re-armed).
  bool failure_noticed();

  // Stops watching (cancels the posted receive).
  void disarm();
  // Watches again from now (after the failures seen were acknowledged).
  void rearm();

 private:
  static constexpr int kNeverSentTag = 0x7ead;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Request request_ = MPI_REQUEST_NULL;
  int buffer_ = 0;
  bool noticed_ = false;
};

// Outcome of one shrink.
struct ShrinkOutcome {
  CommHandle comm;                // the survivors' communicator
  std::vector<int> lost_members;  // ranks of the *old* communicator that failed
};

// The survivors of `comm`, without revoking it (start-up: MPI_COMM_WORLD
// stays usable to the application). Every survivor gets the same
// communicator and the same lost set; `rc` is the shrink's MPI error code.
ShrinkOutcome shrink(MPI_Comm comm, int& rc);

// Revokes `comm` (idempotent) and shrinks it to the survivors. Every survivor
// gets the same communicator and the same lost set. Returns the MPI error
// code of the shrink in `rc` (MPI_SUCCESS when it worked).
ShrinkOutcome revoke_and_shrink(MPI_Comm comm, int& rc);

// The rank in `parent` of each rank of `comm` (a communicator made from it).
std::vector<int> ranks_in(MPI_Comm comm, MPI_Comm parent);

// Whether `comm` has been revoked (by any process).
bool is_revoked(MPI_Comm comm);

// Revokes a communicator (no-op without ULFM).
void revoke(MPI_Comm comm);

// Fault-tolerant agreement: `flag` becomes the bitwise AND over all live
// processes. Returns the MPI error code, which ULFM makes uniform.
int agree(MPI_Comm comm, int& flag);

// The same agreement for a process with nothing else to do while others
// still work before joining it: it sleeps between tests of a non-blocking
// agreement instead of spinning in MPI's progress loop, which on an
// oversubscribed machine takes the CPU from the ones still working.
int agree_sleeping(MPI_Comm comm, int& flag);

// Non-blocking agreement (MPIX_Comm_iagree) on an all-ones flag that gives
// up when `stop()` returns true. Returns true when the agreement completed;
// `success` then says whether it completed without error.
bool agree_while(MPI_Comm comm, const std::function<bool()>& stop, bool& success);

// Drives MPI's progress engine once (a probe on `comm`), for a process that
// otherwise only sleeps.
void progress(MPI_Comm comm);

// Acknowledges the failures of `comm` noticed so far, so that a receive
// from MPI_ANY_SOURCE (a FailureMonitor posted afterwards) no longer fails
// for them: a waiting spare goes on waiting when another one dies.
void ack_failures(MPI_Comm comm);

// The failed processes of `comm` that the local process knows about
// (MPIX_Comm_get_failed), as ranks of `comm`. Diagnostic only.
std::vector<int> known_failed(MPI_Comm comm);

}  // namespace ringmend::ulfm
