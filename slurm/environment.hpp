// The job's geometry as Slurm describes it in SLURM_* environment variables,
// and how the current process was launched.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ringmend::slurm {

// Looks up an environment variable; nullptr when it is unset. The real
// environment in production, a map in tests.
using EnvLookup = std::function<const char*(const char*)>;
EnvLookup process_environment();

// A SLURM_* variable is missing, malformed or inconsistent with another.
// what() names the variable(s) and the value.
class EnvironmentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The allocation (salloc, sbatch): what the job may use.
struct Allocation {
  std::string job_id;              // SLURM_JOB_ID
  std::vector<std::string> nodes;  // SLURM_JOB_NODELIST, expanded, in Slurm's order
  std::vector<int> slots;          // task slots of each node (same order)
  std::string slots_source;        // the variable the slots came from, with its value
  std::vector<int> cpus_per_node;  // SLURM_JOB_CPUS_PER_NODE (empty when unset)
  int cpus_per_task = 1;           // SLURM_CPUS_PER_TASK
  int ntasks = 0;                  // SLURM_NTASKS (0 when unset)

  int total_slots() const;
};

// This process as a task of a job step (started by srun, or by a daemon
// that srun started). Not set in the batch script itself, nor in the
// interactive or extern steps, which are where a launcher is meant to run.
struct StepTask {
  std::string step_id;    // SLURM_STEP_ID
  int procid = -1;        // SLURM_PROCID: rank of the task in the step
  int localid = -1;       // SLURM_LOCALID: rank among the step's tasks on this node
  int nodeid = -1;        // SLURM_NODEID: index of this node in the allocation
  int step_tasks = 0;     // SLURM_STEP_NUM_TASKS (0 when unset)
  std::string node_name;  // SLURMD_NODENAME
};

struct SlurmEnvironment {
  std::optional<Allocation> allocation;  // set inside salloc/sbatch (SLURM_JOB_ID)
  std::optional<StepTask> task;          // set inside a job step
};

// Reads the SLURM_* variables. Outside Slurm both parts are empty. Throws
// EnvironmentError (or ParseError from the list parsers, wrapped with the
// variable's name) when they are there but cannot be trusted.
//
// Slots per node come from SLURM_TASKS_PER_NODE (as for Open MPI's own
// Slurm support); inside a step that variable describes the step, so the
// allocation's SLURM_JOB_CPUS_PER_NODE / SLURM_CPUS_PER_TASK is used instead.
SlurmEnvironment read_slurm_environment(const EnvLookup& env = process_environment());

}  // namespace ringmend::slurm
