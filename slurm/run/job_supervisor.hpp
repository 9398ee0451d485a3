// Runs the job's launcher (mpirun or srun) with its stderr through this
// process, which takes the rank records out of it (job_outcome.hpp), passes
// everything else on, forwards signals, ends a srun that waits for a lost
// node, and finally prints the summary and gives the job's exit status.
#pragma once

#include <string>
#include <vector>

namespace ringmend::slurm::run {

struct Job {
  std::vector<std::string> command;       // the launcher's command line
  int ranks = 0;                          // processes started (0: unknown)
  std::vector<std::string> member_hosts;  // member i's node, when known
  bool srun = false;                      // launched as a Slurm step
  bool fail_on_loss = false;              // --fail-on-loss
  std::string exclude_file;               // a lost node is added to it
};

// Runs `job` to its end; returns the exit status ringmend-run gives.
int supervise(const Job& job);

}  // namespace ringmend::slurm::run
