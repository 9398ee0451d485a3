// ringmend-run: starts an MPI program with ringmend's fault tolerance on,
// inside a Slurm allocation or on this machine (ringmend-run --help, the man
// page ringmend-run.1, docs/slurm.md). This file is the launch's flow; its
// parts are in run/: the command line (options), the programs it runs
// (programs), the network pre-check (network_check_step) and the job's
// supervision and verdict (job_supervisor).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "ringmend_run_config.hpp"
#include "slurm/run/job_supervisor.hpp"
#include "slurm/run/network_check_step.hpp"
#include "slurm/run/options.hpp"
#include "slurm/run/programs.hpp"
#include "slurm/slurm.hpp"

namespace {

using namespace ringmend::slurm;
using namespace ringmend::slurm::run;

// --launcher srun: what would be mpirun's -x VAR=VALUE is set here, and srun
// passes this environment on to every task; --no-ft keeps the tasks on MPI
// alone (RINGMEND_MEMBERSHIP=mpi), as it does under mpirun.
void use_environment_for_srun(const Options& o) {
  for (std::size_t i = 0; i + 1 < o.extra.size(); ++i) {
    if (o.extra[i] != "-x") continue;
    const std::string& v = o.extra[++i];
    if (const auto eq = v.find('='); eq != std::string::npos)
      ::setenv(v.substr(0, eq).c_str(), v.substr(eq + 1).c_str(), 1);
  }
  if (!o.fault_tolerance) ::setenv("RINGMEND_MEMBERSHIP", "mpi", 1);
}

// --exclude-file: the nodes it lists (one or more per line, hostlist
// syntax) are left out; a missing file leaves out nothing.
void read_exclude_file(Options& o) {
  if (o.exclude_file.empty()) return;
  const auto lines = read_lines_file(o.exclude_file);
  if (!lines) {
    if (::access(o.exclude_file.c_str(), F_OK) == 0)
      throw Fatal{"--exclude-file " + o.exclude_file + " cannot be read"};
    return;
  }
  for (const std::string& line : *lines) {
    try {
      for (auto& n : expand_hostlist(line)) o.exclude.push_back(std::move(n));
    } catch (const std::exception& err) {
      throw Fatal{"--exclude-file " + o.exclude_file + ": '" + line + "': " + err.what()};
    }
  }
}

// --mpirun-args (what scripts/ft-mpirun runs): the user's mpirun command
// line as is, with the FT arguments added and ringmend-rank put in front of
// every program through PRRTE's exec agent, so that no program has to be
// found among mpirun's arguments. The outcome is judged as for a job
// ringmend-run placed itself.
int run_mpirun_args(const Options& o, const Mpirun& mpirun, const FtArgs& ft, const std::string& self_dir) {
  const std::string rank_launcher = find_rank_launcher(self_dir);
  if (rank_launcher.find_first_of(" \t") != std::string::npos)
    throw Fatal{
        "ringmend-rank's path '" + rank_launcher +
        "' has a space, which PRRTE's exec agent cannot take; install ringmend where the path has none"};
  std::vector<std::string> cmd{mpirun.path};
  if (::geteuid() == 0) cmd.push_back("--allow-run-as-root");
  cmd.insert(cmd.end(), ft.args.begin(), ft.args.end());
  cmd.insert(cmd.end(), {"--prtemca", "odls_base_exec_agent", rank_launcher});
  cmd.insert(cmd.end(), o.program.begin(), o.program.end());
  if (o.dry_run) {
    std::printf("%s\n", shell_join(cmd).c_str());
    return 0;
  }
  if (!o.quiet) {
    std::fprintf(stderr, "ringmend-run: %s\n", shell_join(cmd).c_str());
    std::fflush(stderr);
  }
  return supervise(
      {cmd, ranks_in_mpirun_args(o.program, executable_file), {}, false, o.fail_on_loss, o.exclude_file});
}

// Launches that cannot work here, said before anything starts.
void check_where(const Options& o, const SlurmEnvironment& env) {
  if (env.allocation && env.task)
    throw Fatal{
        "ringmend-run runs inside job step " + env.allocation->job_id + "." + env.task->step_id +
        " (a task started by srun). Run it directly in the batch script or the salloc shell: it starts "
        "its own job step through mpirun, and a step inside a step waits for resources forever. "
        "(Without fault tolerance, srun can start the program itself: srun --mpi=pmix ./app)"};
  if (o.srun && !env.allocation)
    throw Fatal{
        "--launcher srun starts the job as a step of a Slurm allocation, and this is not one: run it "
        "in a batch script or an salloc shell"};
  if (o.fault_tolerance && !RINGMEND_RUN_HAVE_ULFM && !o.srun)
    throw Fatal{
        "this ringmend was built against an MPI without ULFM (RINGMEND_REQUIRE_ULFM=OFF), so its programs "
        "cannot survive a rank failure. Launch with --no-ft, or rebuild ringmend with Open MPI 5 and ULFM"};
}

// srun, or the mpirun that passed its checks.
Mpirun choose_launcher(const Options& o) {
  if (!o.srun) {
    Mpirun m = find_mpirun(o.mpirun);
    check_mpirun(m, o.fault_tolerance, o.verbose);
    return m;
  }
  Mpirun srun{on_path("srun"), "PATH", {}};
  if (srun.path.empty()) throw Fatal{"--launcher srun: no srun on PATH"};
  use_environment_for_srun(o);
  return srun;
}

// Where the ranks go, and the words that say so.
struct Plan {
  Placement placement;
  std::string where;
};

// The nodes that --network-check finds far slower than the others; a dry
// run shows the check's command instead and leaves out none.
std::vector<std::string> slow_nodes(const std::vector<NodeSlots>& nodes, const CommandOptions& c,
                                    const Options& o, const std::string& self_dir) {
  std::vector<std::string> names, slow;
  for (const auto& n : nodes)
    if (n.count > 0) names.push_back(n.name);
  if (names.size() < 2) {
    std::printf("network check: the allocation has one node; nothing to compare\n");
    return slow;
  }
  if (o.dry_run) {
    std::printf(
        "# network check (not run by --dry-run; it may leave nodes out of the command below):\n# %s\n",
        shell_join(network_check_command(names, c, o, self_dir)).c_str());
    return slow;
  }
  for (const auto& v : run_network_check(names, c, o, self_dir).nodes)
    if (v.drop) {
      slow.push_back(v.node);
      std::fprintf(stderr, "ringmend-run: network check: dropping node %s: %s\n", v.node.c_str(),
                   v.reason.c_str());
    }
  if (slow.empty()) std::fprintf(stderr, "ringmend-run: network check: every node passed\n");
  return slow;
}

// In a Slurm allocation: its nodes less the excluded and the slow ones;
// nullopt after --network-check-only.
std::optional<Plan> plan_in_allocation(const Allocation& a, CommandOptions& c, const Options& o,
                                       const std::string& self_dir) {
  c.cpus_per_task = a.cpus_per_task;
  std::vector<NodeSlots> nodes;
  for (std::size_t i = 0; i < a.nodes.size(); ++i) nodes.push_back({a.nodes[i], a.slots[i]});
  std::vector<std::string> by_user, by_check;
  for (const auto& n : o.exclude) {
    if (std::none_of(nodes.begin(), nodes.end(), [&](const NodeSlots& s) { return s.name == n; }))
      std::fprintf(stderr, "ringmend-run: note: --exclude names %s, which is not in the allocation\n",
                   n.c_str());
    else if (std::find(by_user.begin(), by_user.end(), n) == by_user.end())
      by_user.push_back(n);
  }
  const auto leave_out = [&nodes](const std::vector<std::string>& names) {
    std::erase_if(nodes, [&](const NodeSlots& n) {
      return std::find(names.begin(), names.end(), n.name) != names.end();
    });
  };
  leave_out(by_user);
  if (o.network_check) {
    by_check = slow_nodes(nodes, c, o, self_dir);
    leave_out(by_check);
    std::fflush(stdout);
    if (o.network_check_only) return std::nullopt;
  }
  std::vector<std::string> excluded = by_user;
  excluded.insert(excluded.end(), by_check.begin(), by_check.end());
  Plan p;
  try {
    p.placement = place_in_allocation(nodes, o.placement, a.slots_source, excluded);
  } catch (const LaunchError& e) {
    throw Fatal{e.what()};
  }
  p.where = "Slurm job " + a.job_id + ": " + std::to_string(p.placement.ranks) + " ranks on " +
            host_argument(p.placement);
  if (!by_user.empty()) p.where += " (" + compress_hostlist(by_user) + " left out: --exclude)";
  if (!by_check.empty()) p.where += " (" + compress_hostlist(by_check) + " left out by the network check)";
  return p;
}

// Outside Slurm: this machine's CPUs; nullopt after --network-check-only.
std::optional<Plan> plan_here(const Options& o) {
  if (!o.exclude.empty())
    throw Fatal{"--exclude leaves out nodes of a Slurm allocation, and this is not one"};
  if (o.network_check) {
    std::printf("network check: not in a Slurm allocation, only this machine; nothing to compare\n");
    std::fflush(stdout);
    if (o.network_check_only) return std::nullopt;
  }
  Plan p;
  try {
    p.placement = place_locally(local_cpus(), o.placement);
  } catch (const LaunchError& e) {
    throw Fatal{e.what()};
  }
  p.where = "not in a Slurm allocation: " + std::to_string(p.placement.ranks) + " ranks on this machine";
  return p;
}

int launch(int argc, char** argv) {
  std::optional<Options> parsed = parse_options(argc, argv);
  if (!parsed) return 0;  // --help, --version
  Options& o = *parsed;
  const std::string self_dir = self_directory();
  SlurmEnvironment env;
  try {
    env = read_slurm_environment();
  } catch (const EnvironmentError& e) {
    throw Fatal{std::string("cannot read the Slurm allocation: ") + e.what()};
  }
  check_where(o, env);
  if (!o.network_check_only && !o.mpirun_args) check_program(o.program[0]);
  read_exclude_file(o);
  const Mpirun launcher = choose_launcher(o);
  FtArgs ft;
  if (o.fault_tolerance && !o.srun) ft = fault_tolerance_args(self_dir);
  if (o.verbose && !o.srun) {
    std::fprintf(stderr, "ringmend-run: mpirun: %s (from %s)\n", launcher.path.c_str(),
                 launcher.from.c_str());
    if (o.fault_tolerance) std::fprintf(stderr, "ringmend-run: FT arguments from %s\n", ft.source.c_str());
  }
  if (o.mpirun_args) return run_mpirun_args(o, launcher, ft, self_dir);

  CommandOptions c;
  c.mpirun = launcher.path;
  c.as_root = ::geteuid() == 0;
  c.ft_args = ft.args;
  c.oversubscribe = o.placement.oversubscribe;
  c.forward_env = ringmend_variables();
  c.extra = o.extra;
  c.program = o.program;
  if (!o.network_check_only) c.program.insert(c.program.begin(), find_rank_launcher(self_dir));
  const std::optional<Plan> plan =
      env.allocation ? plan_in_allocation(*env.allocation, c, o, self_dir) : plan_here(o);
  if (!plan) return 0;  // --network-check-only

  const std::string ft_text =
      !o.fault_tolerance ? "fault tolerance OFF (--no-ft): a rank failure will end the job"
      : o.srun           ? "fault tolerance on (srun, the native membership: lost nodes are survived)"
                         : "fault tolerance on (Open MPI " + launcher.version + " with ULFM)";
  const auto cmd = o.srun ? srun_command(plan->placement, c) : mpirun_command(plan->placement, c);
  if (o.dry_run) {
    std::printf("# %s; %s\n%s\n", plan->where.c_str(), ft_text.c_str(), shell_join(cmd).c_str());
    return 0;
  }
  if (!o.quiet) {
    std::fprintf(stderr, "ringmend-run: %s; %s\nringmend-run: %s\n", plan->where.c_str(), ft_text.c_str(),
                 shell_join(cmd).c_str());
    std::fflush(stderr);
  }
  std::fflush(stdout);
  // --map-by slot fills the hosts in order: member i's node.
  std::vector<std::string> member_hosts;
  for (const auto& h : plan->placement.hosts) member_hosts.insert(member_hosts.end(), h.count, h.name);
  return supervise(
      {cmd, plan->placement.ranks, std::move(member_hosts), o.srun, o.fail_on_loss, o.exclude_file});
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return launch(argc, argv);
  } catch (const Fatal& f) {
    std::fflush(stdout);
    std::fprintf(stderr, "ringmend-run: error: %s\n", f.text.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "ringmend-run: error: %s\n", e.what());
    return 2;
  }
}
