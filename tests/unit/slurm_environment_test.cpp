#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "slurm/environment.hpp"
#include "ulfm/launch_environment.hpp"

using namespace ringmend::slurm;
using ringmend::ulfm::detect_launcher;
using ringmend::ulfm::Launcher;
using ringmend::ulfm::launcher_local_rank;
using ringmend::ulfm::launcher_local_size;
using ringmend::ulfm::mpi_should_yield_when_idle;
using ringmend::ulfm::open_mpi_settings;
using ringmend::ulfm::return_init_errors;
using ringmend::ulfm::srun_no_fault_tolerance_notice;
using ringmend::ulfm::srun_without_pmix_notice;

namespace {
using Vars = std::map<std::string, std::string>;
EnvLookup lookup(const Vars& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}
// The variables of a batch script (sbatch -N 2 --ntasks-per-node=2), as Slurm 22.05 sets them.
Vars batch() {
  return {{"SLURM_JOB_ID", "104"},
          {"SLURM_JOB_NODELIST", "n[1-2]"},
          {"SLURM_TASKS_PER_NODE", "2(x2)"},
          {"SLURM_JOB_CPUS_PER_NODE", "1(x2)"},
          {"SLURM_NTASKS", "4"},
          {"SLURM_PROCID", "0"},
          {"SLURM_NODEID", "0"},
          {"SLURMD_NODENAME", "n1"}};
}
}  // namespace

TEST(SlurmEnvironment, OutsideSlurmThereIsNothing) {
  const auto e = read_slurm_environment(lookup({}));
  EXPECT_FALSE(e.allocation);
  EXPECT_FALSE(e.task);
  EXPECT_EQ(detect_launcher(lookup({})), Launcher::Unknown);
}

TEST(SlurmEnvironment, ReadsABatchJob) {
  const auto e = read_slurm_environment(lookup(batch()));
  ASSERT_TRUE(e.allocation);
  EXPECT_FALSE(e.task);  // the batch script is no step task
  EXPECT_EQ(e.allocation->job_id, "104");
  EXPECT_EQ(e.allocation->nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(e.allocation->slots, (std::vector<int>{2, 2}));
  EXPECT_EQ(e.allocation->total_slots(), 4);
  EXPECT_EQ(e.allocation->cpus_per_node, (std::vector<int>{1, 1}));
  EXPECT_EQ(e.allocation->ntasks, 4);
  EXPECT_EQ(e.allocation->cpus_per_task, 1);
  EXPECT_NE(e.allocation->slots_source.find("SLURM_TASKS_PER_NODE=2(x2)"), std::string::npos);
}

TEST(SlurmEnvironment, ReadsTheIssueExample) {
  Vars v{{"SLURM_JOB_ID", "7"},
         {"SLURM_JOB_NODELIST", "n[001-004,010],gpu[1-2]"},
         {"SLURM_TASKS_PER_NODE", "2(x3),1(x3),4"},
         {"SLURM_CPUS_PER_TASK", "4"}};
  const auto a = read_slurm_environment(lookup(v)).allocation;
  ASSERT_TRUE(a);
  EXPECT_EQ(a->nodes.size(), 7u);
  EXPECT_EQ(a->nodes[4], "n010");
  EXPECT_EQ(a->slots, (std::vector<int>{2, 2, 2, 1, 1, 1, 4}));
  EXPECT_EQ(a->cpus_per_task, 4);
}

TEST(SlurmEnvironment, StepTaskAndItsIds) {
  Vars v = batch();
  v.insert({{"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_LOCALID", "1"}});
  v["SLURM_PROCID"] = "3";
  v["SLURM_NODEID"] = "1";
  v["SLURMD_NODENAME"] = "n2";
  v["SLURM_TASKS_PER_NODE"] = "1";  // inside a step it describes the step
  const auto e = read_slurm_environment(lookup(v));
  ASSERT_TRUE(e.task);
  EXPECT_EQ(e.task->procid, 3);
  EXPECT_EQ(e.task->localid, 1);
  EXPECT_EQ(e.task->nodeid, 1);
  EXPECT_EQ(e.task->step_tasks, 4);
  EXPECT_EQ(e.task->node_name, "n2");
  ASSERT_TRUE(e.allocation);
  // So the allocation's slots come from its CPUs, not from the step.
  EXPECT_EQ(e.allocation->slots, (std::vector<int>{1, 1}));
  EXPECT_NE(e.allocation->slots_source.find("SLURM_JOB_CPUS_PER_NODE"), std::string::npos);
}

TEST(SlurmEnvironment, SpecialStepsAreNoTasks) {
  for (const char* id : {"4294967291", "4294967292", "4294967290", "batch", "extern"}) {
    Vars v = batch();
    v["SLURM_STEP_ID"] = id;
    EXPECT_FALSE(read_slurm_environment(lookup(v)).task) << id;
  }
}

TEST(SlurmEnvironment, SlotsFromCpusWhenTasksAreNotGiven) {
  Vars v{{"SLURM_JOB_ID", "1"},
         {"SLURM_JOB_NODELIST", "a,b"},
         {"SLURM_JOB_CPUS_PER_NODE", "16,8"},
         {"SLURM_CPUS_PER_TASK", "4"}};
  EXPECT_EQ(read_slurm_environment(lookup(v)).allocation->slots, (std::vector<int>{4, 2}));
}

TEST(SlurmEnvironment, BadVariablesAreClearErrors) {
  auto expect_error = [](Vars v, const std::string& fragment) {
    try {
      read_slurm_environment(lookup(v));
      ADD_FAILURE() << "accepted (" << fragment << ")";
    } catch (const EnvironmentError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  Vars v = batch();
  v["SLURM_JOB_NODELIST"] = "n[1-2";
  expect_error(v, "SLURM_JOB_NODELIST: hostlist \"n[1-2\"");
  v = batch();
  v["SLURM_TASKS_PER_NODE"] = "2(x3)";
  expect_error(v, "describes 3 nodes");
  v = batch();
  v["SLURM_TASKS_PER_NODE"] = "2(x";
  expect_error(v, "SLURM_TASKS_PER_NODE: count list");
  v = batch();
  v["SLURM_JOB_NODELIST"] = "n1,n1";
  v["SLURM_TASKS_PER_NODE"] = "1,1";
  v.erase("SLURM_JOB_CPUS_PER_NODE");
  expect_error(v, "names node n1 twice");
  v = batch();
  v.erase("SLURM_JOB_NODELIST");
  expect_error(v, "SLURM_JOB_NODELIST is not");
  v = batch();
  v["SLURM_JOB_NODELIST"] = " , ";
  expect_error(v, "is empty");
  v = batch();
  v["SLURM_CPUS_PER_TASK"] = "0";
  expect_error(v, "SLURM_CPUS_PER_TASK='0'");
  v = batch();
  v.erase("SLURM_TASKS_PER_NODE");
  v.erase("SLURM_JOB_CPUS_PER_NODE");
  expect_error(v, "neither SLURM_TASKS_PER_NODE nor SLURM_JOB_CPUS_PER_NODE");
  v = batch();
  v["SLURM_STEP_ID"] = "0";
  v["SLURM_PROCID"] = "x";
  expect_error(v, "SLURM_PROCID='x'");
}

TEST(Launcher, TellsMpirunFromSrun) {
  EXPECT_EQ(detect_launcher(lookup({{"PRTE_LAUNCHED", "1"}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "1"}})),
            Launcher::Mpirun);
  EXPECT_EQ(detect_launcher(lookup({{"OMPI_COMM_WORLD_SIZE", "4"}})), Launcher::Mpirun);
  EXPECT_EQ(detect_launcher(lookup(
                {{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "1"}, {"PMIX_NAMESPACE", "slurm.pmix.1.0"}})),
            Launcher::Srun);
  // The batch script itself has SLURM_PROCID but no step.
  EXPECT_EQ(detect_launcher(lookup({{"SLURM_JOB_ID", "3"}, {"SLURM_PROCID", "0"}})), Launcher::Unknown);
}

TEST(Launcher, SrunNoticesSayWhyAndWhatToDo) {
  const std::string n = srun_no_fault_tolerance_notice();
  EXPECT_NE(n.find("fault tolerance OFF"), std::string::npos);
  EXPECT_NE(n.find("srun"), std::string::npos);
  EXPECT_NE(n.find("ends the whole job step"), std::string::npos);
  EXPECT_NE(n.find("ringmend-run"), std::string::npos);
  const auto srun4 = lookup({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "4"}});
  EXPECT_NE(srun_without_pmix_notice(srun4, 1).find("--mpi=pmix"), std::string::npos);
  const auto srun4_task1 =
      lookup({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "1"}, {"SLURM_STEP_NUM_TASKS", "4"}});
  EXPECT_TRUE(srun_without_pmix_notice(srun4_task1, 1).empty());  // said once, by task 0
  EXPECT_TRUE(srun_without_pmix_notice(srun4, 4).empty());
  EXPECT_TRUE(srun_without_pmix_notice(lookup({{"OMPI_COMM_WORLD_SIZE", "1"}}), 1).empty());
}

TEST(Launcher, OpenMpiYieldsWhenTheNodeHasMoreRanksThanCpus) {
  EXPECT_TRUE(mpi_should_yield_when_idle(lookup({{"OMPI_COMM_WORLD_LOCAL_SIZE", "5"}}), 2));
  EXPECT_FALSE(mpi_should_yield_when_idle(lookup({{"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}), 2));
  EXPECT_FALSE(mpi_should_yield_when_idle(lookup({{"OMPI_COMM_WORLD_LOCAL_SIZE", "9"}}), 16));
  // The user's setting stands, either way.
  EXPECT_FALSE(mpi_should_yield_when_idle(
      lookup({{"OMPI_COMM_WORLD_LOCAL_SIZE", "5"}, {"OMPI_MCA_mpi_yield_when_idle", "0"}}), 2));
  // Not started by mpirun, or a value that is no count: nothing to decide.
  EXPECT_FALSE(mpi_should_yield_when_idle(lookup({}), 2));
  EXPECT_FALSE(mpi_should_yield_when_idle(lookup({{"OMPI_COMM_WORLD_LOCAL_SIZE", "5x"}}), 2));
  EXPECT_FALSE(mpi_should_yield_when_idle(lookup({{"OMPI_COMM_WORLD_LOCAL_SIZE", "5"}}), 0));
}

namespace {
// The settings a rank gets, as VARIABLE=value, in order.
std::vector<std::string> settings_of(const ringmend::ulfm::EnvLookup& env, unsigned cpus) {
  std::vector<std::string> out;
  for (const auto& s : open_mpi_settings(env, cpus)) out.push_back(std::string(s.variable) + "=" + s.value);
  return out;
}
}  // namespace

TEST(Launcher, OpenMpiLooksAtItsEventsOftenAndYieldsOnACrowdedNode) {
  using V = std::vector<std::string>;
  EXPECT_EQ(settings_of(lookup({{"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}), 2),
            V{"OMPI_MCA_mpi_event_tick_rate=100"});
  EXPECT_EQ(settings_of(lookup({{"OMPI_COMM_WORLD_LOCAL_SIZE", "5"}}), 2),
            (V{"OMPI_MCA_mpi_event_tick_rate=100", "OMPI_MCA_mpi_yield_when_idle=1"}));
  // The user's values stand: nothing is given for a variable already set.
  EXPECT_EQ(settings_of(lookup({{"OMPI_COMM_WORLD_LOCAL_SIZE", "5"},
                                {"OMPI_MCA_mpi_event_tick_rate", "10000"},
                                {"OMPI_MCA_mpi_yield_when_idle", "0"}}),
                        2),
            V{});
  EXPECT_EQ(settings_of(lookup({}), 2), V{"OMPI_MCA_mpi_event_tick_rate=100"});
}

TEST(Launcher, TheRuntimesMpiInitReturnsItsErrorUnlessTheUserChose) {
  const auto s = return_init_errors(lookup({}));
  ASSERT_TRUE(s);
  EXPECT_EQ(std::string(s->variable) + "=" + s->value, "OMPI_MCA_mpi_initial_errhandler=mpi_errors_return");
  EXPECT_FALSE(return_init_errors(lookup({{"OMPI_MCA_mpi_initial_errhandler", "mpi_errors_are_fatal"}})));
}

TEST(Launcher, LocalRankFromWhicheverLauncherSaysIt) {
  EXPECT_EQ(launcher_local_rank(lookup({})), -1);
  EXPECT_EQ(launcher_local_rank(lookup({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}})), 3);
  EXPECT_EQ(launcher_local_rank(lookup({{"MPI_LOCALRANKID", "1"}})), 1);
  EXPECT_EQ(launcher_local_rank(lookup({{"SLURM_LOCALID", "2"}})), 2);
  // mpirun inside an allocation: Open MPI's own count, not the srun that
  // started PRRTE's daemon.
  EXPECT_EQ(launcher_local_rank(lookup({{"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"SLURM_LOCALID", "0"}})), 1);
  EXPECT_EQ(launcher_local_rank(lookup({{"OMPI_COMM_WORLD_LOCAL_RANK", "one"}})), -1);
  EXPECT_EQ(launcher_local_rank(lookup({{"SLURM_LOCALID", "-2"}})), -1);
}

TEST(Launcher, LocalSizeFromWhicheverLauncherSaysIt) {
  EXPECT_EQ(launcher_local_size(lookup({})), -1);
  EXPECT_EQ(launcher_local_size(lookup({{"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}})), 2);
  EXPECT_EQ(launcher_local_size(lookup({{"MPI_LOCALNRANKS", "4"}})), 4);
  // srun: this node's entry of the step's count list.
  const auto srun = [](const char* tasks, const char* node) {
    return launcher_local_size(lookup({{"SLURM_STEP_TASKS_PER_NODE", tasks}, {"SLURM_NODEID", node}}));
  };
  EXPECT_EQ(srun("2(x3),1", "0"), 2);
  EXPECT_EQ(srun("2(x3),1", "2"), 2);
  EXPECT_EQ(srun("2(x3),1", "3"), 1);
  EXPECT_EQ(srun("1", "0"), 1);
  EXPECT_EQ(srun("2(x3),1", "4"), -1);  // past the list
  EXPECT_EQ(srun("2(x3", "0"), -1);
  EXPECT_EQ(srun("2(x0)", "0"), -1);
  EXPECT_EQ(srun("0", "0"), -1);
  EXPECT_EQ(srun(",", "0"), -1);
  EXPECT_EQ(launcher_local_size(lookup({{"SLURM_TASKS_PER_NODE", "3(x2)"}, {"SLURM_NODEID", "1"}})), 3);
  EXPECT_EQ(launcher_local_size(lookup({{"SLURM_TASKS_PER_NODE", "3(x2)"}})), -1);  // which node?
  // mpirun inside an allocation: Open MPI's count wins over the allocation's.
  EXPECT_EQ(launcher_local_size(lookup(
                {{"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}, {"SLURM_TASKS_PER_NODE", "4"}, {"SLURM_NODEID", "0"}})),
            1);
  EXPECT_EQ(launcher_local_size(lookup({{"OMPI_COMM_WORLD_LOCAL_SIZE", "0"}})), -1);
}
