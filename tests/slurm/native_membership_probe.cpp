// A job of the native membership alone, for the namespace cluster's tests
// (tests/slurm/native_membership.sh): started by `srun --mpi=pmix`, every
// task all-gathers "round:member" with every other, round after round,
// checks each result exactly, and recovers whenever the view changes. What
// it prints, one line per event, is what the test checks:
//
//   member 3 of 6 on n2 pid 4242 control 10.77.0.2:40001
//   member 0: view 1 [0 1 4 5] after 12.3 ms (lost [2 3]); round 57 resumed at 1764281234.123456
//   member 0: DONE view 1 [0 1 4 5] rounds 400
//   member 3: FENCED: member 3 was left out of view 1 ...
//
// Exit status: 0 done, 3 a wrong result, 4 fenced, 5 no view decided, 6 start-up failed.
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "membership/native/bootstrap.hpp"
#include "ringmend/core/options.hpp"

using namespace ringmend::membership::native;

namespace {

double wall_clock() {
  timeval tv{};
  ::gettimeofday(&tv, nullptr);
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
}

std::string ids_text(const std::vector<MemberId>& ids) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s + "]";
}

int parse_count(const char* flag, const char* text) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (!*text || *end || v < 1 || v > 100000000) {
    std::fprintf(stderr, "native_membership_probe: %s needs a positive number, not '%s'\n", flag, text);
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 400, pause_ms = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = parse_count("--rounds", argv[++i]);
    } else if (a == "--pause-ms" && i + 1 < argc) {
      pause_ms = parse_count("--pause-ms", argv[++i]);
    } else {
      std::fprintf(stderr, "usage: native_membership_probe [--rounds N] [--pause-ms MS]\n");
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::unique_ptr<Group> group;
  try {
    const ringmend::Settings s = ringmend::Options{}.resolve();
    GroupSettings settings;
    settings.heartbeat_timeout = s.heartbeat_timeout_seconds;
    settings.recovery_timeout = s.recovery_timeout_seconds;
    const char* interface = std::getenv("RINGMEND_CONTROL_INTERFACE");
    group = join_from_pmix(settings, interface ? interface : "");
  } catch (const std::exception& e) {
    std::printf("start-up failed: %s\n", e.what());
    return 6;
  }
  const MemberId me = group->self();
  std::printf("member %d of %zu on %s pid %d\n", me, group->members().size(), ringmend::node_name().c_str(),
              ::getpid());
  try {
    bool resumed = true;
    std::string after;
    for (int round = 0; round < rounds;) {
      auto all = group->allgather(std::to_string(round) + ":" + std::to_string(me), 60);
      if (!all) {
        const auto change = group->recover();
        char line[256];
        std::snprintf(line, sizeof line, "view %llu %s after %.1f ms (lost %s)",
                      static_cast<unsigned long long>(change.epoch), ids_text(group->members()).c_str(),
                      change.seconds * 1e3, ids_text(change.lost).c_str());
        after = line;
        resumed = false;
        // An all-gather is not uniform: some members may have completed the
        // round this one failed. All go on from the furthest round (the
        // runtime hands such a result over instead: a catch-up).
        for (;;) {
          auto rounds_now = group->allgather(std::to_string(round), 60);
          if (rounds_now) {
            for (const std::string& r : *rounds_now) round = std::max(round, std::stoi(r));
            break;
          }
          group->recover();
        }
        continue;
      }
      const auto& members = group->members();
      for (std::size_t i = 0; i < members.size(); ++i)
        if (all->size() != members.size() ||
            (*all)[i] != std::to_string(round) + ":" + std::to_string(members[i])) {
          std::printf("member %d: WRONG result in round %d of view %llu\n", me, round,
                      static_cast<unsigned long long>(group->epoch()));
          return 3;
        }
      if (!resumed) {
        std::printf("member %d: %s; round %d resumed at %.6f\n", me, after.c_str(), round, wall_clock());
        resumed = true;
      }
      ++round;
      const auto pause = std::chrono::steady_clock::now() + std::chrono::milliseconds(pause_ms);
      while (std::chrono::steady_clock::now() < pause) group->progress(pause_ms);
    }
    std::printf("member %d: DONE view %llu %s rounds %d\n", me,
                static_cast<unsigned long long>(group->epoch()), ids_text(group->members()).c_str(), rounds);
    group->allgather("end", 60);  // nobody leaves while another still needs it
    group->leave();
    return 0;
  } catch (const MembershipError& e) {
    const bool fenced = e.kind() == MembershipError::Kind::Fenced;
    std::printf("member %d: %s: %s\n", me, fenced ? "FENCED" : "GAVE UP", e.what());
    return fenced ? 4 : 5;
  }
}
