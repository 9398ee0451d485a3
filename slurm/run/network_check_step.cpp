#include "slurm/run/network_check_step.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "slurm/hostlist.hpp"
#include "slurm/run/programs.hpp"

namespace ringmend::slurm::run {
namespace {

volatile sig_atomic_t g_child_group = 0;

void forward_signal(int sig) {
  if (g_child_group > 0) ::kill(-g_child_group, sig);
}

}  // namespace

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

}  // namespace ringmend::slurm::run
