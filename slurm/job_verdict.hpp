// The verdict over a job from its ranks' records (job_outcome.hpp):
// ringmend-run's summary and its exit status. The exit status follows the
// first rule of a table that applies (job_verdict.cpp, kExitRules).
#pragma once

#include <string>
#include <vector>

#include "slurm/job_outcome.hpp"

namespace ringmend::slurm {

struct JudgeOptions {
  int ranks_started = 0;                  // as many ranks as mpirun was asked for (0: unknown)
  int mpirun_status = 0;                  // mpirun's own exit status
  bool fail_on_loss = false;              // any lost rank fails the job
  double job_start = 0;                   // seconds since the epoch, for "when"
  double job_end = 0;                     // when mpirun exited (0: unknown)
  std::vector<std::string> member_hosts;  // the node each member was placed on (empty: unknown)
  std::vector<std::string> lost_nodes;    // nodes whose MPI daemon was lost (lost_daemon_node)
  bool step_ended_by_pmix = false;        // Slurm's PMIx plugin ended the step (pmix_plugin_ends_step)
};
struct Verdict {
  int exit_status = 0;
  std::vector<std::string> lines;  // the summary, one line each, without a prefix
};
Verdict judge(std::vector<RankRecord> records, const JudgeOptions& options);

}  // namespace ringmend::slurm
