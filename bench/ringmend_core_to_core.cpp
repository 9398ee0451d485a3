// What moving data between two cores costs on this machine, the three ways
// a shared-memory allreduce could move it (bench/README.md, "Why 1-8 MiB
// stay under 80 % of the bound on one node"):
//
//   local        memcpy between two buffers of one process on one core
//   shm          a process on another core has just rewritten a buffer in
//                shared memory; this one memcpys it out (the runtime's
//                path: every chunk a peer reads was just written by the peer)
//   cma          the other process has just rewritten a buffer of its own
//                private memory; this one reads it with process_vm_readv
//                (a single copy, no segment: Linux cross-memory attach)
//
//   ringmend_core_to_core [-m [MIN:]MAX] [-i ROUNDS] [-x ROUNDS] [--cpus A,B]
//
// kMethod below (the end of --help) says how it measures. No MPI.
#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_cli.hpp"
#include "transport/backoff.hpp"

namespace {

struct Options {
  std::size_t min_bytes = 64 << 10, max_bytes = 16 << 20;
  int rounds = 200;
  std::optional<int> warmup;  // unset: a tenth of the rounds (at least one)
  std::vector<int> cpus;      // the writer's, the reader's
};

constexpr const char* kMethod = R"(Two processes (fork), pinned to two CPUs (default: the first two this
process may use). The writer rewrites the whole buffer, then the reader
reads it, in turns, so every line read is one the other core has just
written, as a gradient is. GB/s of the reader's copy: median [min-max]
over the timed rounds. No MPI. See bench/README.md.)";

Options parse(int argc, char** argv) {
  Options o;
  ringmend::bench::Cli cli("ringmend_core_to_core",
                           "What moving data between two cores costs on this machine: local (memcpy in one "
                           "process), shm (memcpy out of a buffer another core has just written in shared "
                           "memory) and cma (a single copy of it with process_vm_readv).",
                           kMethod);
  cli.add_message_sizes(o.min_bytes, o.max_bytes, 1);
  cli.add_iterations(o.rounds, "timed rounds per size and way")->capture_default_str();
  cli.add_warmup(o.warmup, "warm-up rounds per size and way (default: a tenth of the rounds)");
  cli.add_int_list("--cpus", o.cpus, 0, CPU_SETSIZE - 1, 2, "the writer's CPU and the reader's")
      ->type_name("A,B");
  cli.parse(argc, argv);
  return o;
}

enum Mode { kLocal, kShm, kCma, kModes };
const char* const kModeNames[kModes] = {"local", "shm", "cma"};

// The pages both processes share: the turn counter, where the writer's
// private buffer is (for cma), and the shared buffer (for shm).
struct Shared {
  alignas(128) std::atomic<std::uint64_t> turn{0};
  alignas(128) std::atomic<std::uintptr_t> private_buffer{0};
};

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    std::perror("ringmend_core_to_core: sched_setaffinity");
    std::exit(2);
  }
}

void wait_turn(const Shared& s, std::uint64_t turn) {
  while (s.turn.load(std::memory_order_acquire) < turn) ringmend::transport::cpu_relax();
}

struct Summary {
  double median = 0, min = 0, max = 0;
  std::string error;
};

Summary summarise(std::vector<double> gbps) {
  std::sort(gbps.begin(), gbps.end());
  return {gbps[gbps.size() / 2], gbps.front(), gbps.back(), {}};
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (o.cpus.empty()) {
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    for (int c = 0; c < CPU_SETSIZE && o.cpus.size() < 2; ++c)
      if (CPU_ISSET(c, &set)) o.cpus.push_back(c);
    if (o.cpus.size() < 2) {
      std::fprintf(stderr, "ringmend_core_to_core: needs two CPUs (this process may use one)\n");
      return 2;
    }
  }

  const std::size_t largest = o.max_bytes;
  auto* shared_pages = static_cast<std::byte*>(
      mmap(nullptr, 4096 + largest, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (shared_pages == MAP_FAILED) {
    std::perror("ringmend_core_to_core: mmap");
    return 2;
  }
  auto* s = new (shared_pages) Shared;
  std::byte* shared_buffer = shared_pages + 4096;
  std::vector<std::byte> mine(largest, std::byte{1}), other(largest, std::byte{2});
  std::memset(shared_buffer, 0, largest);

  const pid_t child = fork();
  if (child < 0) {
    std::perror("ringmend_core_to_core: fork");
    return 2;
  }
  const bool reader = child == 0;
  pin(o.cpus[reader ? 1 : 0]);
  if (!reader) s->private_buffer.store(reinterpret_cast<std::uintptr_t>(mine.data()));
  const pid_t writer_pid = reader ? getppid() : 0;
  const int warmup = o.warmup.value_or(std::max(o.rounds / 10, 1));

  if (reader)
    std::printf(
        "# ringmend_core_to_core: reader on CPU %d, writer on CPU %d; GB/s of the reader's copy, "
        "median [min-max] of %d rounds\n%-12s%26s%26s%26s\n",
        o.cpus[1], o.cpus[0], o.rounds, "# Size", kModeNames[kLocal], kModeNames[kShm], kModeNames[kCma]);
  std::uint64_t turn = 0;
  for (std::size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
    Summary result[kModes];
    for (int mode = 0; mode < kModes; ++mode) {
      std::vector<double> gbps;
      for (int round = 0; round < warmup + o.rounds; ++round) {
        // Writer's turn: rewrite the buffer the reader will read.
        if (!reader) {
          if (mode == kShm) std::memset(shared_buffer, round & 0xff, bytes);
          if (mode == kCma) std::memset(mine.data(), round & 0xff, bytes);
          s->turn.store(++turn, std::memory_order_release);
          wait_turn(*s, ++turn);
          continue;
        }
        wait_turn(*s, ++turn);
        const auto t0 = std::chrono::steady_clock::now();
        bool ok = true;
        switch (mode) {
          case kLocal:
            std::memcpy(other.data(), mine.data(), bytes);
            break;
          case kShm:
            std::memcpy(other.data(), shared_buffer, bytes);
            break;
          case kCma: {
            iovec local{other.data(), bytes};
            iovec remote{reinterpret_cast<void*>(s->private_buffer.load()), bytes};
            const ssize_t got = process_vm_readv(writer_pid, &local, 1, &remote, 1, 0);
            if (got != static_cast<ssize_t>(bytes)) {
              result[mode].error = got < 0 ? std::strerror(errno) : "short read";
              ok = false;
            }
            break;
          }
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        asm volatile("" : : "r"(other.data()) : "memory");
        if (ok && round >= warmup) gbps.push_back(static_cast<double>(bytes) / seconds / 1e9);
        s->turn.store(++turn, std::memory_order_release);
      }
      if (reader && !gbps.empty()) result[mode] = summarise(gbps);
    }
    if (!reader) continue;
    std::printf("%-12zu", bytes);
    for (const Summary& r : result) {
      char cell[64];
      if (!r.error.empty())
        std::snprintf(cell, sizeof cell, "(%s)", r.error.c_str());
      else
        std::snprintf(cell, sizeof cell, "%.1f [%.1f-%.1f]", r.median, r.min, r.max);
      std::printf("%26s", cell);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  if (reader) return 0;
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}
