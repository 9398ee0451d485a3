#include "slurm/run/programs.hpp"

#include <fcntl.h>
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

#include "ringmend_run_config.hpp"
#include "slurm/run/options.hpp"

extern char** environ;

namespace ringmend::slurm::run {
namespace {

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

[[noreturn]] void exec_command(const std::vector<std::string>& cmd, int status) {
  std::vector<char*> av;
  for (const auto& a : cmd) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  ::execv(av[0], av.data());
  std::fprintf(stderr, "ringmend-run: error: cannot run %s: %s\n", av[0], std::strerror(errno));
  ::_exit(status);
}

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

Mpirun find_mpirun(const std::string& given) {
  auto checked = [](const std::string& path, const std::string& from) -> Mpirun {
    std::string p = path;
    if (p.find('/') == std::string::npos) {
      p = on_path(path);
      if (p.empty()) throw Fatal{from + " names '" + path + "', which is not on PATH"};
    }
    if (!executable_file(p)) throw Fatal{from + " names '" + path + "', which is not an executable file"};
    return {p, from, {}};
  };
  if (!given.empty()) return checked(given, "--mpirun");
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

namespace {

// One of ringmend's helper programs: beside ringmend-run (the build tree),
// else in the installation's libexec/ringmend.
std::string find_helper(const std::string& self_dir, const std::string& name) {
  for (const auto& c : {self_dir + "/" + name, self_dir + "/" RINGMEND_RUN_BIN_TO_LIBEXEC "/" + name})
    if (executable_file(c)) return real_path(c);
  throw Fatal{name + " is missing (looked beside ringmend-run and in " +
              real_path(self_dir + "/" RINGMEND_RUN_BIN_TO_LIBEXEC) + ")"};
}

}  // namespace

std::string find_netcheck(const std::string& self_dir) {
  if (const char* e = std::getenv("RINGMEND_NETCHECK"); e && *e) {
    if (!executable_file(e))
      throw Fatal{std::string("RINGMEND_NETCHECK='") + e + "' is not an executable file"};
    return e;
  }
  return find_helper(self_dir, "ringmend-netcheck");
}

std::string find_rank_launcher(const std::string& self_dir) { return find_helper(self_dir, "ringmend-rank"); }

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

}  // namespace ringmend::slurm::run
