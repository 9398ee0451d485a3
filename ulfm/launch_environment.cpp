#include "ulfm/launch_environment.hpp"

#include <cstdlib>
#include <optional>
#include <string_view>

#include "ringmend/core/parse_whole.hpp"

namespace ringmend::ulfm {
namespace {

// Special step ids (Slurm's SLURM_MAX_NORMAL_STEP_ID and up): the batch
// script, the extern step and the interactive step of salloc.
constexpr unsigned long long kMaxNormalStepId = 0xfffffff0ULL;

// Entry `index` of a Slurm count list ("2(x3),1": 2 2 2 1); nullopt for
// anything else. (The Slurm tools' full parser, with its messages, is
// slurm::expand_counts; the runtime below it needs only this lookup, and
// a list it cannot read leaves the local size unknown.)
std::optional<int> slurm_count_at(std::string_view list, unsigned index) {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    unsigned repeat = 1;
    if (const std::size_t open = item.find("(x"); open != std::string_view::npos) {
      if (item.back() != ')') return std::nullopt;
      const auto r = parse_whole<unsigned>(item.substr(open + 2, item.size() - open - 3));
      if (!r || *r == 0) return std::nullopt;
      repeat = *r;
      item = item.substr(0, open);
    }
    const auto count = parse_whole<int>(item);
    if (!count || *count < 0) return std::nullopt;
    if (index < repeat) return count;
    index -= repeat;
  }
  return std::nullopt;
}

}  // namespace

EnvLookup process_environment() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

bool is_slurm_job_step(const char* step) {
  const auto id = parse_whole<unsigned long long>(step);
  return id && *id < kMaxNormalStepId;
}

Launcher detect_launcher(const EnvLookup& env) {
  // PRRTE marks the processes it starts; Open MPI's mpirun sets the
  // OMPI_COMM_WORLD_* variables. Both hold under Slurm too, where the PRRTE
  // daemons are themselves srun tasks.
  if (env("PRTE_LAUNCHED") || env("OMPI_COMM_WORLD_SIZE")) return Launcher::Mpirun;
  const char* step = env("SLURM_STEP_ID");
  if (!step) step = env("SLURM_STEPID");
  if (is_slurm_job_step(step) && env("SLURM_PROCID")) return Launcher::Srun;
  return Launcher::Unknown;
}

std::string srun_no_fault_tolerance_notice() {
  return "fault tolerance OFF: started by srun on MPI alone (RINGMEND_MEMBERSHIP=mpi, or the application "
         "started MPI itself). While MPI is connected to Slurm's PMIx server, Slurm ends the whole job step "
         "when one rank dies, so the survivors could not carry on. For fault tolerance under srun, let "
         "ringmend start (it then runs on its own membership without MPI; docs/slurm.md), or start the job "
         "with ringmend-run. In this job a rank failure will end the job";
}

std::string srun_without_pmix_notice(const EnvLookup& env, int mpi_world_size) {
  if (detect_launcher(env) != Launcher::Srun || mpi_world_size != 1) return {};
  // Every task is a world of its own then; the first one speaks for the step.
  if (const char* procid = env("SLURM_PROCID"); !procid || std::string_view(procid) != "0") return {};
  const char* n = env("SLURM_STEP_NUM_TASKS");
  if (!n) n = env("SLURM_NTASKS");
  const auto tasks = parse_whole<int>(n);
  if (!tasks || *tasks <= 1) return {};
  return "srun started " + std::to_string(*tasks) +
         " tasks, but MPI sees a world of 1: srun gave Open MPI no PMIx server, so every task runs alone. "
         "Launch with 'srun --mpi=pmix' (or ask for MpiDefault=pmix in slurm.conf), or use ringmend-run";
}

int launcher_local_rank(const EnvLookup& env) {
  for (const char* variable : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* v = env(variable)) {
      const auto local = parse_whole<unsigned>(v);
      return local && *local <= (1u << 20) ? static_cast<int>(*local) : -1;
    }
  return -1;
}

int launcher_local_size(const EnvLookup& env) {
  for (const char* variable : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = env(variable)) {
      const auto size = parse_whole<unsigned>(v);
      return size && *size >= 1 && *size <= (1u << 20) ? static_cast<int>(*size) : -1;
    }
  const char* tasks = env("SLURM_STEP_TASKS_PER_NODE");
  if (!tasks) tasks = env("SLURM_TASKS_PER_NODE");
  const auto node = parse_whole<unsigned>(env("SLURM_NODEID"));
  if (!tasks || !node) return -1;
  const auto size = slurm_count_at(tasks, *node);
  return size && *size >= 1 ? *size : -1;
}

bool mpi_should_yield_when_idle(const EnvLookup& env, unsigned machine_cpus) {
  if (env("OMPI_MCA_mpi_yield_when_idle")) return false;  // the user's choice stands
  const auto ranks = parse_whole<unsigned>(env("OMPI_COMM_WORLD_LOCAL_SIZE"));
  return ranks && machine_cpus > 0 && *ranks > machine_cpus;
}

std::vector<OpenMpiSetting> open_mpi_settings(const EnvLookup& env, unsigned machine_cpus) {
  std::vector<OpenMpiSetting> settings;
  if (!env("OMPI_MCA_mpi_event_tick_rate"))
    settings.push_back({"OMPI_MCA_mpi_event_tick_rate", kMpiEventTickRateMicroseconds});
  if (mpi_should_yield_when_idle(env, machine_cpus))
    settings.push_back({"OMPI_MCA_mpi_yield_when_idle", "1"});
  return settings;
}

std::optional<OpenMpiSetting> return_init_errors(const EnvLookup& env) {
  if (env("OMPI_MCA_mpi_initial_errhandler")) return std::nullopt;
  return OpenMpiSetting{"OMPI_MCA_mpi_initial_errhandler", kMpiInitialErrhandler};
}

}  // namespace ringmend::ulfm
