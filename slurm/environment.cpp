#include "slurm/environment.hpp"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <set>

#include "slurm/hostlist.hpp"

namespace ringmend::slurm {
namespace {

// Special step ids (Slurm's SLURM_MAX_NORMAL_STEP_ID and up): the batch
// script, the extern step and the interactive step of salloc.
constexpr unsigned long long kMaxNormalStepId = 0xfffffff0ULL;

const char* first_set(const EnvLookup& env, std::initializer_list<const char*> names, const char** which) {
  for (const char* n : names) {
    const char* v = env(n);
    if (v) {
      *which = n;
      return v;
    }
  }
  *which = *names.begin();
  return nullptr;
}

int to_int(const char* name, const char* value, int min) {
  const std::string_view v(value);
  long long out = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || out < min || out > std::numeric_limits<int>::max())
    throw EnvironmentError(std::string(name) + "='" + std::string(v) + "' is not a whole number" +
                           (min > 0 ? " of at least " + std::to_string(min) : std::string(" >= 0")));
  return static_cast<int>(out);
}

std::vector<int> counts(const char* name, const char* value) {
  try {
    return expand_counts(value);
  } catch (const ParseError& e) {
    throw EnvironmentError(std::string(name) + ": " + e.what());
  }
}

bool normal_step(const char* step) {
  if (!step) return false;
  const std::string_view v(step);
  unsigned long long id = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), id);
  return ec == std::errc() && ptr == v.data() + v.size() && id < kMaxNormalStepId;
}

}  // namespace

EnvLookup process_environment() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

int Allocation::total_slots() const {
  long long n = 0;
  for (int s : slots) n += s;
  return n > std::numeric_limits<int>::max() ? std::numeric_limits<int>::max() : static_cast<int>(n);
}

SlurmEnvironment read_slurm_environment(const EnvLookup& env) {
  SlurmEnvironment out;
  const char* which = nullptr;

  const char* step = first_set(env, {"SLURM_STEP_ID", "SLURM_STEPID"}, &which);
  if (normal_step(step)) {
    StepTask t;
    t.step_id = step;
    if (const char* v = env("SLURM_PROCID")) t.procid = to_int("SLURM_PROCID", v, 0);
    if (const char* v = env("SLURM_LOCALID")) t.localid = to_int("SLURM_LOCALID", v, 0);
    if (const char* v = env("SLURM_NODEID")) t.nodeid = to_int("SLURM_NODEID", v, 0);
    if (const char* v = env("SLURM_STEP_NUM_TASKS")) t.step_tasks = to_int("SLURM_STEP_NUM_TASKS", v, 0);
    if (const char* v = env("SLURMD_NODENAME")) t.node_name = v;
    out.task = t;
  }

  const char* job = first_set(env, {"SLURM_JOB_ID", "SLURM_JOBID"}, &which);
  if (!job) return out;
  Allocation a;
  a.job_id = job;
  if (a.job_id.empty()) throw EnvironmentError("SLURM_JOB_ID is set but empty");

  const char* nodelist_name = nullptr;
  const char* nodelist = first_set(env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}, &nodelist_name);
  if (!nodelist)
    throw EnvironmentError("SLURM_JOB_ID=" + a.job_id +
                           " is set but SLURM_JOB_NODELIST is not: cannot tell which nodes the job has");
  try {
    a.nodes = expand_hostlist(nodelist);
  } catch (const ParseError& e) {
    throw EnvironmentError(std::string(nodelist_name) + ": " + e.what());
  }
  if (a.nodes.empty()) throw EnvironmentError(std::string(nodelist_name) + " is empty");
  std::set<std::string> seen;
  for (const auto& n : a.nodes)
    if (!seen.insert(n).second)
      throw EnvironmentError(std::string(nodelist_name) + "='" + nodelist + "' names node " + n + " twice");

  if (const char* v = env("SLURM_CPUS_PER_TASK")) a.cpus_per_task = to_int("SLURM_CPUS_PER_TASK", v, 1);
  if (const char* v = first_set(env, {"SLURM_NTASKS", "SLURM_NPROCS"}, &which))
    a.ntasks = to_int(which, v, 0);
  if (const char* v = env("SLURM_JOB_CPUS_PER_NODE")) {
    a.cpus_per_node = counts("SLURM_JOB_CPUS_PER_NODE", v);
    if (a.cpus_per_node.size() != a.nodes.size())
      throw EnvironmentError("SLURM_JOB_CPUS_PER_NODE='" + std::string(v) + "' describes " +
                             std::to_string(a.cpus_per_node.size()) + " nodes, " + nodelist_name + "='" +
                             nodelist + "' has " + std::to_string(a.nodes.size()));
  }

  const char* tasks = out.task ? nullptr : env("SLURM_TASKS_PER_NODE");
  if (tasks) {
    a.slots = counts("SLURM_TASKS_PER_NODE", tasks);
    if (a.slots.size() != a.nodes.size())
      throw EnvironmentError("SLURM_TASKS_PER_NODE='" + std::string(tasks) + "' describes " +
                             std::to_string(a.slots.size()) + " nodes, " + nodelist_name + "='" + nodelist +
                             "' has " + std::to_string(a.nodes.size()));
    a.slots_source = "SLURM_TASKS_PER_NODE=" + std::string(tasks);
  } else if (!a.cpus_per_node.empty()) {
    for (int c : a.cpus_per_node) a.slots.push_back(c / a.cpus_per_task);
    a.slots_source = "SLURM_JOB_CPUS_PER_NODE=" + std::string(env("SLURM_JOB_CPUS_PER_NODE")) +
                     " / SLURM_CPUS_PER_TASK=" + std::to_string(a.cpus_per_task);
  } else {
    throw EnvironmentError("SLURM_JOB_ID=" + a.job_id +
                           " is set but neither SLURM_TASKS_PER_NODE nor SLURM_JOB_CPUS_PER_NODE is: "
                           "cannot tell how many tasks each node may run");
  }
  out.allocation = std::move(a);
  return out;
}

Launcher detect_launcher(const EnvLookup& env) {
  // PRRTE marks the processes it starts; Open MPI's mpirun sets the
  // OMPI_COMM_WORLD_* variables. Both hold under Slurm too, where the PRRTE
  // daemons are themselves srun tasks.
  if (env("PRTE_LAUNCHED") || env("OMPI_COMM_WORLD_SIZE")) return Launcher::Mpirun;
  const char* step = env("SLURM_STEP_ID");
  if (!step) step = env("SLURM_STEPID");
  if (normal_step(step) && env("SLURM_PROCID")) return Launcher::Srun;
  return Launcher::Unknown;
}

std::string srun_no_fault_tolerance_notice() {
  return "fault tolerance OFF: started by srun (Slurm direct launch). Slurm ends the whole job step when one "
         "rank dies, so the survivors could not carry on. For fault tolerance, start the job with "
         "ringmend-run "
         "(mpirun with ULFM) from the batch script or the salloc shell: 'ringmend-run ./app' instead of "
         "'srun ./app'. In this job a rank failure will end the job";
}

std::string srun_without_pmix_notice(const EnvLookup& env, int mpi_world_size) {
  if (detect_launcher(env) != Launcher::Srun || mpi_world_size != 1) return {};
  // Every task is a world of its own then; the first one speaks for the step.
  if (const char* procid = env("SLURM_PROCID"); !procid || std::string_view(procid) != "0") return {};
  const char* n = env("SLURM_STEP_NUM_TASKS");
  if (!n) n = env("SLURM_NTASKS");
  if (!n) return {};
  const std::string_view v(n);
  int tasks = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), tasks);
  if (ec != std::errc() || ptr != v.data() + v.size() || tasks <= 1) return {};
  return "srun started " + std::to_string(tasks) +
         " tasks, but MPI sees a world of 1: srun gave Open MPI no PMIx server, so every task runs alone. "
         "Launch with 'srun --mpi=pmix' (or ask for MpiDefault=pmix in slurm.conf), or use ringmend-run";
}

}  // namespace ringmend::slurm
