// ringmend-rank: starts one rank of a ringmend-run job and reports how it
// ended (slurm/job_outcome.hpp says why).
//
//   ringmend-rank program [arguments...]
//
// It forks the program (which inherits everything, MPI's environment
// included, and dies with this process), passes on the signals it gets,
// waits and prints one record line on stderr. Then it ends so that MPI's
// launcher draws the right conclusion, which is not always the program's
// own ending (the record keeps that):
//   * killed by a signal: the same signal (a process failure, which the
//     other ranks recover from);
//   * exited N != 0 before its Runtime finished: SIGKILL, for the same
//     reason (mpirun would otherwise end the whole job: a non-zero exit is
//     an error of the job to it, a signal a failure of one process);
//   * its Runtime finished: exit 0, whatever the program's status (mpirun
//     would otherwise end the others while they finalize); ringmend-run
//     takes the status from the record;
//   * otherwise, the program's exit status.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "ringmend/core/options.hpp"
#include "ringmend/core/outcome.hpp"
#include "ringmend/core/progress_record.hpp"
#include "slurm/job_outcome.hpp"
#include "ulfm/launch_environment.hpp"

namespace {

volatile sig_atomic_t g_child = 0;

void pass_on(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The member id of a rank that starts with the job is its MPI_COMM_WORLD
// rank, which the MPI launcher puts in the environment.
int member_from_environment() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(name); v && *v) return std::atoi(v);
  return -1;
}

std::string read_all(int fd) {
  std::string words;
  char buf[1024];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      words.append(buf, static_cast<std::size_t>(n));
      if (words.size() > 16384) break;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EOF, or nothing more now (the program's own children may hold the pipe)
    }
  }
  return words;
}

// A node's shared-memory segment carries its node leader's pid in its name
// (/dev/shm/ringmend-<pid>-..., membership::segment_prefix). The node's
// ranks remove the name once the membership is agreed; but when every rank
// of the node dies in that window, or a rank that created it dies while the
// leader had given up on that epoch, nobody is left to do it but the
// leader's launcher.
void remove_segments_of(pid_t pid) {
  const std::string prefix = "ringmend-" + std::to_string(pid) + "-";
  DIR* dir = ::opendir("/dev/shm");
  if (!dir) return;
  while (const dirent* e = ::readdir(dir))
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) ::unlinkat(::dirfd(dir), e->d_name, 0);
  ::closedir(dir);
}

// RINGMEND_HANG_TIMEOUT as the program reads it (an invalid value is the
// program's to report; the default then).
double hang_timeout_from_environment() {
  const double fallback = ringmend::Settings{}.hang_timeout_seconds;
  const char* v = std::getenv("RINGMEND_HANG_TIMEOUT");
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const double t = std::strtod(v, &end);
  return end && *end == 0 && t >= 0 ? t : fallback;
}

// Whether `pid` is stopped by a signal (a debugger's stop, t, is not counted).
bool stopped(pid_t pid) { return ringmend::progress::process_state(pid) == 'T'; }

// The program's node mates exclude it when it is stuck, and so does this
// launcher for the stuck processes a mate cannot see (docs/recovery.md,
// "Stuck members"): one stopped by a signal, or inside a collective without
// progress, for the hang timeout. Time counts only while this launcher
// runs itself (a job suspended whole, by Slurm's gang scheduling say,
// excludes nobody). Returns when the program has ended; `words` gains
// what the exclusion was.
void supervise(pid_t child, double hang, std::string& words) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  if (pidfd >= 0 && hang > 0) {
    double last = static_cast<double>(ringmend::progress::monotonic_ns()) / 1e9;
    double stopped_for = 0, stuck_for = 0;
    bool was_stopped = false;
    ringmend::progress::StillInCollective in_collective;
    for (;;) {
      pollfd p{pidfd, POLLIN, 0};
      const int n = ::poll(&p, 1, 100);
      if (n > 0) break;  // it ended
      if (n < 0 && errno != EINTR) break;
      const double now = static_cast<double>(ringmend::progress::monotonic_ns()) / 1e9;
      const double dt = now - last;
      last = now;
      if (dt > 1.0) {  // this launcher did not run meanwhile: start again
        stopped_for = stuck_for = 0;
        was_stopped = false;
        in_collective = {};
        continue;
      }
      // From the first look that finds it stopped (it stopped since the
      // look before, at most 100 ms earlier): never before the hang timeout.
      const bool is_stopped = stopped(child);
      stopped_for = is_stopped && was_stopped ? stopped_for + dt : 0;
      was_stopped = is_stopped;
      const auto seen = ringmend::progress::observe(child);
      stuck_for = in_collective.look(seen, dt);
      if (stopped_for < hang && stuck_for < hang) continue;
      std::string why;
      const double idle = std::max(stopped_for, stuck_for);
      if (ringmend::progress::exclude(child, ringmend::progress::kByLauncher, idle, why)) {
        std::fprintf(stderr,
                     "ringmend-rank: pid %d %s for %.1f s (RINGMEND_HANG_TIMEOUT %.1f s): excluded as stuck "
                     "(killed)\n",
                     static_cast<int>(child),
                     stopped_for >= hang ? "stopped by a signal" : "showed no progress in a collective", idle,
                     hang);
        break;
      }
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  // Who excluded it, as its record says (a node mate, or this launcher).
  if (const auto seen = ringmend::progress::observe(child); seen && seen->excluded_by != -1) {
    char text[96];
    std::snprintf(text, sizeof text, " %s=%s %s=%.1f", ringmend::outcome::kExcludedBy,
                  seen->excluded_by == ringmend::progress::kByLauncher
                      ? "launcher"
                      : std::to_string(seen->excluded_by).c_str(),
                  ringmend::outcome::kStuckFor, seen->excluded_after);
    words += text;
  }
}

// The child: the program, with the launcher's pipe and Open MPI's settings.
[[noreturn]] void exec_program(char** program, int report_fd, pid_t parent) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT})
    ::sigaction(sig, &dfl, nullptr);
  // The rank must not outlive its launcher (MPI's daemon kills only this one).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(137);
  const int fd = ::fcntl(report_fd, F_DUPFD, 3);  // without O_CLOEXEC: the program keeps it
  ::setenv(ringmend::outcome::kFdVariable, std::to_string(fd).c_str(), 1);
  // Before the program's MPI_Init (ulfm/launch_environment.hpp says why).
  for (const auto& s : ringmend::ulfm::open_mpi_settings(ringmend::ulfm::process_environment(),
                                                         std::thread::hardware_concurrency()))
    ::setenv(s.variable, s.value, 0);
  ::execvp(program[0], program);
  std::fprintf(stderr, "ringmend-rank: cannot run %s: %s\n", program[0], std::strerror(errno));
  ::_exit(127);
}

// Ends this process as the program ended (its signal, or its status) so
// that mpirun and srun see the rank's own end; a program that exited
// non-zero before its work was done ends as killed.
int end_as_the_program(const ringmend::slurm::RankRecord& r, bool finished) {
  int end_signal = 0;
  if (r.how == ringmend::slurm::RankRecord::End::Signaled)
    end_signal = r.code;
  else if (r.code != 0 && !finished)
    end_signal = SIGKILL;
  else
    return finished ? 0 : r.code;
  // No core file of this process.
  struct rlimit no_core {};
  ::setrlimit(RLIMIT_CORE, &no_core);
  ::signal(end_signal, SIG_DFL);
  ::kill(::getpid(), end_signal);
  return 128 + end_signal;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(argc < 2 ? stderr : stdout,
                 "Usage: ringmend-rank program [arguments...]\n"
                 "Runs one rank of a ringmend-run job and reports how it ended; ringmend-run\n"
                 "inserts it into the mpirun command. Not meant to be run by hand.\n");
    return argc < 2 ? 2 : 0;
  }
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "ringmend-rank: pipe: %s\n", std::strerror(errno));
    return 2;
  }
  ::fcntl(report[0], F_SETFL, O_NONBLOCK);
  ringmend::slurm::RankRecord r;
  r.member = member_from_environment();
  // The node as Slurm names it (what an operator drains), else the host.
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  const char* slurm_node = std::getenv("SLURMD_NODENAME");
  r.host = slurm_node && *slurm_node ? slurm_node : host;
  r.start = now();
  const pid_t parent = ::getpid();

  // Signals that arrive from now on go to the program.
  struct sigaction pass {};
  pass.sa_handler = pass_on;
  ::sigemptyset(&pass.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT})
    ::sigaction(sig, &pass, nullptr);

  const pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "ringmend-rank: fork: %s\n", std::strerror(errno));
    return 2;
  }
  if (child == 0) exec_program(argv + 1, report[1], parent);
  g_child = child;
  r.pid = child;
  ::close(report[1]);
  std::string excluded;
  // Under RINGMEND_HANG_POLICY=fail nobody is excluded: the calls fail.
  const char* policy = std::getenv("RINGMEND_HANG_POLICY");
  const bool exclude = !(policy && std::strcmp(policy, "fail") == 0);
  supervise(child, exclude ? hang_timeout_from_environment() : 0, excluded);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  r.end = now();
  if (WIFSIGNALED(status)) {
    r.how = ringmend::slurm::RankRecord::End::Signaled;
    r.code = WTERMSIG(status);
  } else {
    r.code = WEXITSTATUS(status);
  }
  // A line of the program's own that had no newline yet keeps the record
  // company: ringmend-run separates them.
  std::string words = read_all(report[0]);
  std::replace(words.begin(), words.end(), '\n', ' ');
  words += excluded;
  const std::string line = ringmend::slurm::rank_record(r, words) + "\n";
  const bool finished =
      (" " + words + " ").find(std::string(" ") + ringmend::outcome::kFinished + "=1 ") != std::string::npos;
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
  remove_segments_of(child);
  ringmend::progress::remove_record(child);
  return end_as_the_program(r, finished);
}
