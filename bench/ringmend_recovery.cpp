// Recovery from a rank failure, timed from the moment of death.
//
//   ringmend_recovery [--mode ringmend|ulfm] [--init-only] [-r ROUNDS] [-s SIZE]
//                     [--settle N] [--phase start|reduce_scatter]
//                     [--victim middle|last] [--spares S] [--state SIZE]
//                     [--record FILE] [--json FILE]
//
// Each round, after N settle allreduces and a barrier, one rank SIGKILLs
// itself in an allreduce of SIZE bytes (float, sum), the survivors recover
// and complete that allreduce, and every survivor reports:
//
//   --mode ringmend  (the runtime; the kill comes from its fault injector)
//     detect     death -> the survivor starts recovering
//                (= callback time - MembershipChange::recovery_seconds - death)
//     recovery   MembershipChange::recovery_seconds: revoke, shrink, agree
//                and rebuild of the rings (failure noticed -> rebuilt), of which
//       shrink   revoke + MPIX_Comm_shrink (which agrees on the failed set)
//       rebuild  new plan, node shared memory, UCX endpoints, agreement on
//                the new epoch
//     admit      with --spares: a spare admitted in the victim's place
//                (MembershipChange::admit_seconds: a round of the spare
//                pool, the grown epoch, the state sent, an agreement), of
//                which
//       state    the registered state (--state bytes) sent to the joiner
//     reexec     membership-change callback -> the interrupted allreduce
//                returns (its re-execution over the survivors)
//     first      death -> the interrupted allreduce returns
//   --mode ulfm      (plain MPI with ULFM; the victim kills itself before
//                     the allreduce)
//     detect     death -> MPI_Allreduce returns a process-failure error
//     revoke, shrink, allgather, agree
//                MPIX_Comm_revoke, MPIX_Comm_shrink, MPI_Allgather of a
//                member's state (kMemberStateBytes) and MPIX_Comm_agree (one
//                int) on the shrunk communicator, each timed on its own; the
//                last two are the synchronisations a rebuild makes, so
//                allgather + agree is the floor of ringmend's rebuild
//     first      death -> the first MPI_Allreduce on the shrunk
//                communicator returns
//   --init-only      no failure: MPI_Init, ringmend Runtime start, one
//                    allreduce, shutdown (the work of a restarted job)
//
// The moment of death is read from a file to which the victim appends
// "<world rank> <CLOCK_REALTIME seconds>" just before SIGKILL
// (RINGMEND_FAULT_RECORD), so all ranks must see that file and share the
// clock: true on one machine, and on the local two-node cluster.
//
// A round's figure for each phase is the largest over the survivors (the job
// goes on when its slowest member does). World rank 0 is never killed; it
// prints and writes the results.
#include <mpi.h>
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/bench_cli.hpp"
#include "bench/bench_util.hpp"
#include "ringmend/ringmend.hpp"

#if defined(OMPI_HAVE_MPI_EXT_FTMPI) && OMPI_HAVE_MPI_EXT_FTMPI
#define RINGMEND_BENCH_ULFM 1
#else
#define RINGMEND_BENCH_ULFM 0
#endif

namespace {

namespace rb = ringmend::bench;

constexpr const char* kProgram = "ringmend_recovery";
// What a member tells the others in a rebuild (membership::MemberInfo is
// about this size): the payload of the ULFM mode's allgather.
constexpr int kMemberStateBytes = 512;

enum class Mode { Ringmend, Ulfm, InitOnly };

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::Ringmend:
      return "ringmend";
    case Mode::Ulfm:
      return "ulfm";
    case Mode::InitOnly:
      return "init";
  }
  return "?";
}

struct Options {
  Mode mode = Mode::Ringmend;
  int rounds = 1;
  std::size_t bytes = 64 << 10;
  int settle = 20;
  std::string phase = "reduce_scatter";
  std::string victim = "middle";
  int spares = 0;               // the last processes wait as spares (RINGMEND_SPARES)
  std::size_t state_bytes = 0;  // registered state a joiner receives
  std::string record;
  std::string json;
};

Options parse(int argc, char** argv) {
  Options o;
  rb::Cli cli(kProgram,
              "Recovery from a rank failure, timed from the moment of death: each round, after --settle "
              "allreduces and a barrier, one rank SIGKILLs itself in an allreduce of --size bytes (float, "
              "sum), the survivors recover and complete it, and each phase's time (the largest over the "
              "survivors) is printed.",
              "The moment of death is read from a file the victim appends to just before SIGKILL "
              "(RINGMEND_FAULT_RECORD): all ranks must see that file and share the clock. World rank 0 is "
              "never killed. The columns of each mode: bench/README.md, \"Recovery\".");
  cli.add_choice("--mode", o.mode,
                 {{"ringmend", Mode::Ringmend}, {"ulfm", Mode::Ulfm}, {"init", Mode::InitOnly}},
                 "what recovers: the runtime, plain MPI with ULFM, or no failure (as --init-only)")
      ->default_str("ringmend");
  cli.app().add_flag_callback(
      "--init-only", [&o] { o.mode = Mode::InitOnly; },
      "no failure: MPI_Init, Runtime start, one allreduce, shutdown (a restarted "
      "job's work)");
  cli.add_count("-r,--rounds", o.rounds, 1, 1000000, "rounds, each killing one rank (needs N+1 ranks)");
  cli.add_byte_size("-s,--size", o.bytes, sizeof(float), std::size_t{1} << 30,
                    "bytes per rank of the allreduces (rounded down to whole floats)");
  cli.add_count("--settle", o.settle, 0, 1000000, "allreduces before each kill");
  // Later phases may let the survivors complete the call without the victim
  // (then the failure is noticed in a later call).
  cli.add_name("--phase", o.phase, {"start", "reduce_scatter"}, "where the victim dies (ringmend mode)");
  cli.add_name("--victim", o.victim, {"middle", "last"}, "which rank of the current membership dies");
  cli.add_count("--spares", o.spares, 0, 1000000,
                "the last S processes wait as spares; one replaces each victim")
      ->type_name("S");
  cli.add_byte_size("--state", o.state_bytes, 0, std::size_t{1} << 30,
                    "registered state a spare receives when it joins");
  cli.add_file("--record", o.record, "the record file of the times of death (default: a temporary file)");
  cli.add_json(o.json);
  cli.parse(argc, argv);
  o.bytes = o.bytes / sizeof(float) * sizeof(float);
  return o;
}

double realtime_now() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double steady_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// MPI_Finalize may not return after failures (with plain ULFM it often
// hangs after a shrink); past RINGMEND_FINALIZE_TIMEOUT seconds (default
// `limit`) the process exits with `status`. Results are written by then.
int finalize_bounded(int status, double limit) {
  if (const char* v = std::getenv("RINGMEND_FINALIZE_TIMEOUT"); v && *v) {
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    if (end != v && *end == '\0' && x > 0 && std::isfinite(x)) limit = x;
  }
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock lock(m);
    if (!cv.wait_for(lock, std::chrono::duration<double>(limit), [&] { return done; })) {
      std::fprintf(stderr, "%s: MPI_Finalize did not return within %.0f s; exiting\n", kProgram, limit);
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(status);
    }
  });
  MPI_Finalize();
  {
    std::lock_guard lock(m);
    done = true;
  }
  cv.notify_one();
  watchdog.join();
  return status;
}

// The world rank each round kills: the middle (or last) member of the
// membership left by the rounds before; never world rank 0.
std::vector<int> choose_victims(int n, int rounds, const std::string& policy) {
  std::vector<int> members(static_cast<std::size_t>(n));
  std::iota(members.begin(), members.end(), 0);
  std::vector<int> out;
  for (int k = 0; k < rounds; ++k) {
    const std::size_t at = policy == "last" ? members.size() - 1 : members.size() / 2;
    out.push_back(members[at]);
    members.erase(members.begin() + static_cast<std::ptrdiff_t>(at));
  }
  return out;
}

// The time of death of `victim` in the record file (its last entry), or
// nothing if the file has none.
std::optional<double> death_time(const std::string& path, int victim) {
  std::ifstream in(path);
  std::optional<double> t;
  int w = -1;
  double s = 0;
  while (in >> w >> s)
    if (w == victim) t = s;
  return t;
}

void record_death(const std::string& path, int world_rank) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  char line[96];
  const int len = std::snprintf(line, sizeof line, "%d %lld.%09ld\n", world_rank,
                                static_cast<long long>(now.tv_sec), now.tv_nsec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    (void)!::write(fd, line, static_cast<std::size_t>(len));
    ::close(fd);
  }
}

// Rank 0 picks the record file (a new temporary one unless given) and every
// rank learns its name. Returns the name and whether rank 0 created it.
std::pair<std::string, bool> agree_record_file(const Options& o, int rank) {
  std::string path = o.record;
  if (path.empty())
    if (const char* env = std::getenv("RINGMEND_FAULT_RECORD"); env && *env) path = env;
  int created = 0;
  std::vector<char> buf(4096, '\0');
  if (rank == 0) {
    if (path.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ringmend_recovery.XXXXXX";
      std::vector<char> name(pattern.begin(), pattern.end());
      name.push_back('\0');
      const int fd = ::mkstemp(name.data());
      if (fd >= 0) {
        ::close(fd);
        path = name.data();
        created = 1;
      } else {
        std::fprintf(stderr, "%s: cannot create a record file in %s: %s\n", kProgram,
                     tmp && *tmp ? tmp : "/tmp", std::strerror(errno));
      }
    }
    std::snprintf(buf.data(), buf.size(), "%s", path.c_str());
  }
  MPI_Bcast(buf.data(), static_cast<int>(buf.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Bcast(&created, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return {std::string(buf.data()), created != 0};
}

// ------------------------------------------------------------ results

struct Metric {
  std::string name;                   // JSON key stem, e.g. "detect" -> detect_ms
  double max = 0, min = 0, mean = 0;  // over the survivors, milliseconds
};

struct Round {
  int round = 0, victim = -1, ranks_before = 0, ranks_after = 0;
  bool death_time_known = false, ok = true;
  long wrong = 0;
  std::vector<Metric> metrics;
};

// Per-survivor values -> max/min/mean over survivors; `reduce` performs an
// allreduce (max or sum) of doubles over the survivors. The last entry of
// the max vector carries a "something went wrong" flag, the sum vector the
// wrong-element count.
template <class Reduce>
void summarize(Round& row, const std::vector<std::string>& names, const std::vector<double>& mine, bool bad,
               long wrong, int survivors, Reduce&& reduce) {
  const std::size_t k = names.size();
  std::vector<double> mx(2 * k + 1), sum(k + 1);
  for (std::size_t i = 0; i < k; ++i) {
    mx[i] = mine[i];
    mx[k + i] = -mine[i];
    sum[i] = mine[i];
  }
  mx[2 * k] = bad ? 1.0 : 0.0;
  sum[k] = static_cast<double>(wrong);
  reduce(mx, true);
  reduce(sum, false);
  row.metrics.clear();
  for (std::size_t i = 0; i < k; ++i)
    row.metrics.push_back({names[i], mx[i], -mx[k + i], sum[i] / survivors});
  row.ok = mx[2 * k] == 0.0;
  row.wrong = std::lround(sum[k]);
}

void print_header(const Options& o, int n, const std::vector<std::string>& names) {
  std::printf("# ringmend recovery benchmark (ringmend %s, %s, %d ranks, %d round(s))\n", ringmend::version(),
              mode_name(o.mode), n, o.rounds);
  if (o.mode == Mode::Ringmend)
    std::printf("# a rank SIGKILLs itself in phase %s of a %zu-byte float allreduce after %d settle calls\n",
                o.phase.c_str(), o.bytes, o.settle);
  else
    std::printf("# a rank SIGKILLs itself before a %zu-byte MPI_Allreduce (float) after %d settle calls\n",
                o.bytes, o.settle);
  std::printf("# times in ms from the victim's death, largest over the survivors\n");
  std::printf("%-8s%8s%8s", "# Round", "Victim", "Ranks");
  for (const auto& name : names) std::printf("%14s", (name + "(ms)").c_str());
  std::printf("%8s\n", "#wrong");
  std::fflush(stdout);
}

void print_round(const Round& r) {
  std::printf("%-8d%8d%5d->%-2d", r.round, r.victim, r.ranks_before, r.ranks_after);
  for (const auto& m : r.metrics) {
    const bool from_death = m.name == "detect" || m.name == "first";
    if (from_death && !r.death_time_known)
      std::printf("%14s", "n/a");
    else
      std::printf("%14.2f", m.max);
  }
  std::printf("%8ld%s\n", r.wrong, r.ok ? "" : "  FAILED");
  std::fflush(stdout);
}

void print_summary(const std::vector<Round>& rows) {
  if (rows.size() < 2) return;
  const std::size_t k = rows.front().metrics.size();
  for (const char* stat : {"min", "avg", "max"}) {
    std::printf("%-8s%8s%8s", (std::string("# ") + stat).c_str(), "", "");
    for (std::size_t i = 0; i < k; ++i) {
      std::vector<double> v;
      for (const auto& r : rows) v.push_back(r.metrics[i].max);
      double x = 0;
      if (std::string(stat) == "min")
        x = *std::min_element(v.begin(), v.end());
      else if (std::string(stat) == "max")
        x = *std::max_element(v.begin(), v.end());
      else
        x = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
      std::printf("%14.2f", x);
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

// The result file of a recovery run: the options in effect (`fault_spec`:
// the rule the ringmend mode set), one row per round, and min/avg/max over
// the rounds of each round's figure.
rb::Json recovery_json(const rb::RunInfo& info, const Options& o, const std::string& record,
                       const std::optional<std::string>& fault_spec, const std::vector<Round>& rows) {
  rb::Json parameters = {{"mode", mode_name(o.mode)}, {"rounds", o.rounds}, {"size", o.bytes},
                         {"type", "float32"},         {"op", "sum"},        {"settle", o.settle}};
  if (o.mode == Mode::Ringmend) parameters["phase"] = o.phase;
  parameters["victim_policy"] = o.victim;
  parameters["spares"] = o.spares;
  parameters["state_bytes"] = o.state_bytes;
  if (fault_spec) parameters["fault_spec"] = *fault_spec;
  parameters["record_file"] = record;

  // detect and first are counted from the death: unknown without its time.
  const auto known = [](const Round& r, const Metric& m) {
    return (m.name != "detect" && m.name != "first") || r.death_time_known;
  };
  rb::Json json_rows = rb::Json::array();
  for (const auto& r : rows) {
    rb::Json row = {{"round", r.round},
                    {"mode", mode_name(o.mode)},
                    {"victim_world_rank", r.victim},
                    {"ranks_before", r.ranks_before},
                    {"ranks_after", r.ranks_after},
                    {"death_time_known", r.death_time_known}};
    for (const auto& m : r.metrics) {
      const auto value = [&](double v) { return known(r, m) ? rb::Json(v) : rb::Json(nullptr); };
      row[m.name + "_ms"] = value(m.max);
      row[m.name + "_ms_survivor_min"] = value(m.min);
      row[m.name + "_ms_survivor_mean"] = value(m.mean);
    }
    row["wrong"] = r.wrong;
    row["ok"] = r.ok;
    json_rows.push_back(std::move(row));
  }
  rb::Json summary = rb::Json::object();
  for (std::size_t i = 0; !rows.empty() && i < rows.front().metrics.size(); ++i) {
    std::vector<double> v;
    for (const auto& r : rows)
      if (known(r, r.metrics[i])) v.push_back(r.metrics[i].max);
    rb::Json stat = {{"min", nullptr}, {"avg", nullptr}, {"max", nullptr}, {"rounds", v.size()}};
    if (!v.empty()) {
      stat["min"] = *std::min_element(v.begin(), v.end());
      stat["avg"] = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
      stat["max"] = *std::max_element(v.begin(), v.end());
    }
    summary[rows.front().metrics[i].name + "_ms"] = std::move(stat);
  }
  return {{"benchmark", "recovery"},
          {"run", rb::run_json(info)},
          {"parameters", parameters},
          {"rows", json_rows},
          {"summary", summary}};
}

long count_wrong(const std::vector<float>& out, double expect) {
  long wrong = 0;
  for (float v : out) wrong += static_cast<double>(v) != expect;
  return wrong;
}

double sum_of_inputs(const std::vector<int>& world_ranks) {
  double s = 0;
  for (int w : world_ranks) s += w + 1;
  return s;
}

// ---------------------------------------------------- mode: ringmend

struct Seen {
  int calls = 0;
  double at = 0, recovery_seconds = 0, shrink_seconds = 0, rebuild_seconds = 0, admit_seconds = 0,
         state_seconds = 0;
  std::vector<int> lost, joined;
};

int run_ringmend(const Options& o, int argc, char** argv) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const int n = world - o.spares;  // members
  if (o.spares < 0 || o.rounds > n - 1) {
    if (rank == 0)
      std::fprintf(stderr, "%s: %d round(s) need at least %d members besides %d spare(s)\n", kProgram,
                   o.rounds, o.rounds + 1, o.spares);
    return 2;
  }
  if (o.spares > 0 && o.phase != "reduce_scatter" && o.phase != "start") {
    if (rank == 0) std::fprintf(stderr, "%s: --spares needs --phase start or reduce_scatter\n", kProgram);
    return 2;
  }
  if (const char* f = std::getenv("RINGMEND_FAULT"); f && *f) {
    if (rank == 0)
      std::fprintf(stderr, "%s: RINGMEND_FAULT is set; this program chooses the failures itself (unset it)\n",
                   kProgram);
    return 2;
  }
  const auto [record, created] = agree_record_file(o, rank);
  if (record.empty()) return 1;

  // Calls per round: settle, barrier, the allreduce that loses a rank, the
  // broadcast of the time of death, two allreduces of the results.
  const std::vector<int> victims = choose_victims(n, o.rounds, o.victim);
  const std::uint64_t per_round = static_cast<std::uint64_t>(o.settle) + 5;
  auto kill_call = [&](int k) { return static_cast<std::uint64_t>(k) * per_round + o.settle + 2; };
  std::string spec;
  for (int k = 0; k < o.rounds; ++k) {
    if (!spec.empty()) spec += ';';
    spec += "rank=" + std::to_string(victims[static_cast<std::size_t>(k)]) +
            ",call=" + std::to_string(kill_call(k)) + ",phase=" + o.phase;
  }
  ::setenv("RINGMEND_FAULT", spec.c_str(), 1);
  ::setenv("RINGMEND_FAULT_RECORD", record.c_str(), 1);
  if (o.spares > 0) ::setenv("RINGMEND_SPARES", std::to_string(o.spares).c_str(), 1);

  rb::JobLayout layout = rb::job_layout(MPI_COMM_WORLD);
  rb::JsonFile json_file;
  if (!o.json.empty()) {
    json_file = rb::open_json_file(MPI_COMM_WORLD, o.json, kProgram);
    if (!json_file.ok) {
      MPI_Comm_free(&layout.node_comm);
      return 2;
    }
  }
  const rb::RunInfo info = rb::run_info(MPI_COMM_WORLD, layout, argc, argv, ringmend::version());
  MPI_Comm_free(&layout.node_comm);

  std::vector<Round> rows;
  int status = 0;
  // The application's state is in memory before the Runtime starts, as a
  // model is, and given to it there (StateBuffer): a spare that joins
  // receives straight into it, and pays neither for a copy after the
  // transfer nor for first touching 64 MiB of fresh pages (which on a
  // virtual machine costs more than the transfer).
  std::vector<std::byte> state(o.state_bytes, std::byte{7});
  std::vector<ringmend::StateBuffer> registered;
  if (!state.empty()) registered.push_back({"state", state.data(), state.size()});
  {
    ringmend::Runtime rt(&argc, &argv, ringmend::Options{}, registered);
    if (!rt.fault_tolerant()) {
      if (rank == 0) std::fprintf(stderr, "%s: %s\n", kProgram, rt.fault_tolerance_status().c_str());
      if (json_file.file) std::fclose(json_file.file);
      return 2;
    }
    ringmend::Communicator& comm = rt.world();
    Seen seen;
    comm.on_membership_change([&](const ringmend::MembershipChange& m) {
      seen.at = realtime_now();
      ++seen.calls;
      seen.recovery_seconds = m.recovery_seconds;
      seen.shrink_seconds = m.shrink_seconds;
      seen.rebuild_seconds = m.rebuild_seconds;
      seen.admit_seconds = m.admit_seconds;
      seen.state_seconds = m.state_seconds;
      seen.lost = m.lost;
      seen.joined = m.joined;
    });
    // A spare admitted in a round resumes it at the allreduce that lost the
    // victim: the round and the state are registered.
    int first_round = 0;
    comm.register_state("round", &first_round, sizeof first_round);
    bool resuming = comm.joined();
    const std::size_t count = o.bytes / sizeof(float);
    std::vector<float> in(count, static_cast<float>(comm.member_id() + 1)), out(count, 0.f);
    std::vector<std::string> names = {"detect", "shrink", "rebuild", "recovery", "reexec", "first"};
    if (o.spares > 0) names.insert(names.begin() + 4, {"admit", "state"});
    if (rank == 0) print_header(o, n, names);

    for (int k = first_round; k < o.rounds; ++k) {
      const int victim = victims[static_cast<std::size_t>(k)];
      Round row;
      row.round = k + 1;
      row.victim = victim;
      row.ranks_before = comm.size();
      const std::vector<int> before = comm.member_ids();
      if (!resuming) {
        first_round = k;  // what a spare admitted in this round resumes
        for (int i = 0; i < o.settle; ++i)
          comm.allreduce(in.data(), out.data(), count, ringmend::DataType::Float32, ringmend::ReduceOp::Sum);
        comm.barrier();
        if (comm.collectives_called() + 1 != kill_call(k))
          throw std::logic_error("collective count " + std::to_string(comm.collectives_called()) +
                                 " does not match the fault rule (call " + std::to_string(kill_call(k)) +
                                 ")");
      }
      seen = Seen{};
      const ringmend::CollectiveResult r =
          comm.allreduce(in.data(), out.data(), count, ringmend::DataType::Float32, ringmend::ReduceOp::Sum);
      const double done = realtime_now();
      row.ranks_after = comm.size();

      // The result: the inputs of the members after the call (survivors and
      // joiners), or everyone's before it if a survivor had completed the
      // call before the failure (then the change shows in the next call).
      const double expect = sum_of_inputs(r.recovered || resuming ? comm.member_ids() : before);
      const long wrong = count_wrong(out, expect);
      const bool replaced = o.spares - k > 0;  // a spare waits for this round's victim
      const bool ok =
          resuming || (r.recovered && r.lost == std::vector<int>{victim} && seen.calls == 1 &&
                       seen.lost == std::vector<int>{victim} && r.joined.size() == (replaced ? 1u : 0u));
      resuming = false;
      if (!ok && rank == 0)
        std::fprintf(stderr,
                     "%s: round %d: expected world rank %d to die and one recovery; recovered=%d, lost %zu "
                     "rank(s), %d recoveries\n",
                     kProgram, k + 1, victim, r.recovered ? 1 : 0, r.lost.size(), seen.calls);

      double died = 0;
      if (rank == 0) died = death_time(record, victim).value_or(0);
      comm.broadcast(&died, sizeof died, 0);
      row.death_time_known = died > 0;
      const double start = seen.at - seen.recovery_seconds - seen.admit_seconds;
      std::vector<double> mine = {row.death_time_known ? (start - died) * 1e3 : 0,
                                  seen.shrink_seconds * 1e3,
                                  seen.rebuild_seconds * 1e3,
                                  seen.recovery_seconds * 1e3,
                                  (done - seen.at) * 1e3,
                                  row.death_time_known ? (done - died) * 1e3 : 0};
      if (o.spares > 0) mine.insert(mine.begin() + 4, {seen.admit_seconds * 1e3, seen.state_seconds * 1e3});
      // A joiner saw no change (it has nothing to time): the survivors' figures stand.
      if (!ok || seen.calls == 0) std::fill(mine.begin(), mine.end(), 0.0);
      summarize(row, names, mine, !ok, wrong, comm.size() - static_cast<int>(seen.joined.size()),
                [&](std::vector<double>& v, bool max) {
                  comm.allreduce(v.data(), v.size(), ringmend::DataType::Float64,
                                 max ? ringmend::ReduceOp::Max : ringmend::ReduceOp::Sum);
                });
      if (rank == 0) print_round(row);
      rows.push_back(row);
      if (!row.ok || row.wrong != 0) {
        status = 1;
        break;
      }
    }
    if (rank == 0) print_summary(rows);
  }

  if (json_file.file) {
    const rb::Json doc = recovery_json(info, o, record, spec, rows);
    if (!rb::finish_json_file(json_file, doc, o.json, kProgram)) status = 1;
  }
  if (rank == 0 && created) std::remove(record.c_str());
  return status;
}

// -------------------------------------------------------- mode: ulfm

#if RINGMEND_BENCH_ULFM
bool is_failure(int rc) {
  int cls = 0;
  MPI_Error_class(rc, &cls);
  return cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_PROC_FAILED_PENDING || cls == MPIX_ERR_REVOKED;
}

std::string mpi_error(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, static_cast<std::size_t>(std::max(len, 0)));
}

bool ft_enabled() {
  int* value = nullptr;
  int found = 0;
  return MPI_Comm_get_attr(MPI_COMM_WORLD, MPIX_FT, &value, &found) == MPI_SUCCESS && found && value &&
         *value;
}

int run_ulfm(const Options& o, int argc, char** argv) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (!ft_enabled()) {
    if (rank == 0)
      std::fprintf(stderr, "%s: fault tolerance is off in this job; launch with scripts/ft-mpirun\n",
                   kProgram);
    return 2;
  }
  if (o.rounds > n - 1) {
    if (rank == 0)
      std::fprintf(stderr, "%s: %d round(s) need at least %d ranks\n", kProgram, o.rounds, o.rounds + 1);
    return 2;
  }
  const auto [record, created] = agree_record_file(o, rank);
  if (record.empty()) return 1;
  const std::vector<int> victims = choose_victims(n, o.rounds, o.victim);

  rb::JobLayout layout = rb::job_layout(MPI_COMM_WORLD);
  rb::JsonFile json_file;
  if (!o.json.empty()) {
    json_file = rb::open_json_file(MPI_COMM_WORLD, o.json, kProgram);
    if (!json_file.ok) {
      MPI_Comm_free(&layout.node_comm);
      return 2;
    }
  }
  const rb::RunInfo info = rb::run_info(MPI_COMM_WORLD, layout, argc, argv, ringmend::version());
  MPI_Comm_free(&layout.node_comm);

  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  std::vector<int> members(static_cast<std::size_t>(n));
  std::iota(members.begin(), members.end(), 0);
  const std::size_t count = o.bytes / sizeof(float);
  std::vector<float> in(count, static_cast<float>(rank + 1)), out(count, 0.f);
  const int count_i = static_cast<int>(count);
  const std::vector<std::string> names = {"detect", "revoke", "shrink", "allgather", "agree", "first"};
  if (rank == 0) print_header(o, n, names);

  std::vector<Round> rows;
  int status = 0;
  for (int k = 0; k < o.rounds; ++k) {
    const int victim = victims[static_cast<std::size_t>(k)];
    Round row;
    row.round = k + 1;
    row.victim = victim;
    row.ranks_before = static_cast<int>(members.size());
    std::string problem;
    for (int i = 0; i < o.settle && problem.empty(); ++i)
      if (int rc = MPI_Allreduce(in.data(), out.data(), count_i, MPI_FLOAT, MPI_SUM, comm); rc != MPI_SUCCESS)
        problem = "settle MPI_Allreduce: " + mpi_error(rc);
    if (problem.empty())
      if (int rc = MPI_Barrier(comm); rc != MPI_SUCCESS) problem = "MPI_Barrier: " + mpi_error(rc);
    if (!problem.empty()) {
      std::fprintf(stderr, "%s: world rank %d, round %d: %s\n", kProgram, rank, k + 1, problem.c_str());
      status = 1;
      break;
    }
    if (rank == victim) {
      record_death(record, rank);
      ::kill(::getpid(), SIGKILL);
    }
    int rc = MPI_Allreduce(in.data(), out.data(), count_i, MPI_FLOAT, MPI_SUM, comm);
    // Whoever sees the failure revokes, so a rank that got through the
    // allreduce (it cannot, lacking the victim's input) fails here.
    if (rc == MPI_SUCCESS) rc = MPI_Barrier(comm);
    const double noticed = realtime_now();
    bool ok = is_failure(rc);
    if (!ok)
      std::fprintf(stderr, "%s: world rank %d: unexpected result: %s\n", kProgram, rank,
                   mpi_error(rc).c_str());
    double t = steady_now();
    MPIX_Comm_revoke(comm);
    const double revoke_s = steady_now() - t;
    MPI_Comm shrunk = MPI_COMM_NULL;
    t = steady_now();
    rc = MPIX_Comm_shrink(comm, &shrunk);
    const double shrink_s = steady_now() - t;
    if (rc != MPI_SUCCESS) {
      std::fprintf(stderr, "%s: world rank %d: MPIX_Comm_shrink: %s\n", kProgram, rank,
                   mpi_error(rc).c_str());
      status = 1;
      break;
    }
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
    // A rebuild synchronises the survivors twice: an allgather of every
    // member's state, then an agreement. These two alone are its floor.
    std::vector<std::byte> state(kMemberStateBytes), states(kMemberStateBytes * members.size());
    t = steady_now();
    rc = MPI_Allgather(state.data(), kMemberStateBytes, MPI_BYTE, states.data(), kMemberStateBytes, MPI_BYTE,
                       shrunk);
    const double allgather_s = steady_now() - t;
    ok = ok && rc == MPI_SUCCESS;
    int flag = 1;
    t = steady_now();
    rc = MPIX_Comm_agree(shrunk, &flag);
    const double agree_s = steady_now() - t;
    ok = ok && rc == MPI_SUCCESS;
    rc = MPI_Allreduce(in.data(), out.data(), count_i, MPI_FLOAT, MPI_SUM, shrunk);
    const double done = realtime_now();
    ok = ok && rc == MPI_SUCCESS;
    MPI_Comm_free(&comm);
    comm = shrunk;
    members.erase(std::find(members.begin(), members.end(), victim));
    int size_now = 0;
    MPI_Comm_size(comm, &size_now);
    ok = ok && size_now == static_cast<int>(members.size());
    row.ranks_after = size_now;
    const long wrong = count_wrong(out, sum_of_inputs(members));

    double died = 0;
    if (rank == 0) died = death_time(record, victim).value_or(0);
    MPI_Bcast(&died, 1, MPI_DOUBLE, 0, comm);
    row.death_time_known = died > 0;
    std::vector<double> mine = {row.death_time_known ? (noticed - died) * 1e3 : 0,
                                revoke_s * 1e3,
                                shrink_s * 1e3,
                                allgather_s * 1e3,
                                agree_s * 1e3,
                                row.death_time_known ? (done - died) * 1e3 : 0};
    summarize(row, names, mine, !ok, wrong, size_now, [&](std::vector<double>& v, bool max) {
      MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, max ? MPI_MAX : MPI_SUM,
                    comm);
    });
    if (rank == 0) print_round(row);
    rows.push_back(row);
    if (!row.ok || row.wrong != 0) {
      status = 1;
      break;
    }
  }
  if (rank == 0) print_summary(rows);
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);

  if (json_file.file) {
    const rb::Json doc = recovery_json(info, o, record, std::nullopt, rows);
    if (!rb::finish_json_file(json_file, doc, o.json, kProgram)) status = 1;
  }
  if (rank == 0 && created) std::remove(record.c_str());
  return status;
}
#else
int run_ulfm(const Options&, int, char**) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    std::fprintf(stderr,
                 "%s: --mode ulfm needs an MPI with ULFM (<mpi-ext.h> with OMPI_HAVE_MPI_EXT_FTMPI)\n",
                 kProgram);
  return 2;
}
#endif

// ---------------------------------------------------- mode: init only

// The work a restarted job repeats: MPI_Init (timed by main), the Runtime's
// start, one allreduce; then shutdown. `mpi_init_s` was measured before.
int run_init_only(const Options& o, int argc, char** argv, double t_main, double mpi_init_s) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (const char* f = std::getenv("RINGMEND_FAULT"); f && *f) {
    if (rank == 0) std::fprintf(stderr, "%s: RINGMEND_FAULT is set; unset it for --init-only\n", kProgram);
    return 2;
  }
  double phases[3] = {mpi_init_s, 0, 0}, worst[3] = {0, 0, 0};
  rb::RunInfo info;
  rb::JsonFile json_file;
  double t = steady_now();
  {
    ringmend::Runtime rt(&argc, &argv);
    phases[1] = steady_now() - t;
    ringmend::Communicator& comm = rt.world();
    const std::size_t count = o.bytes / sizeof(float);
    std::vector<float> in(count, 1.f), out(count, 0.f);
    t = steady_now();
    comm.allreduce(in.data(), out.data(), count, ringmend::DataType::Float32, ringmend::ReduceOp::Sum);
    phases[2] = steady_now() - t;
    const long wrong = count_wrong(out, n);
    if (wrong != 0) std::fprintf(stderr, "%s: rank %d: %ld wrong elements\n", kProgram, rank, wrong);

    // Untimed: what the result file records.
    MPI_Reduce(phases, worst, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    rb::JobLayout layout = rb::job_layout(MPI_COMM_WORLD);
    if (!o.json.empty()) json_file = rb::open_json_file(MPI_COMM_WORLD, o.json, kProgram);
    info = rb::run_info(MPI_COMM_WORLD, layout, argc, argv, ringmend::version());
    MPI_Comm_free(&layout.node_comm);
    t = steady_now();
  }
  const int status = o.json.empty() || json_file.ok ? 0 : 2;
  finalize_bounded(status, 10);
  const double finalize_s = steady_now() - t, total_s = steady_now() - t_main;
  if (rank != 0) return status;

  std::printf("# ringmend start-up (ringmend %s, %d ranks, first allreduce of %zu bytes)\n",
              ringmend::version(), n, o.bytes);
  std::printf("# times in ms; the first three are the largest over the ranks, the others rank 0's\n");
  std::printf("%-8s%16s%18s%20s%16s%16s\n", "# Ranks", "MPI_Init(ms)", "Runtime start(ms)",
              "First allreduce(ms)", "Finalize(ms)", "In process(ms)");
  std::printf("%-8d%16.2f%18.2f%20.2f%16.2f%16.2f\n", n, worst[0] * 1e3, worst[1] * 1e3, worst[2] * 1e3,
              finalize_s * 1e3, total_s * 1e3);
  std::fflush(stdout);
  if (json_file.file) {
    const rb::Json doc = {
        {"benchmark", "startup"},
        {"run", rb::run_json(info)},
        {"parameters", {{"mode", mode_name(o.mode)}, {"size", o.bytes}, {"type", "float32"}}},
        {"rows",
         {{{"ranks", n},
           {"mpi_init_ms", worst[0] * 1e3},
           {"runtime_start_ms", worst[1] * 1e3},
           {"first_allreduce_ms", worst[2] * 1e3},
           {"finalize_ms", finalize_s * 1e3},
           {"in_process_ms", total_s * 1e3}}}}};
    if (!rb::finish_json_file(json_file, doc, o.json, kProgram)) return 1;
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  const double t_main = steady_now();
  const Options o = parse(argc, argv);
  // A dead peer leaves TCP connections behind; writing to one must be an
  // error for a survivor, not SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "%s: MPI_Init_thread failed\n", kProgram);
    return 1;
  }
  const double mpi_init_s = steady_now() - t_main;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (o.mode == Mode::InitOnly) {
    try {
      return run_init_only(o, argc, argv, t_main, mpi_init_s);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
      return finalize_bounded(1, 10);
    }
  }
  int status = 1;
  try {
    status = o.mode == Mode::Ringmend ? run_ringmend(o, argc, argv) : run_ulfm(o, argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    status = 1;
  }
  // The runtime's shutdown is bounded by the same variable (default 10 s);
  // after plain ULFM recovery a hang is common, so wait less.
  return finalize_bounded(status, o.mode == Mode::Ulfm ? 3 : 10);
}
