#include "slurm/environment.hpp"

#include <cstdlib>
#include <limits>
#include <set>

#include "ringmend/core/parse_whole.hpp"
#include "slurm/hostlist.hpp"
#include "ulfm/launch_environment.hpp"

namespace ringmend::slurm {
namespace {

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
  const auto out = parse_whole<long long>(value);
  if (!out || *out < min || *out > std::numeric_limits<int>::max())
    throw EnvironmentError(std::string(name) + "='" + value + "' is not a whole number" +
                           (min > 0 ? " of at least " + std::to_string(min) : std::string(" >= 0")));
  return static_cast<int>(*out);
}

std::vector<int> counts(const char* name, const char* value) {
  try {
    return expand_counts(value);
  } catch (const ParseError& e) {
    throw EnvironmentError(std::string(name) + ": " + e.what());
  }
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
  if (ulfm::is_slurm_job_step(step)) {
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

}  // namespace ringmend::slurm
