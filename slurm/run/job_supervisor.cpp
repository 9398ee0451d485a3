#include "slurm/run/job_supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>

#include "slurm/job_outcome.hpp"
#include "slurm/job_verdict.hpp"
#include "slurm/run/options.hpp"
#include "slurm/run/programs.hpp"

namespace ringmend::slurm::run {
namespace {

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

// Starts the launcher with its stderr into the returned pipe's read end.
int start(const Job& job, pid_t& pid) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Fatal{std::string("pipe: ") + std::strerror(errno)};
  pid = ::fork();
  if (pid < 0) throw Fatal{std::string("fork: ") + std::strerror(errno)};
  if (pid == 0) {
    ::dup2(fds[1], 2);
    exec_command(job.command, 2);
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
  return fds[0];
}

// What the launcher's stderr has said so far: the rank records, the nodes
// whose daemon was lost, and (under srun) whether the job is over for the
// ranks that can still say so.
//
// srun waits for the step daemon of a lost node until Slurm declares the
// node down (SlurmdTimeout, minutes), while the ranks on the other nodes
// are long done. Once the job is over, the ranks that have not reported
// within a grace period are taken as lost with their node, and srun is
// ended. Over means: a rank finished (not one released early: the others go
// on); or Slurm ended the step (a task died before it left PMIx); or a
// rank's start-up failed, the others then ending within their own start-up
// bound (RINGMEND_START_TIMEOUT).
class StderrWatch {
 public:
  explicit StderrWatch(bool srun) : srun_(srun) {
    if (const char* t = std::getenv("RINGMEND_START_TIMEOUT")) start_bound_ = std::max(0.0, std::atof(t));
  }

  void line(std::string_view line) {
    if (auto node = lost_daemon_node(line);
        node && std::find(lost_nodes.begin(), lost_nodes.end(), *node) == lost_nodes.end())
      lost_nodes.push_back(*node);
    if (srun_ && pmix_plugin_ends_step(line)) step_ended_by_pmix = true;
    if (srun_ && (step_ended_by_pmix || line.find("srun: Force Terminated") != std::string_view::npos ||
                  (line.find("*** STEP ") != std::string_view::npos &&
                   line.find(" CANCELLED AT ") != std::string_view::npos)))
      over(0);
    auto taken = take_record(line);
    if (!taken) {
      std::fwrite(line.data(), 1, line.size(), stderr);
      return;
    }
    const RankRecord& r = taken->record;
    if (r.runtime_finished() && !r.released()) over(0);
    // A start-up that failed (not a process killed: the others go on).
    if (r.start_timed_out() || r.mpi_init_failed() ||
        (r.how == RankRecord::End::Exited && r.runtime_used() && !r.runtime_started() &&
         !r.unadmitted_spare()))
      over(start_bound_);
    records.push_back(std::move(taken->record));
    if (!taken->text_before.empty()) std::fputs((taken->text_before + "\n").c_str(), stderr);
  }

  // Under srun: the grace period after the job was over has passed and
  // some of `ranks` have not reported.
  bool missing_ranks_given_up(int ranks) const {
    return over_at_ > 0 && wall_seconds() - over_at_ > grace_ && static_cast<int>(records.size()) < ranks;
  }
  double grace() const { return grace_; }

  std::vector<RankRecord> records;
  std::vector<std::string> lost_nodes;
  bool step_ended_by_pmix = false;  // pmix_plugin_ends_step: Slurm kills every task

 private:
  static constexpr double kSrunGraceSeconds = 10;
  void over(double extra) {
    if (over_at_ == 0) over_at_ = wall_seconds(), grace_ = kSrunGraceSeconds + extra;
  }
  bool srun_;
  double over_at_ = 0, grace_ = kSrunGraceSeconds, start_bound_ = 120;
};

// Reads the launcher's stderr to its end, line by line, into `watch`.
void read_to_end(int fd, pid_t pid, const Job& job, StderrWatch& watch) {
  bool srun_ended = false;
  std::string pending;
  char buf[65536];
  for (;;) {
    if (job.srun && !srun_ended) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 1000) == 0) {
        if (watch.missing_ranks_given_up(job.ranks)) {
          std::fprintf(
              stderr,
              "ringmend-run: %d of %d ranks had not reported %.0f s after the job was over for the "
              "others (lost with their node: srun waits for Slurm to declare it down); ending srun\n",
              job.ranks - static_cast<int>(watch.records.size()), job.ranks, watch.grace());
          ::kill(pid, SIGKILL);
          srun_ended = true;
        }
        continue;
      }
    }
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t from = 0;
    for (std::size_t nl; (nl = pending.find('\n', from)) != std::string::npos; from = nl + 1)
      watch.line(std::string_view(pending).substr(from, nl + 1 - from));
    pending.erase(0, from);
    std::fflush(stderr);
  }
  if (!pending.empty()) watch.line(pending);
  ::close(fd);
}

}  // namespace

int supervise(const Job& job) {
  const double job_start = wall_seconds();
  pid_t pid = 0;
  const int fd = start(job, pid);
  StderrWatch watch(job.srun);
  read_to_end(fd, pid, job, watch);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  g_job = 0;

  JudgeOptions j;
  j.ranks_started = job.ranks;
  j.mpirun_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  j.fail_on_loss = job.fail_on_loss;
  j.job_start = job_start;
  j.job_end = wall_seconds();
  j.member_hosts = job.member_hosts;
  j.lost_nodes = watch.lost_nodes;
  j.step_ended_by_pmix = watch.step_ended_by_pmix;
  const Verdict v = judge(std::move(watch.records), j);
  std::fflush(stdout);
  for (std::size_t i = 0; i < v.lines.size(); ++i)
    std::fprintf(stderr, "ringmend-run: %s%s\n", i == 0 ? "summary: " : "", v.lines[i].c_str());
  if (!watch.lost_nodes.empty() && !job.exclude_file.empty()) {
    // The next launch from the same batch script leaves them out.
    std::ofstream out(job.exclude_file, std::ios::app);
    for (const auto& n : watch.lost_nodes) out << n << '\n';
    if (!out)
      std::fprintf(stderr, "ringmend-run: warning: cannot add the lost node to %s\n",
                   job.exclude_file.c_str());
  }
  return v.exit_status;
}

}  // namespace ringmend::slurm::run
