// What the native membership's messages cost on this machine, and what a
// view change costs as the group grows: the inputs of the model at 1,000
// and 10,000 processes in docs/membership.md ("Cost at scale").
//
//   native_view_change [-n 4,8,16] [-i R]
//
// No MPI, no launcher: processes forked on this machine, talking over the
// loopback. What it measures: kMeasures below (the end of --help).
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_cli.hpp"
#include "membership/native/group.hpp"
#include "ringmend/core/log.hpp"

using namespace ringmend::membership::native;

namespace {

constexpr const char* kMeasures = R"(  one-way     a frame's one-way delay: half a round trip between two
              processes (10,000 round trips; median)
  send        what sending one small frame to one more connected peer
              costs the sender (a leader's fan-out), per frame
  view change n processes, each its own "node"; after two all-gathers
              (every connection open) they wait, the last one is
              SIGKILLed, and the time from its death to the new view
              installed at every survivor is taken (largest over the
              survivors), R times per group size: min / median / max)";

struct Options {
  std::vector<int> processes{4, 8, 16};
  int repeats = 5;
};

Options parse(int argc, char** argv) {
  Options o;
  ringmend::bench::Cli cli("native_view_change",
                           "What the native membership's messages cost on this machine, and what a view "
                           "change costs as the group grows (the inputs of docs/membership.md's cost model). "
                           "No MPI: processes forked here, over the loopback.",
                           kMeasures);
  cli.add_int_list("-n,--processes", o.processes, 3, 256, 0, "group sizes of the view changes")
      ->type_name("N,...")
      ->default_str("4,8,16");
  cli.add_iterations(o.repeats, "view changes per group size")->capture_default_str();
  cli.parse(argc, argv);
  return o;
}

double wall() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::vector<std::unique_ptr<ControlNet>> open_nets(int n, std::vector<PeerRecord>& view) {
  std::vector<std::unique_ptr<ControlNet>> nets;
  for (int i = 0; i < n; ++i) {
    nets.push_back(std::make_unique<ControlNet>(7, i, "127.0.0.1"));
    view.push_back({i, nets.back()->address(), "node" + std::to_string(i), 0});
  }
  return nets;
}

// Times shared between the forked processes.
struct Shared {
  std::atomic<double> installed[256];
  std::atomic<double> death;
};

// One view change among n processes: returns death -> the last survivor's
// new view, in ms (negative when a survivor did not install it).
double one_view_change(int n) {
  auto* shared = static_cast<Shared*>(
      ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  for (auto& t : shared->installed) t = 0;
  std::vector<PeerRecord> view;
  auto nets = open_nets(n, view);
  std::vector<pid_t> pids;
  int ready[2];
  if (::pipe(ready) != 0) std::abort();
  for (int i = 0; i < n; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(ready[0]);
      for (int j = 0; j < n; ++j)
        if (j != i) nets[static_cast<std::size_t>(j)].reset();
      GroupSettings settings;
      settings.heartbeat_timeout = 5;  // deaths are noticed by their connections here
      settings.recovery_timeout = 20;
      Group g(std::move(nets[static_cast<std::size_t>(i)]), view, settings);
      for (int k = 0; k < 2; ++k)
        if (!g.allgather("x", 20)) ::_exit(3);
      const char one = 1;
      if (::write(ready[1], &one, 1) != 1) ::_exit(3);
      // Idle until the death is noticed (as a member between collectives).
      while (!g.changing()) g.progress(100);
      try {
        g.recover();
      } catch (const std::exception&) {
        ::_exit(4);
      }
      shared->installed[i] = wall();
      g.allgather("end", 20);
      g.leave();
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  ::close(ready[1]);
  nets.clear();
  for (int i = 0; i < n; ++i) {
    char c;
    if (::read(ready[0], &c, 1) != 1) break;
  }
  ::close(ready[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const double death = wall();
  ::kill(pids.back(), SIGKILL);
  double last = 0;
  bool all_installed = true;
  for (int i = 0; i < n; ++i) {
    int status = 0;
    ::waitpid(pids[static_cast<std::size_t>(i)], &status, 0);
    if (i == n - 1) continue;
    const double t = shared->installed[i];
    if (t == 0) all_installed = false;
    last = std::max(last, t);
  }
  ::munmap(shared, sizeof(Shared));
  return all_installed ? (last - death) * 1e3 : -1;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  ringmend::set_log_level(ringmend::LogLevel::Warn);

  // A frame's one-way delay and a fan-out's cost per frame, between two
  // processes (this one and a child that echoes).
  {
    std::vector<PeerRecord> view;
    auto nets = open_nets(2, view);
    const pid_t echo = ::fork();
    if (echo == 0) {
      nets[0].reset();
      Group g(std::move(nets[1]), view, GroupSettings{.heartbeat_timeout = 60});
      for (;;)
        if (!g.allgather("", 60)) ::_exit(0);
    }
    nets[1].reset();
    Group g(std::move(nets[0]), view, GroupSettings{.heartbeat_timeout = 60});
    std::vector<double> rtt;
    for (int k = 0; k < 10000; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      if (!g.allgather("", 60)) break;
      rtt.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    ::kill(echo, SIGKILL);
    ::waitpid(echo, nullptr, 0);
    std::printf("# one-way delay (half an all-gather round trip of two processes): %.1f us median of %zu\n",
                median(rtt) / 2, rtt.size());
  }
  {
    // The sender's cost of one frame to one more peer: 64 peers listening.
    const int peers = 64;
    std::vector<PeerRecord> view;
    auto nets = open_nets(peers + 1, view);
    ControlNet& sender = *nets[0];
    for (int i = 1; i <= peers; ++i) sender.add_peer(i, view[static_cast<std::size_t>(i)].address);
    Frame f;
    f.kind = FrameKind::Heartbeat;
    for (int i = 1; i <= peers; ++i) sender.send(i, f);  // connect first
    const auto turn = [](ControlNet& net) {
      std::vector<pollfd> fds;
      net.pollfds(fds);
      ::poll(fds.data(), fds.size(), 1);
      ControlNet::Events ev;
      net.handle(fds, ev);
    };
    for (int k = 0; k < 1000 && sender.queued_bytes() > 0; ++k) {
      turn(sender);
      for (int i = 1; i <= peers; ++i) turn(*nets[static_cast<std::size_t>(i)]);
    }
    std::vector<double> per_frame;
    for (int k = 0; k < 200; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 1; i <= peers; ++i) sender.send(i, f);
      per_frame.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / peers);
      // Drain the receivers now and then (their buffers are large).
      if (k % 50 == 49)
        for (int i = 1; i <= peers; ++i) turn(*nets[static_cast<std::size_t>(i)]);
    }
    std::printf("# sending one frame to one more connected peer: %.2f us median (%zu bytes left queued)\n",
                median(per_frame), sender.queued_bytes());
  }
  std::printf("# processes   view change after a death (ms): min  median  max  (%d repeats)\n", o.repeats);
  for (int n : o.processes) {
    std::vector<double> t;
    int failed = 0;
    for (int r = 0; r < o.repeats; ++r) {
      const double ms = one_view_change(n);
      if (ms < 0)
        ++failed;
      else
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    if (t.empty()) {
      std::printf("%-12d none installed (%d failed)\n", n, failed);
      continue;
    }
    std::printf("%-12d %8.2f %8.2f %8.2f%s\n", n, t.front(), median(t), t.back(),
                failed ? (" (" + std::to_string(failed) + " failed)").c_str() : "");
  }
  return 0;
}
