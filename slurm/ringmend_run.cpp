// ringmend-run: starts an MPI program with ringmend's fault tolerance on,
// inside a Slurm allocation or on this machine. See usage() below, the man
// page (ringmend-run.1) and docs/slurm.md.
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "ringmend_run_config.hpp"
#include "slurm/job_outcome.hpp"
#include "slurm/slurm.hpp"

extern char** environ;

namespace {

using namespace ringmend::slurm;

struct Options {
  PlacementRequest placement;
  bool fault_tolerance = true;
  bool dry_run = false;
  bool network_check = false;
  bool network_check_only = false;
  NetcheckRule rule;
  double check_seconds = 0.15;
  double check_timeout = 120;
  std::vector<std::string> extra;  // pass-through mpirun arguments
  std::string mpirun;              // --mpirun
  bool fail_on_loss = false;
  int spares = 0;                    // --spares: processes beyond -n that wait to replace lost ones
  std::vector<std::string> exclude;  // nodes to leave out (--exclude, --exclude-file)
  std::string exclude_file;          // read at start; a lost node is added to it
  bool mpirun_args = false;          // --mpirun-args: `program` is mpirun's own command line
  bool srun = false;                 // --launcher srun: the native membership, no mpirun
  bool verbose = false;
  bool quiet = false;
  std::vector<std::string> program;
};

// Errors that stop the launch before anything runs: exit status 2.
struct Fatal {
  std::string text;
};

void usage(FILE* out) {
  std::fprintf(
      out,
      "Usage: ringmend-run [options] [--] program [program arguments...]\n"
      "\n"
      "Starts an MPI program with ringmend's fault tolerance on: builds the mpirun\n"
      "command (Open MPI 5 with ULFM) and runs it. If a rank dies (crash, kill, out\n"
      "of memory), the other ranks carry on: ringmend shrinks the job and finishes\n"
      "the interrupted collective with the survivors. Losing a whole node still ends\n"
      "the job (Open MPI 5.0's runtime aborts it).\n"
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
      "  ringmend-run ./train --epochs=10\n"
      "\n"
      "Placement\n"
      "  -n, --np N              ranks (default: every task slot; outside Slurm: every CPU)\n"
      "  -N, --nodes N           use the first N nodes of the allocation, ranks spread evenly\n"
      "      --ranks-per-node R  R ranks on each node used\n"
      "      --oversubscribe     allow more ranks than slots (each rank gets less than a CPU)\n"
      "Fault tolerance\n"
      "      --no-ft             launch without it: a rank failure then ends the job\n"
      "      --spares S          start S more processes that wait, without using a CPU,\n"
      "                          to take the place of ranks that die (RINGMEND_SPARES;\n"
      "                          docs/elastic.md); they are the last S processes, and\n"
      "                          without -n they come out of the task slots\n"
      "Network pre-check\n"
      "      --network-check     before the program starts, one rank per node measures\n"
      "                          latency and bandwidth between every pair of nodes and\n"
      "                          each node's memory copy rate, prints a table, and leaves\n"
      "                          out a node far slower than the others; the program\n"
      "                          then runs on the nodes that passed (--dry-run only\n"
      "                          shows the check's command)\n"
      "      --network-check-ratio R   far slower = below R x the median node (default 0.5;\n"
      "                          with two nodes, the better one is the reference)\n"
      "      --network-check-min-bw M  also leave out a node whose links give < M MB/s\n"
      "      --network-check-seconds S time for each measurement (default 0.15)\n"
      "      --network-check-timeout S give up when the check takes longer (default 120)\n"
      "      --network-check-only      run the check, print the table, exit\n"
      "mpirun\n"
      "  -x VAR[=VALUE]          set or forward an environment variable for every rank\n"
      "      --mca NAME VALUE    an MCA parameter (e.g. --mca btl_tcp_if_include ib0)\n"
      "      --mpirun-arg ARG    any other mpirun argument, as is (repeatable)\n"
      "      --mpirun PATH       the mpirun to use\n"
      "      --dry-run           print the command and exit\n"
      "Other\n"
      "      --fail-on-loss      exit 3 when any rank was lost, even if the job recovered\n"
      "                          (for batch scripts that would rather requeue)\n"
      "      --exclude NODES     leave these nodes of the allocation out (n[3-4],n7)\n"
      "      --exclude-file FILE leave out the nodes FILE lists, and add to it a node lost\n"
      "                          during the job: a batch script that relaunches after a\n"
      "                          node loss (exit status 5) then uses the remaining nodes\n"
      "      --mpirun-args ARGS  the rest of the command line is mpirun's own (options,\n"
      "                          program, arguments), passed as is with the FT arguments\n"
      "                          added; the outcome is reported as below (scripts/ft-mpirun)\n"
      "      --launcher L        mpirun (default) or srun (RINGMEND_LAUNCHER): srun starts\n"
      "                          the ranks as one step of the allocation on ringmend's own\n"
      "                          membership, which survives a lost node (mpirun's job\n"
      "                          ends: status 5); spares and grow work under both,\n"
      "                          release only under mpirun\n"
      "  -v, --verbose           also say where mpirun and the FT arguments come from\n"
      "  -q, --quiet             do not print the command before running it\n"
      "  -h, --help              this text\n"
      "      --version           version, and the MPI ringmend was built with\n"
      "\n"
      "Environment\n"
      "  MPIEXEC                the mpirun to use; otherwise the one ringmend was built\n"
      "                         with, %s,\n"
      "                         else mpirun on PATH.\n"
      "                         It must be Open MPI 5 with ULFM (checked with ompi_info).\n"
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
      "     summary names it; relaunch without it (--exclude, --exclude-file)\n",
      RINGMEND_RUN_MPIEXEC[0] ? RINGMEND_RUN_MPIEXEC : "none recorded");
}

int to_count(const char* opt, const char* v) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (end == v || *end || errno || n < 1 || n > 10000000)
    throw Fatal{std::string(opt) + " wants a whole number of at least 1, got '" + v + "'"};
  return static_cast<int>(n);
}

double to_number(const char* opt, const char* v, double min, double max, const char* range) {
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (end == v || *end || !(d >= min && d <= max))
    throw Fatal{std::string(opt) + " wants a number " + range + ", got '" + v + "'"};
  return d;
}

enum LongOnly {
  kRanksPerNode = 1000,
  kOversubscribe,
  kNoFt,
  kDryRun,
  kNetCheck,
  kNetRatio,
  kNetMinBw,
  kNetSeconds,
  kNetTimeout,
  kNetOnly,
  kMca,
  kMpirunArg,
  kMpirun,
  kFailOnLoss,
  kSpares,
  kExclude,
  kExcludeFile,
  kMpirunArgs,
  kVersion,
  kLauncher,
};

Options parse(int argc, char** argv) {
  static const option longs[] = {
      {"np", required_argument, nullptr, 'n'},
      {"ntasks", required_argument, nullptr, 'n'},
      {"nodes", required_argument, nullptr, 'N'},
      {"ranks-per-node", required_argument, nullptr, kRanksPerNode},
      {"ntasks-per-node", required_argument, nullptr, kRanksPerNode},
      {"oversubscribe", no_argument, nullptr, kOversubscribe},
      {"no-ft", no_argument, nullptr, kNoFt},
      {"dry-run", no_argument, nullptr, kDryRun},
      {"network-check", no_argument, nullptr, kNetCheck},
      {"network-check-ratio", required_argument, nullptr, kNetRatio},
      {"network-check-min-bw", required_argument, nullptr, kNetMinBw},
      {"network-check-seconds", required_argument, nullptr, kNetSeconds},
      {"network-check-timeout", required_argument, nullptr, kNetTimeout},
      {"network-check-only", no_argument, nullptr, kNetOnly},
      {"mca", required_argument, nullptr, kMca},
      {"mpirun-arg", required_argument, nullptr, kMpirunArg},
      {"mpirun", required_argument, nullptr, kMpirun},
      {"fail-on-loss", no_argument, nullptr, kFailOnLoss},
      {"spares", required_argument, nullptr, kSpares},
      {"exclude", required_argument, nullptr, kExclude},
      {"exclude-file", required_argument, nullptr, kExcludeFile},
      {"mpirun-args", no_argument, nullptr, kMpirunArgs},
      {"launcher", required_argument, nullptr, kLauncher},
      {"verbose", no_argument, nullptr, 'v'},
      {"quiet", no_argument, nullptr, 'q'},
      {"help", no_argument, nullptr, 'h'},
      {"version", no_argument, nullptr, kVersion},
      {nullptr, 0, nullptr, 0},
  };
  Options o;
  if (const char* launcher = std::getenv("RINGMEND_LAUNCHER")) {
    if (std::string(launcher) != "srun" && std::string(launcher) != "mpirun")
      throw Fatal{"RINGMEND_LAUNCHER='" + std::string(launcher) + "': srun or mpirun"};
    o.srun = std::string(launcher) == "srun";
  }
  opterr = 0;
  int c;
  // '+': stop at the program name, so that its own options stay its own.
  while (!o.mpirun_args && (c = getopt_long(argc, argv, "+:n:N:x:vqh", longs, nullptr)) != -1) {
    const char* name = argv[optind - 1];
    switch (c) {
      case 'n':
        o.placement.ranks = to_count("-n/--np", optarg);
        break;
      case 'N':
        o.placement.nodes = to_count("-N/--nodes", optarg);
        break;
      case kRanksPerNode:
        o.placement.ranks_per_node = to_count("--ranks-per-node", optarg);
        break;
      case kOversubscribe:
        o.placement.oversubscribe = true;
        break;
      case kNoFt:
        o.fault_tolerance = false;
        break;
      case kDryRun:
        o.dry_run = true;
        break;
      case kNetCheck:
        o.network_check = true;
        break;
      case kNetRatio:
        o.rule.ratio = to_number("--network-check-ratio", optarg, 0.01, 1, "from 0.01 to 1");
        o.network_check = true;
        break;
      case kNetMinBw:
        o.rule.min_link_mbs = to_number("--network-check-min-bw", optarg, 0, 1e9, "of MB/s, 0 or more");
        o.network_check = true;
        break;
      case kNetSeconds:
        o.check_seconds = to_number("--network-check-seconds", optarg, 0.01, 60, "from 0.01 to 60");
        break;
      case kNetTimeout:
        o.check_timeout =
            to_number("--network-check-timeout", optarg, 1, 86400, "of seconds from 1 to 86400");
        break;
      case kNetOnly:
        o.network_check = o.network_check_only = true;
        break;
      case 'x':
        o.extra.insert(o.extra.end(), {"-x", optarg});
        break;
      case kMca:
        if (optind >= argc) throw Fatal{"--mca wants a name and a value: --mca NAME VALUE"};
        o.extra.insert(o.extra.end(), {"--mca", optarg, argv[optind++]});
        break;
      case kMpirunArg:
        o.extra.push_back(optarg);
        break;
      case kMpirun:
        o.mpirun = optarg;
        break;
      case kFailOnLoss:
        o.fail_on_loss = true;
        break;
      case kSpares:
        o.spares = std::string(optarg) == "0" ? 0 : to_count("--spares", optarg);
        break;
      case kExclude:
        try {
          for (auto& n : expand_hostlist(optarg)) o.exclude.push_back(std::move(n));
        } catch (const std::exception& e) {
          throw Fatal{std::string("--exclude '") + optarg + "': " + e.what()};
        }
        break;
      case kExcludeFile:
        o.exclude_file = optarg;
        break;
      case kMpirunArgs:
        o.mpirun_args = true;  // the rest is mpirun's: stop here
        break;
      case kLauncher:
        if (std::string(optarg) != "srun" && std::string(optarg) != "mpirun")
          throw Fatal{"--launcher '" + std::string(optarg) + "': srun or mpirun"};
        o.srun = std::string(optarg) == "srun";
        break;
      case 'v':
        o.verbose = true;
        break;
      case 'q':
        o.quiet = true;
        break;
      case 'h':
        usage(stdout);
        std::exit(0);
      case kVersion:
        std::printf("ringmend-run %s\nbuilt with the MPI of %s\n", RINGMEND_RUN_VERSION,
                    RINGMEND_RUN_MPIEXEC[0] ? RINGMEND_RUN_MPIEXEC : "(no mpirun recorded)");
        std::exit(0);
      case ':':
        throw Fatal{std::string(name) + " needs a value (see ringmend-run --help)"};
      default:
        throw Fatal{"unknown option '" + std::string(name) +
                    "' (see ringmend-run --help; other mpirun options go through --mpirun-arg)"};
    }
  }
  for (int i = optind; i < argc; ++i) o.program.emplace_back(argv[i]);
  if (o.mpirun_args) {
    if (o.srun) throw Fatal{"--mpirun-args and --launcher srun: mpirun's arguments need mpirun"};
    if (o.program.empty()) throw Fatal{"--mpirun-args: no mpirun arguments follow (at least the program)"};
    const PlacementRequest& p = o.placement;
    if (p.ranks || p.nodes || p.ranks_per_node || p.oversubscribe || o.network_check || !o.exclude.empty() ||
        !o.exclude_file.empty() || !o.extra.empty() || o.spares)
      throw Fatal{
          "with --mpirun-args, placement, spares, the network check, --exclude and mpirun options are "
          "written "
          "in mpirun's own arguments after it, not as ringmend-run options (spares: -x RINGMEND_SPARES=S)"};
    return o;
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
  return o;
}

// --- running helper commands ------------------------------------------------

struct Captured {
  int status = -1;  // exit status; -1: could not run or timed out
  std::string output;
};

// In a child after fork(): runs the command (no shell); if that fails, says
// why and exits with `status`.
[[noreturn]] void exec_command(const std::vector<std::string>& cmd, int status) {
  std::vector<char*> av;
  for (const auto& a : cmd) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  ::execv(av[0], av.data());
  std::fprintf(stderr, "ringmend-run: error: cannot run %s: %s\n", av[0], std::strerror(errno));
  ::_exit(status);
}

// Runs argv (no shell) with stdout and stderr captured, for at most `seconds`.
Captured capture(const std::vector<std::string>& args, double seconds) {
  Captured out;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return out;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return out;
  }
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    exec_command(args, 127);
  }
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    out.output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (WIFEXITED(st)) out.status = WEXITSTATUS(st);
  return out;
}

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = p.find(':', start);
    std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";
    if (executable_file(dir + "/" + name)) return dir + "/" + name;
    if (end == std::string::npos) return {};
    start = end + 1;
  }
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string self_directory() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  return directory_of(std::string(buf, static_cast<std::size_t>(n)));
}

std::string real_path(const std::string& p) {
  char* r = ::realpath(p.c_str(), nullptr);
  if (!r) return p;
  std::string s = r;
  std::free(r);
  return s;
}

// --- mpirun and its fault tolerance -------------------------------------------

struct Mpirun {
  std::string path;
  std::string from;     // where the choice came from, for messages
  std::string version;  // "5.0.7"
};

Mpirun find_mpirun(const Options& o) {
  auto checked = [](const std::string& path, const std::string& from) -> Mpirun {
    std::string p = path;
    if (p.find('/') == std::string::npos) {
      p = on_path(path);
      if (p.empty()) throw Fatal{from + " names '" + path + "', which is not on PATH"};
    }
    if (!executable_file(p)) throw Fatal{from + " names '" + path + "', which is not an executable file"};
    return {p, from, {}};
  };
  if (!o.mpirun.empty()) return checked(o.mpirun, "--mpirun");
  if (const char* e = std::getenv("MPIEXEC"); e && *e) return checked(e, "MPIEXEC");
  const std::string built = RINGMEND_RUN_MPIEXEC;
  if (!built.empty() && executable_file(built)) return {built, "the MPI ringmend was built with", {}};
  const std::string found = on_path("mpirun");
  if (!found.empty()) return {found, "PATH", {}};
  throw Fatal{"no mpirun found: MPIEXEC is not set, " +
              (built.empty() ? std::string("no mpirun was recorded when ringmend was built")
                             : "the one ringmend was built with (" + built + ") is gone") +
              ", and there is none on PATH. ringmend needs Open MPI 5 with ULFM (scripts/bootstrap.sh builds "
              "one); point MPIEXEC at its bin/mpirun, or load its module"};
}

// Open MPI, and with `need_ulfm` version 5+ built with the ftmpi extension.
void check_mpirun(Mpirun& m, bool need_ulfm, bool verbose) {
  const Captured v = capture({m.path, "--version"}, 20);
  const std::string first = v.output.substr(0, v.output.find('\n'));
  const auto at = v.output.find("(Open MPI) ");
  if (v.status != 0 || at == std::string::npos)
    throw Fatal{"'" + m.path + "' (from " + m.from + ") is not Open MPI's mpirun" +
                (first.empty() ? std::string() : " (it says: " + first + ")") +
                ". ringmend launches with Open MPI 5 built with ULFM (scripts/bootstrap.sh builds one); set "
                "MPIEXEC to its bin/mpirun"};
  m.version = v.output.substr(at + 11, v.output.find_first_of(" \n", at + 11) - (at + 11));
  if (!need_ulfm) return;
  const int major = std::atoi(m.version.c_str());
  if (major < 5)
    throw Fatal{"'" + m.path + "' is Open MPI " + m.version +
                ", which has no ULFM fault tolerance (it arrived in Open MPI 5.0). Use Open MPI 5 built with "
                "--with-ft=ulfm (set MPIEXEC), or launch without fault tolerance: --no-ft"};
  // ompi_info sits beside mpirun; its mpi_ext list names ftmpi when ULFM is built in.
  std::string info;
  for (const auto& dir : {directory_of(real_path(m.path)), directory_of(m.path)})
    if (executable_file(dir + "/ompi_info")) {
      info = dir + "/ompi_info";
      break;
    }
  if (info.empty()) {
    std::fprintf(stderr, "ringmend-run: warning: no ompi_info beside %s; cannot confirm that it has ULFM\n",
                 m.path.c_str());
    return;
  }
  const Captured i = capture({info, "--parsable"}, 30);
  bool ulfm = false;
  std::size_t pos = 0;
  while (pos < i.output.size()) {
    const std::size_t end = i.output.find('\n', pos);
    const std::string line = i.output.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (line.rfind("options:mpi_ext:", 0) == 0 && line.find("ftmpi") != std::string::npos) ulfm = true;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  if (!ulfm)
    throw Fatal{"'" + m.path + "' is Open MPI " + m.version + " built without ULFM fault tolerance (" + info +
                " --parsable lists no ftmpi extension). Rebuild Open MPI with --with-ft=ulfm "
                "(scripts/bootstrap.sh does), or launch without fault tolerance: --no-ft"};
  if (verbose)
    std::fprintf(stderr, "ringmend-run: %s is Open MPI %s with ULFM\n", m.path.c_str(), m.version.c_str());
}

struct FtArgs {
  std::vector<std::string> args;
  std::string source;
};

// The lines of a settings file (the FT arguments, --exclude-file), trimmed,
// without blank lines and '#' comments; nullopt when it cannot be opened.
std::optional<std::vector<std::string>> read_lines_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    const auto e = line.find_last_not_of(" \t\r");
    out.push_back(line.substr(b, e - b + 1));
  }
  return out;
}

// The one list of FT arguments: the installed file (so that a site can
// adapt it without rebuilding), in the build tree the source file, else the
// copy compiled in from that same file.
FtArgs fault_tolerance_args(const std::string& self_dir) {
  std::vector<std::string> candidates;
  if (const char* e = std::getenv("RINGMEND_FT_ARGS_FILE"); e && *e) {
    auto a = read_lines_file(e);
    if (!a) throw Fatal{std::string("RINGMEND_FT_ARGS_FILE='") + e + "' cannot be read"};
    if (a->empty()) throw Fatal{std::string("RINGMEND_FT_ARGS_FILE='") + e + "' holds no arguments"};
    return {*a, e};
  }
  candidates.push_back(self_dir + "/" RINGMEND_RUN_BIN_TO_DATA "/ft_mpirun_args.txt");
  if (real_path(self_dir) == real_path(RINGMEND_RUN_BUILD_DIR))
    candidates.push_back(RINGMEND_RUN_FT_ARGS_SOURCE);
  for (const auto& c : candidates)
    if (auto a = read_lines_file(c); a && !a->empty()) return {*a, real_path(c)};
  return {std::vector<std::string>(RINGMEND_RUN_FT_ARGS), "the copy built into ringmend-run"};
}

std::string find_netcheck(const std::string& self_dir) {
  if (const char* e = std::getenv("RINGMEND_NETCHECK"); e && *e) {
    if (!executable_file(e))
      throw Fatal{std::string("RINGMEND_NETCHECK='") + e + "' is not an executable file"};
    return e;
  }
  for (const auto& c :
       {self_dir + "/ringmend-netcheck", self_dir + "/" RINGMEND_RUN_BIN_TO_LIBEXEC "/ringmend-netcheck"})
    if (executable_file(c)) return real_path(c);
  throw Fatal{"the network check program ringmend-netcheck is missing (looked beside ringmend-run and in " +
              real_path(self_dir + "/" RINGMEND_RUN_BIN_TO_LIBEXEC) + ")"};
}

// ringmend-rank, which starts each rank and reports how it ended.
std::string find_rank_launcher(const std::string& self_dir) {
  for (const auto& c :
       {self_dir + "/ringmend-rank", self_dir + "/" RINGMEND_RUN_BIN_TO_LIBEXEC "/ringmend-rank"})
    if (executable_file(c)) return real_path(c);
  throw Fatal{"ringmend-rank is missing (looked beside ringmend-run and in " +
              real_path(self_dir + "/" RINGMEND_RUN_BIN_TO_LIBEXEC) + ")"};
}

void check_program(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    struct stat st {};
    if (::stat(program.c_str(), &st) != 0)
      throw Fatal{"the program '" + program + "' does not exist (build it first, or check the path)"};
    if (S_ISDIR(st.st_mode)) throw Fatal{"the program '" + program + "' is a directory"};
    if (::access(program.c_str(), X_OK) != 0) throw Fatal{"the program '" + program + "' is not executable"};
    return;
  }
  if (on_path(program).empty())
    throw Fatal{"the program '" + program + "' is not on PATH (give a path, e.g. ./" + program + ")"};
}

int local_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

// The runtime's settings (RINGMEND_TIMEOUT, RINGMEND_FAULT, ...) for -x.
// Under Slurm and on this machine the ranks inherit the environment anyway;
// -x also carries them where mpirun starts daemons another way. The
// variables that describe the installation stay out of the command.
std::vector<std::string> ringmend_variables() {
  static const char* const kNotForRanks[] = {"RINGMEND_ROOT",    "RINGMEND_VERSION",      "RINGMEND_MPI",
                                             "RINGMEND_MPIEXEC", "RINGMEND_FT_ARGS_FILE", "RINGMEND_NETCHECK",
                                             "RINGMEND_RUN"};
  std::vector<std::string> names;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "RINGMEND_", 9) == 0) {
      const char* eq = std::strchr(*e, '=');
      std::string name(*e, eq ? static_cast<std::size_t>(eq - *e) : std::strlen(*e));
      if (std::none_of(std::begin(kNotForRanks), std::end(kNotForRanks),
                       [&](const char* n) { return name == n; }))
        names.push_back(std::move(name));
    }
  std::sort(names.begin(), names.end());
  return names;
}

// --- the network check ----------------------------------------------------------

volatile sig_atomic_t g_child_group = 0;

void forward_signal(int sig) {
  if (g_child_group > 0) ::kill(-g_child_group, sig);
}

// The check's own mpirun command: one rank on each of `nodes`.
std::vector<std::string> network_check_command(const std::vector<std::string>& nodes,
                                               const CommandOptions& base, const Options& o,
                                               const std::string& self_dir) {
  Placement one_each;
  for (const auto& n : nodes) one_each.hosts.push_back({n, 1});
  one_each.ranks = static_cast<int>(nodes.size());
  CommandOptions c = base;
  c.cpus_per_task = 1;
  c.oversubscribe = false;
  c.forward_env.clear();
  char ratio[32], floor[32], secs[32];
  std::snprintf(ratio, sizeof ratio, "--ratio=%g", o.rule.ratio);
  std::snprintf(floor, sizeof floor, "--min-bw=%g", o.rule.min_link_mbs);
  std::snprintf(secs, sizeof secs, "--seconds=%g", o.check_seconds);
  c.program = {find_netcheck(self_dir), "--nodes=" + compress_hostlist(nodes), ratio, floor, secs};
  return mpirun_command(one_each, c);
}

// Runs the check on `nodes`, prints its table, returns its verdict.
NetcheckReport run_network_check(const std::vector<std::string>& nodes, const CommandOptions& base,
                                 const Options& o, const std::string& self_dir) {
  const auto cmd = network_check_command(nodes, base, o, self_dir);
  if (!o.quiet) std::fprintf(stderr, "ringmend-run: network check: %s\n", shell_join(cmd).c_str());
  std::fflush(stdout);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Fatal{"network check: pipe failed"};
  const pid_t pid = ::fork();
  if (pid < 0) throw Fatal{"network check: fork failed"};
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(fds[1], 1);
    exec_command(cmd, 127);
  }
  ::setpgid(pid, pid);
  g_child_group = pid;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::close(fds[1]);

  NetcheckReport report;
  std::string pending;
  const auto start = std::chrono::steady_clock::now();
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed > o.check_timeout) {
      timed_out = true;
      ::kill(-pid, SIGTERM);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    pending.append(buf, static_cast<std::size_t>(n));
    for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, nl + 1);
      pending.erase(0, nl + 1);
      if (!parse_result_line(line, report)) std::fputs(line.c_str(), stdout);
    }
    std::fflush(stdout);
  }
  ::close(fds[0]);
  int st = 0;
  for (int waited = 0; ::waitpid(pid, &st, WNOHANG) == 0; ++waited) {
    if (waited == 50) ::kill(-pid, SIGKILL);
    ::usleep(100000);
  }
  g_child_group = 0;
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  if (timed_out)
    throw Fatal{"the network check did not finish within " +
                std::to_string(static_cast<int>(o.check_timeout)) +
                " s (--network-check-timeout); a node or the network between them may be down"};
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || (report.nodes.empty() && report.error.empty()))
    throw Fatal{"the network check failed (mpirun exit status " +
                std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)) +
                "); its output is above"};
  if (!report.error.empty()) throw Fatal{"network check: " + report.error};
  return report;
}

// --- the job ----------------------------------------------------------------

volatile sig_atomic_t g_job = 0;

// Signals sent to ringmend-run by a process (kill, scancel) go on to mpirun;
// those from the terminal (Ctrl-C) reached mpirun already, as it shares
// the terminal's process group.
void forward_to_job(int sig, siginfo_t* info, void*) {
  if (g_job > 0 && info->si_code <= 0) ::kill(g_job, sig);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Runs mpirun with its stderr through this process, which takes the rank
// records out of it; returns the job's exit status after the summary.
int run_job(const std::vector<std::string>& cmd, int ranks, std::vector<std::string> member_hosts,
            const Options& o) {
  const double job_start = wall_seconds();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Fatal{std::string("pipe: ") + std::strerror(errno)};
  const pid_t pid = ::fork();
  if (pid < 0) throw Fatal{std::string("fork: ") + std::strerror(errno)};
  if (pid == 0) {
    ::dup2(fds[1], 2);
    exec_command(cmd, 2);
  }
  g_job = pid;
  struct sigaction sa {};
  sa.sa_sigaction = forward_to_job;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  ::sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) ::sigaction(sig, &sa, nullptr);
  // A reader of this process's stderr that went away must not end it
  // before mpirun: the job goes on, its output is lost.
  ::signal(SIGPIPE, SIG_IGN);
  ::close(fds[1]);

  // srun waits for the step daemon of a lost node until Slurm declares the
  // node down (SlurmdTimeout, minutes), while the ranks on the other nodes
  // are long done. Once the job is over for the ranks that can still say
  // so, the ranks that have not reported within a grace period are taken
  // as lost with their node, and srun is ended. Over means: a rank
  // finished (not one released early: the others go on); or Slurm ended
  // the step (a task died before it left PMIx);
  // or a rank's start-up failed, the others' then ending within their own
  // start-up bound (RINGMEND_START_TIMEOUT).
  constexpr double kSrunGraceSeconds = 10;
  double over_at = 0, grace = kSrunGraceSeconds;
  bool srun_ended = false;
  const auto job_over = [&](double extra) {
    if (over_at == 0) over_at = wall_seconds(), grace = kSrunGraceSeconds + extra;
  };
  double start_bound = 120;
  if (const char* t = std::getenv("RINGMEND_START_TIMEOUT")) start_bound = std::max(0.0, std::atof(t));
  std::vector<RankRecord> records;
  std::vector<std::string> lost_nodes;
  std::string pending;
  auto pass_on = [&](std::string_view line) {
    if (auto node = lost_daemon_node(line);
        node && std::find(lost_nodes.begin(), lost_nodes.end(), *node) == lost_nodes.end())
      lost_nodes.push_back(*node);
    if (o.srun && (line.find("srun: Force Terminated") != std::string_view::npos ||
                   (line.find("*** STEP ") != std::string_view::npos &&
                    line.find(" CANCELLED AT ") != std::string_view::npos)))
      job_over(0);
    if (auto taken = take_record(line)) {
      if (taken->record.runtime_finished() && !taken->record.released()) job_over(0);
      const RankRecord& r = taken->record;
      // A start-up that failed (not a process killed: the others go on).
      if (r.start_timed_out() || r.mpi_init_failed() ||
          (r.how == RankRecord::End::Exited && r.runtime_used() && !r.runtime_started() &&
           !r.unadmitted_spare()))
        job_over(start_bound);
      records.push_back(std::move(taken->record));
      if (!taken->text_before.empty()) {
        const std::string text = taken->text_before + "\n";
        std::fputs(text.c_str(), stderr);
      }
    } else {
      std::fwrite(line.data(), 1, line.size(), stderr);
    }
  };
  char buf[65536];
  for (;;) {
    if (o.srun && !srun_ended) {
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, 1000) == 0) {
        if (over_at > 0 && wall_seconds() - over_at > grace && static_cast<int>(records.size()) < ranks) {
          std::fprintf(
              stderr,
              "ringmend-run: %d of %d ranks had not reported %.0f s after the job was over for the "
              "others (lost with their node: srun waits for Slurm to declare it down); ending srun\n",
              ranks - static_cast<int>(records.size()), ranks, grace);
          ::kill(pid, SIGKILL);
          srun_ended = true;
        }
        continue;
      }
    }
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t from = 0;
    for (std::size_t nl; (nl = pending.find('\n', from)) != std::string::npos; from = nl + 1)
      pass_on(std::string_view(pending).substr(from, nl + 1 - from));
    pending.erase(0, from);
    std::fflush(stderr);
  }
  if (!pending.empty()) pass_on(pending);
  ::close(fds[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  g_job = 0;

  JudgeOptions j;
  j.ranks_started = ranks;
  j.mpirun_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  j.fail_on_loss = o.fail_on_loss;
  j.job_start = job_start;
  j.job_end = wall_seconds();
  j.member_hosts = std::move(member_hosts);
  j.lost_nodes = lost_nodes;
  const Verdict v = judge(std::move(records), j);
  std::fflush(stdout);
  for (std::size_t i = 0; i < v.lines.size(); ++i)
    std::fprintf(stderr, "ringmend-run: %s%s\n", i == 0 ? "summary: " : "", v.lines[i].c_str());
  if (!lost_nodes.empty() && !o.exclude_file.empty()) {
    // The next launch from the same batch script leaves them out.
    std::ofstream out(o.exclude_file, std::ios::app);
    for (const auto& n : lost_nodes) out << n << '\n';
    if (!out)
      std::fprintf(stderr, "ringmend-run: warning: cannot add the lost node to %s\n", o.exclude_file.c_str());
  }
  return v.exit_status;
}

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
  return run_job(cmd, ranks_in_mpirun_args(o.program, executable_file), {}, o);
}

int run(int argc, char** argv) {
  Options o = parse(argc, argv);
  const std::string self_dir = self_directory();

  SlurmEnvironment env;
  try {
    env = read_slurm_environment();
  } catch (const EnvironmentError& e) {
    throw Fatal{std::string("cannot read the Slurm allocation: ") + e.what()};
  }
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
  if (!o.network_check_only && !o.mpirun_args) check_program(o.program[0]);
  read_exclude_file(o);
  Mpirun mpirun;
  if (o.srun) {
    mpirun.path = on_path("srun");
    if (mpirun.path.empty()) throw Fatal{"--launcher srun: no srun on PATH"};
    mpirun.from = "PATH";
    use_environment_for_srun(o);
  } else {
    mpirun = find_mpirun(o);
    check_mpirun(mpirun, o.fault_tolerance, o.verbose);
  }
  FtArgs ft;
  if (o.fault_tolerance && !o.srun) ft = fault_tolerance_args(self_dir);
  if (o.verbose && !o.srun) {
    std::fprintf(stderr, "ringmend-run: mpirun: %s (from %s)\n", mpirun.path.c_str(), mpirun.from.c_str());
    if (o.fault_tolerance) std::fprintf(stderr, "ringmend-run: FT arguments from %s\n", ft.source.c_str());
  }

  if (o.mpirun_args) return run_mpirun_args(o, mpirun, ft, self_dir);

  CommandOptions c;
  c.mpirun = mpirun.path;
  c.as_root = ::geteuid() == 0;
  c.ft_args = ft.args;
  c.oversubscribe = o.placement.oversubscribe;
  c.forward_env = ringmend_variables();
  c.extra = o.extra;
  c.program = o.program;
  if (!o.network_check_only) c.program.insert(c.program.begin(), find_rank_launcher(self_dir));

  Placement placement;
  std::string where;
  if (env.allocation) {
    const Allocation& a = *env.allocation;
    c.cpus_per_task = a.cpus_per_task;
    std::vector<NodeSlots> nodes;
    for (std::size_t i = 0; i < a.nodes.size(); ++i) nodes.push_back({a.nodes[i], a.slots[i]});
    std::vector<std::string> excluded;
    auto leave_out_excluded = [&] {
      std::erase_if(nodes, [&](const NodeSlots& n) {
        return std::find(excluded.begin(), excluded.end(), n.name) != excluded.end();
      });
    };
    for (const auto& n : o.exclude) {
      if (std::none_of(nodes.begin(), nodes.end(), [&](const NodeSlots& s) { return s.name == n; }))
        std::fprintf(stderr, "ringmend-run: note: --exclude names %s, which is not in the allocation\n",
                     n.c_str());
      else if (std::find(excluded.begin(), excluded.end(), n) == excluded.end())
        excluded.push_back(n);
    }
    leave_out_excluded();
    const std::size_t user_excluded = excluded.size();
    if (o.network_check) {
      std::vector<std::string> names;
      for (const auto& n : nodes)
        if (n.count > 0) names.push_back(n.name);
      if (names.size() < 2) {
        std::printf("network check: the allocation has one node; nothing to compare\n");
      } else if (o.dry_run) {
        // A dry run starts nothing: it shows the check, and the command for
        // the case where every node passes.
        std::printf(
            "# network check (not run by --dry-run; it may leave nodes out of the command below):\n# %s\n",
            shell_join(network_check_command(names, c, o, self_dir)).c_str());
      } else {
        const NetcheckReport report = run_network_check(names, c, o, self_dir);
        for (const auto& v : report.nodes)
          if (v.drop) {
            excluded.push_back(v.node);
            std::fprintf(stderr, "ringmend-run: network check: dropping node %s: %s\n", v.node.c_str(),
                         v.reason.c_str());
          }
        leave_out_excluded();
        if (excluded.size() == user_excluded)
          std::fprintf(stderr, "ringmend-run: network check: every node passed\n");
      }
      std::fflush(stdout);
      if (o.network_check_only) return 0;
    }
    try {
      placement = place_in_allocation(nodes, o.placement, a.slots_source, excluded);
    } catch (const LaunchError& e) {
      throw Fatal{e.what()};
    }
    where = "Slurm job " + a.job_id + ": " + std::to_string(placement.ranks) + " ranks on " +
            host_argument(placement);
    const std::vector<std::string> by_user(excluded.begin(),
                                           excluded.begin() + static_cast<long>(user_excluded));
    const std::vector<std::string> by_check(excluded.begin() + static_cast<long>(user_excluded),
                                            excluded.end());
    if (!by_user.empty()) where += " (" + compress_hostlist(by_user) + " left out: --exclude)";
    if (!by_check.empty()) where += " (" + compress_hostlist(by_check) + " left out by the network check)";
  } else {
    if (!o.exclude.empty())
      throw Fatal{"--exclude leaves out nodes of a Slurm allocation, and this is not one"};
    if (o.network_check) {
      std::printf("network check: not in a Slurm allocation, only this machine; nothing to compare\n");
      std::fflush(stdout);
      if (o.network_check_only) return 0;
    }
    try {
      placement = place_locally(local_cpus(), o.placement);
    } catch (const LaunchError& e) {
      throw Fatal{e.what()};
    }
    where = "not in a Slurm allocation: " + std::to_string(placement.ranks) + " ranks on this machine";
  }
  const std::string ft_text =
      !o.fault_tolerance ? "fault tolerance OFF (--no-ft): a rank failure will end the job"
      : o.srun           ? "fault tolerance on (srun, the native membership: lost nodes are survived)"
                         : "fault tolerance on (Open MPI " + mpirun.version + " with ULFM)";
  const auto cmd = o.srun ? srun_command(placement, c) : mpirun_command(placement, c);
  if (o.dry_run) {
    std::printf("# %s; %s\n%s\n", where.c_str(), ft_text.c_str(), shell_join(cmd).c_str());
    return 0;
  }
  if (!o.quiet) {
    std::fprintf(stderr, "ringmend-run: %s; %s\nringmend-run: %s\n", where.c_str(), ft_text.c_str(),
                 shell_join(cmd).c_str());
    std::fflush(stderr);
  }
  std::fflush(stdout);
  // --map-by slot fills the hosts in order: member i's node.
  std::vector<std::string> member_hosts;
  for (const auto& h : placement.hosts) member_hosts.insert(member_hosts.end(), h.count, h.name);
  return run_job(cmd, placement.ranks, std::move(member_hosts), o);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
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
