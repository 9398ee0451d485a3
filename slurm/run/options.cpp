#include "slurm/run/options.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ringmend_run_config.hpp"
#include "slurm/hostlist.hpp"

namespace ringmend::slurm::run {
namespace {

const char* built_mpirun() { return RINGMEND_RUN_MPIEXEC[0] ? RINGMEND_RUN_MPIEXEC : "none recorded"; }

constexpr const char* kDescription =
    "Starts an MPI program with ringmend's fault tolerance on: builds the mpirun\n"
    "command (Open MPI 5 with ULFM) and runs it. If a rank dies (crash, kill, out\n"
    "of memory), the other ranks carry on: ringmend shrinks the job and finishes\n"
    "the interrupted collective with the survivors. Losing a whole node ends a job\n"
    "launched through mpirun (Open MPI 5.0's runtime aborts it: exit status 5);\n"
    "--launcher srun survives it.\n"
    "\n"
    "Inside a Slurm allocation (salloc, sbatch) the ranks go on the allocation's\n"
    "nodes, as many on each as Slurm gave it task slots (SLURM_JOB_NODELIST,\n"
    "SLURM_TASKS_PER_NODE). Outside Slurm they run on this machine.\n"
    "\n"
    "Examples (after: salloc -N 4 --ntasks-per-node=8)\n"
    "  ringmend-run ./train                     32 ranks, 8 on each node\n"
    "  ringmend-run -n 12 ./train               12 ranks: 8 on the first node, 4 on the next\n"
    "  ringmend-run --ranks-per-node 1 ./train  one rank on each of the 4 nodes\n"
    "  ringmend-run --network-check ./train     measure the nodes first; leave out a slow one\n"
    "  ringmend-run --dry-run ./train           print the mpirun command, run nothing\n"
    "In a batch script:\n"
    "  #SBATCH --nodes=2 --ntasks-per-node=4\n"
    "  ringmend-run ./train --epochs=10\n";

std::string footer() {
  return std::string(
             "Environment\n"
             "  MPIEXEC                the mpirun to use; otherwise the one ringmend was built\n"
             "                         with, ") +
         built_mpirun() +
         ",\n"
         "                         else mpirun on PATH.\n"
         "                         It must be Open MPI 5 with ULFM (checked with ompi_info).\n"
         "  RINGMEND_LAUNCHER      mpirun or srun: the default of --launcher\n"
         "  RINGMEND_FT_ARGS_FILE  the FT mpirun arguments (default share/ringmend/ft_mpirun_args.txt)\n"
         "  RINGMEND_*             forwarded to every rank (-x)\n"
         "\n"
         "srun: 'srun --mpi=pmix --no-kill --kill-on-bad-exit=0 ./app' runs a ringmend\n"
         "program fault-tolerant too, on ringmend's own membership (no MPI after the\n"
         "start; it survives a lost node, which ends a job of this launcher: status 5).\n"
         "RINGMEND_MEMBERSHIP=mpi turns that off: Slurm then ends the whole job step\n"
         "as soon as one rank dies. docs/slurm.md says which losses each launch survives.\n"
         "\n"
         "Each rank runs under ringmend-rank, which reports how it ended. When mpirun is\n"
         "done, ringmend-run prints a summary (ranks started, each rank lost: member id,\n"
         "node, when and how).\n"
         "Exit status (mpirun's own is 0 under fault tolerance, whatever happened)\n"
         "  0  the ranks that were not lost finished normally\n"
         "  N  a rank finished its work, then exited with status N (the first by member id)\n"
         "  1  no rank finished normally (or the first non-zero exit status of a rank)\n"
         "  2  the job could not be started (the message says why)\n"
         "  3  ranks were lost and --fail-on-loss was given\n"
         "  4  the job did not start: a rank died while MPI started, which MPI cannot\n"
         "     always survive; nothing ran, start it again\n"
         "  5  a node was lost (its MPI daemon died; Open MPI 5.0 then ends the job): the\n"
         "     summary names it; relaunch without it (--exclude, --exclude-file)\n";
}

// CLI11's usage line says [OPTIONS]; this one also says where the program goes.
class Formatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string name) const override {
    return "Usage: " + name + " [options] [--] program [program arguments...]\n";
  }
};

CLI::Validator whole_number(long min, const char* what) {
  return CLI::Validator(
      [min, what](std::string& v) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (end == v.c_str() || *end || errno || n < min || n > 10000000)
          return std::string("wants ") + what + ", got '" + v + "'";
        return {};
      },
      "N");
}

CLI::Validator number_in(double min, double max, const char* range) {
  return CLI::Validator(
      [min, max, range](std::string& v) -> std::string {
        char* end = nullptr;
        const double d = std::strtod(v.c_str(), &end);
        if (end == v.c_str() || *end || !(d >= min && d <= max))
          return std::string("wants a number ") + range + ", got '" + v + "'";
        return {};
      },
      "X");
}

bool launcher_is_srun(const std::string& name, const std::string& from) {
  if (name != "srun" && name != "mpirun") throw Fatal{from + "'" + name + "': srun or mpirun"};
  return name == "srun";
}

// Builds the parser; the options write into `o` as they are read, the
// pass-through ones (-x, --mca, --mpirun-arg) in the order given.
void describe_placement(CLI::App& app, Options& o);
void describe_fault_tolerance(CLI::App& app, Options& o);
void describe_network_check(CLI::App& app, Options& o);
void describe_mpirun(CLI::App& app, Options& o);
void describe_other(CLI::App& app, Options& o, bool& version);

void describe(CLI::App& app, Options& o, bool& version) {
  app.description(kDescription);
  app.footer(footer());
  app.formatter(std::make_shared<Formatter>());
  app.get_formatter()->column_width(26);
  app.prefix_command();  // the first argument that is not an option starts the program
  describe_placement(app, o);
  describe_fault_tolerance(app, o);
  describe_network_check(app, o);
  describe_mpirun(app, o);
  describe_other(app, o, version);
}

void describe_placement(CLI::App& app, Options& o) {
  const char* placement = "Placement";
  app.add_option("-n,--np,--ntasks", o.placement.ranks,
                 "ranks (default: every task slot; outside Slurm: every CPU)")
      ->check(whole_number(1, "a whole number of at least 1"))
      ->group(placement);
  app.add_option("-N,--nodes", o.placement.nodes,
                 "use the first N nodes of the allocation, ranks spread evenly")
      ->check(whole_number(1, "a whole number of at least 1"))
      ->group(placement);
  app.add_option("--ranks-per-node,--ntasks-per-node", o.placement.ranks_per_node,
                 "R ranks on each node used")
      ->type_name("R")
      ->check(whole_number(1, "a whole number of at least 1"))
      ->group(placement);
  app.add_flag("--oversubscribe", o.placement.oversubscribe,
               "allow more ranks than slots (each rank gets less than a CPU)")
      ->group(placement);
}

void describe_fault_tolerance(CLI::App& app, Options& o) {
  const char* ft = "Fault tolerance";
  app.add_flag_callback(
         "--no-ft", [&o] { o.fault_tolerance = false; },
         "launch without it: a rank failure then ends the job")
      ->group(ft);
  app.add_option("--spares", o.spares,
                 "start S more processes that wait, without using a CPU, to take the place of ranks "
                 "that die (RINGMEND_SPARES; docs/elastic.md); they are the last S processes, and "
                 "without -n they come out of the task slots")
      ->type_name("S")
      ->check(whole_number(0, "a whole number, 0 or more"))
      ->group(ft);
  app.add_option_function<std::string>(
         "--launcher", [&o](const std::string& v) { o.srun = launcher_is_srun(v, "--launcher "); },
         "mpirun (default) or srun (RINGMEND_LAUNCHER): srun starts the ranks as one step of the "
         "allocation on ringmend's own membership, which survives a lost node (mpirun's job ends: "
         "status 5); spares, grow and release work under both")
      ->type_name("L")
      ->group(ft);
}

void describe_network_check(CLI::App& app, Options& o) {
  const char* check = "Network pre-check";
  app.add_flag("--network-check", o.network_check,
               "before the program starts, one rank per node measures latency and bandwidth between "
               "every pair of nodes and each node's memory copy rate, prints a table, and leaves out a "
               "node far slower than the others; the program then runs on the nodes that passed "
               "(--dry-run only shows the check's command)")
      ->group(check);
  app.add_option("--network-check-ratio", o.rule.ratio,
                 "far slower = below R x the median node (default 0.5; with two nodes, the better one "
                 "is the reference)")
      ->type_name("R")
      ->check(number_in(0.01, 1, "from 0.01 to 1"))
      ->group(check);
  app.add_option("--network-check-min-bw", o.rule.min_link_mbs,
                 "also leave out a node whose links give < M MB/s")
      ->type_name("M")
      ->check(number_in(0, 1e9, "of MB/s, 0 or more"))
      ->group(check);
  app.add_option("--network-check-seconds", o.check_seconds, "time for each measurement (default 0.15)")
      ->type_name("S")
      ->check(number_in(0.01, 60, "from 0.01 to 60"))
      ->group(check);
  app.add_option("--network-check-timeout", o.check_timeout,
                 "give up when the check takes longer (default 120)")
      ->type_name("S")
      ->check(number_in(1, 86400, "of seconds from 1 to 86400"))
      ->group(check);
  app.add_flag("--network-check-only", o.network_check_only, "run the check, print the table, exit")
      ->group(check);
}

// In the order given: -x, --mca and --mpirun-arg go to mpirun as they came.
void describe_mpirun(CLI::App& app, Options& o) {
  const char* mpirun = "mpirun";
  app.add_option_function<std::string>(
         "-x",
         [&o](const std::string& v) {
           o.extra.insert(o.extra.end(), {"-x", v});
         },
         "set or forward an environment variable for every rank")
      ->type_name("VAR[=VALUE]")
      ->trigger_on_parse()
      ->group(mpirun);
  app.add_option_function<std::vector<std::string>>(
         "--mca",
         [&o](const std::vector<std::string>& v) {
           o.extra.push_back("--mca");
           o.extra.insert(o.extra.end(), v.begin(), v.end());
         },
         "an MCA parameter (e.g. --mca btl_tcp_if_include ib0)")
      ->type_name("NAME VALUE")
      ->type_size(2)
      ->expected(1)
      ->allow_extra_args(false)
      ->trigger_on_parse()
      ->group(mpirun);
  app.add_option_function<std::string>(
         "--mpirun-arg", [&o](const std::string& v) { o.extra.push_back(v); },
         "any other mpirun argument, as is (repeatable)")
      ->type_name("ARG")
      ->trigger_on_parse()
      ->group(mpirun);
  app.add_option("--mpirun", o.mpirun, "the mpirun to use")->type_name("PATH")->group(mpirun);
  app.add_flag("--dry-run", o.dry_run, "print the command and exit")->group(mpirun);
}

void describe_other(CLI::App& app, Options& o, bool& version) {
  const char* other = "Other";
  app.add_flag("--fail-on-loss", o.fail_on_loss,
               "exit 3 when any rank was lost, even if the job recovered (for batch scripts that would "
               "rather requeue)")
      ->group(other);
  app.add_option_function<std::string>(
         "--exclude",
         [&o](const std::string& v) {
           try {
             for (auto& n : expand_hostlist(v)) o.exclude.push_back(std::move(n));
           } catch (const std::exception& e) {
             throw Fatal{"--exclude '" + v + "': " + e.what()};
           }
         },
         "leave these nodes of the allocation out (n[3-4],n7)")
      ->type_name("NODES")
      ->trigger_on_parse()
      ->group(other);
  app.add_option("--exclude-file", o.exclude_file,
                 "leave out the nodes FILE lists, and add to it a node lost during the job: a batch "
                 "script that relaunches after a node loss (exit status 5) then uses the remaining nodes")
      ->type_name("FILE")
      ->group(other);
  // Never seen by the parser: parse_options cuts the command line there.
  app.add_flag("--mpirun-args", o.mpirun_args,
               "the rest of the command line is mpirun's own (options, program, arguments), passed as "
               "is with the FT arguments added; the outcome is reported as below (scripts/ft-mpirun)")
      ->group(other);
  app.add_flag("-v,--verbose", o.verbose, "also say where mpirun and the FT arguments come from")
      ->group(other);
  app.add_flag("-q,--quiet", o.quiet, "do not print the command before running it")->group(other);
  app.add_flag("--version", version, "version, and the MPI ringmend was built with")->group(other);
  app.set_help_flag("-h,--help", "this text")->group(other);
}

// Which options go together, once all are read.
void check_combination(Options& o) {
  if (o.network_check_only) o.network_check = true;
  if (o.mpirun_args) {
    if (o.srun) throw Fatal{"--mpirun-args and --launcher srun: mpirun's arguments need mpirun"};
    if (o.program.empty()) throw Fatal{"--mpirun-args: no mpirun arguments follow (at least the program)"};
    const PlacementRequest& p = o.placement;
    if (p.ranks || p.nodes || p.ranks_per_node || p.oversubscribe || o.network_check || !o.exclude.empty() ||
        !o.exclude_file.empty() || !o.extra.empty() || o.spares)
      throw Fatal{
          "with --mpirun-args, placement, spares, the network check, --exclude and mpirun options are "
          "written in mpirun's own arguments after it, not as ringmend-run options (spares: -x "
          "RINGMEND_SPARES=S)"};
    return;
  }
  if (o.srun) {
    if (!o.mpirun.empty()) throw Fatal{"--mpirun and --launcher srun: one launcher or the other"};
    for (const std::string& a : o.extra)
      if (a == "--mca" || (a != "-x" && !a.empty() && a[0] == '-'))
        throw Fatal{"'" + a +
                    "' is an mpirun option; with --launcher srun, srun passes the environment on "
                    "and its own options come from SLURM_* variables"};
  }
  if (o.spares > 0) {
    if (!o.fault_tolerance) throw Fatal{"--spares needs fault tolerance: leave out --no-ft"};
    if (o.placement.ranks > 0) o.placement.ranks += o.spares;
    o.extra.insert(o.extra.end(), {"-x", "RINGMEND_SPARES=" + std::to_string(o.spares)});
  }
  if (o.program.empty() && !o.network_check_only)
    throw Fatal{
        "no program given. Usage: ringmend-run [options] program [arguments]; see ringmend-run --help"};
}

}  // namespace

std::optional<Options> parse_options(int argc, char** argv) {
  Options o;
  const char* launcher = std::getenv("RINGMEND_LAUNCHER");
  o.srun = launcher && launcher_is_srun(launcher, "RINGMEND_LAUNCHER=");
  bool version = false;
  CLI::App app{"", "ringmend-run"};
  describe(app, o, version);

  // --mpirun-args: what follows is mpirun's command line, whatever it looks
  // like, so the parser sees only what comes before it (unless the program
  // came first, when it is the program's own argument).
  int until = argc;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--mpirun-args") == 0) {
      until = i;
      break;
    }
  try {
    app.parse(until, argv);
    if (until < argc && !app.remaining().empty()) {
      o = Options{};
      o.srun = launcher && launcher_is_srun(launcher, "RINGMEND_LAUNCHER=");
      app.parse(argc, argv);
      until = argc;
    }
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    throw Fatal{std::string(e.what()) + " (see ringmend-run --help)"};
  }
  if (version) {
    std::printf("ringmend-run %s\nbuilt with the MPI of %s\n", RINGMEND_RUN_VERSION, built_mpirun());
    return std::nullopt;
  }
  // Setting the check's rule asks for the check.
  if (app.count("--network-check-ratio") || app.count("--network-check-min-bw")) o.network_check = true;
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") {
    rest.erase(rest.begin());
  } else if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-') {
    throw Fatal{"unknown option '" + rest.front() +
                "' (see ringmend-run --help; other mpirun options go through --mpirun-arg)"};
  }
  if (until < argc) {
    o.mpirun_args = true;
    rest.assign(argv + until + 1, argv + argc);
  }
  o.program = std::move(rest);
  check_combination(o);
  return o;
}

}  // namespace ringmend::slurm::run
