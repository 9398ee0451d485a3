// How the processes of a job launched without mpirun find each other, once,
// at start-up: each process opens its control network, tells the others its
// record (membership/native/group.hpp) through the launcher, and reads
// theirs. After that the launcher's rendezvous is not used again: losing
// it (a Slurm step daemon on a lost node) costs nothing.
//
// Under `srun --mpi=pmix` the rendezvous is Slurm's PMIx server: one put,
// one fence that collects, one get per process, then PMIx_Finalize. The
// control network listens on this node's address (control_ip(),
// control_net.hpp).
#pragma once

#include <memory>
#include <string>

#include "membership/native/group.hpp"

namespace ringmend::membership::native {

// Whether this process was started by a launcher with a PMIx server
// (PMIX_NAMESPACE in the environment: srun --mpi=pmix, or PRRTE).
bool pmix_available();

// The group of every process of this PMIx namespace, view 0, member id =
// PMIx rank. Throws std::runtime_error with the reason when PMIx fails.
std::unique_ptr<Group> join_from_pmix(const GroupSettings& settings, const std::string& interface);

}  // namespace ringmend::membership::native
