#include "slurm/job_verdict.hpp"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>

#include "ringmend/core/outcome.hpp"

namespace ringmend::slurm {
namespace {

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", s);
  return text;
}

std::string clock_time(double t) {
  const std::time_t whole = static_cast<std::time_t>(t);
  std::tm tm{};
  ::localtime_r(&whole, &tm);
  char text[32];
  std::snprintf(text, sizeof text, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>((t - static_cast<double>(whole)) * 1000));
  return text;
}

std::string count_of(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// A rank that shut its Runtime down and exited 0 (a program without a
// Runtime: that exited 0).
bool finished_normally(const RankRecord& r) { return r.how == RankRecord::End::Exited && r.code == 0; }

// A survivor that finished its work, then exited non-zero: the
// application's own verdict, which the job's status passes on.
bool survivor_failed(const RankRecord& r) {
  return r.runtime_finished() && r.how == RankRecord::End::Exited && r.code != 0;
}

// What the records say, counted. Each record counts in one class: an
// unadmitted spare, released, finished, failed after its work, or lost.
struct Tally {
  int finished = 0, with_errors = 0, lost = 0, stuck = 0, released = 0, released_stragglers = 0;
  int spares = 0, spares_admitted = 0, spares_unused = 0;
  int survivor_status = 0, lost_status = 0;  // the first non-zero status of each kind
  int killed_starting = 0, start_timeouts = 0, init_failures = 0;
  bool any_started = false, any_runtime = false;
  long epoch = -1, size = -1, recoveries = 0;  // of the finished members, the latest epoch
  std::vector<std::string> notes;              // about single members, in member order
  std::vector<std::string> losses;             // the lost and failed, listed below the notes
};

// The watchdogs that ended a rank, and a crash while starting.
void count_watchdogs(const RankRecord& r, const std::string& where, Tally& t) {
  if (r.runtime_started()) t.any_started = true;
  if (r.runtime_used()) t.any_runtime = true;
  if (r.start_timed_out()) {
    ++t.start_timeouts;
    t.notes.push_back(where + ": start-up did not complete in time; the start-up watchdog ended it " +
                      "(RINGMEND_START_TIMEOUT)");
  }
  if (r.recovery_timed_out())
    t.notes.push_back(where +
                      ": stuck in a call to MPI during a recovery or a change of membership; the recovery "
                      "watchdog ended it (RINGMEND_RECOVERY_TIMEOUT; docs/troubleshooting.md)");
  // A crash is a bug, which another start would meet again: not counted.
  if (r.how == RankRecord::End::Signaled && !r.runtime_started() && !crash_signal(r.code))
    ++t.killed_starting;
}

// A member that ended as a member should: released, or finished.
bool count_finished(const RankRecord& r, const std::string& where, Tally& t) {
  // Found a straggler: the share of their time the others waited for it.
  const std::string straggler = r.word(outcome::kStraggler);
  const std::string waited_for =
      "the others waited for it up to " +
      std::to_string(static_cast<int>(std::strtod(straggler.c_str(), nullptr) * 100 + 0.5)) +
      "% of their time";
  if (r.released() && finished_normally(r)) {  // left the job early on request, then exited 0
    ++t.released;
    if (!straggler.empty()) {
      ++t.released_stragglers;
      t.notes.push_back(where + ": released as a straggler (" + waited_for + ")");
    }
    return true;
  }
  if (!straggler.empty() && finished_normally(r))
    t.notes.push_back(where + ": a straggler (" + waited_for +
                      "), kept: RINGMEND_STRAGGLER_POLICY=release would have released it");
  if (r.finalize_timed_out())
    t.notes.push_back(where + ": MPI_Finalize did not return in time; the shutdown watchdog ended it " +
                      "(RINGMEND_MPI_FINALIZE_TIMEOUT, RINGMEND_FINALIZE_TIMEOUT)");
  if (!finished_normally(r)) return false;
  ++t.finished;
  if (const long errors = r.number(outcome::kErrors, 0); errors > 0) {
    ++t.with_errors;
    t.notes.push_back(where + ": finished, exit status 0, after " +
                      count_of(static_cast<int>(errors), "collective error", "collective errors") +
                      " its application saw");
  }
  if (r.number(outcome::kEpoch, -1) > t.epoch) {
    t.epoch = r.number(outcome::kEpoch, -1);
    t.size = r.number(outcome::kSize, -1);
  }
  t.recoveries = std::max(t.recoveries, r.number(outcome::kRecoveries, 0));
  return true;
}

void count_record(const RankRecord& r, const JudgeOptions& o, Tally& t) {
  const std::string where = "member " + std::to_string(r.member) + " on " + r.host;
  const double after = r.end - (o.job_start > 0 ? o.job_start : r.start);
  count_watchdogs(r, where, t);
  if (r.word(outcome::kSpare) == "1") ++t.spares;
  if (r.word(outcome::kAdmitted) == "1") ++t.spares_admitted;
  if (r.unadmitted_spare()) {  // not a member: neither finished nor lost
    if (r.word(outcome::kSpareUnused) == "1" && finished_normally(r))
      ++t.spares_unused;
    else
      t.losses.push_back("spare " + std::to_string(r.member) + " on " + r.host + ": " + r.how_it_ended() +
                         " before it was needed, " + seconds(after) + " after the start");
    return;
  }
  if (count_finished(r, where, t)) return;
  if (survivor_failed(r)) {
    if (t.survivor_status == 0) t.survivor_status = r.code;
    t.losses.push_back(where + ": finished its work, then exited with status " + std::to_string(r.code));
    return;
  }
  ++t.lost;
  if (!r.word(outcome::kExcludedBy).empty()) ++t.stuck;
  if (r.how == RankRecord::End::Exited && t.lost_status == 0) t.lost_status = r.code;
  if (r.mpi_init_failed()) ++t.init_failures;
  t.losses.push_back(where + ": " + (r.mpi_init_failed() ? "its MPI_Init failed; it " : "") +
                     r.how_it_ended() + (r.runtime_finished() ? " after finishing its work" : "") + ", " +
                     seconds(after) + " after the start (" + clock_time(r.end) + ", pid " +
                     std::to_string(r.pid) + ")");
}

// The members of which no record came: lost, with their node or the job.
void count_missing(const std::vector<bool>& seen, const JudgeOptions& o, Tally& t) {
  for (std::size_t m = 0; m < seen.size(); ++m) {
    if (seen[m]) continue;
    ++t.lost;
    const std::string host = m < o.member_hosts.size() ? o.member_hosts[m] : "";
    const bool node_lost = std::find(o.lost_nodes.begin(), o.lost_nodes.end(), host) != o.lost_nodes.end();
    t.losses.push_back("member " + std::to_string(m) + (host.empty() ? "" : " on " + host) +
                       (node_lost ? ": lost with its node"
                        : !o.lost_nodes.empty()
                            ? ": ended with the job by the MPI runtime"
                            : ": no record of how it ended (its node may have been lost, or "
                              "its launcher killed)"));
  }
}

std::string headline(const Tally& t, const std::string& started) {
  std::string head = started + " ranks started";
  if (t.spares > 0)
    head += " (" + count_of(t.spares, "spare", "spares") + ": " + std::to_string(t.spares_admitted) +
            " admitted, " + std::to_string(t.spares_unused) + " not needed)";
  head += ", " + std::to_string(t.finished - t.with_errors) + " finished normally, ";
  if (t.with_errors > 0) head += std::to_string(t.with_errors) + " finished after collective errors, ";
  if (t.released > 0) {
    head += std::to_string(t.released) + " released";
    if (t.released_stragglers > 0)
      head += " (" + std::to_string(t.released_stragglers) +
              (t.released_stragglers == 1 ? " as a straggler)" : " as stragglers)");
    head += ", ";
  }
  head += std::to_string(t.lost) + " lost";
  if (t.stuck > 0) head += " (" + std::to_string(t.stuck) + " of them excluded as stuck)";
  if (t.epoch >= 0)
    head += "; " + count_of(static_cast<int>(t.recoveries), "recovery", "recoveries") + ", final size " +
            std::to_string(t.size) + " (epoch " + std::to_string(t.epoch) + ")";
  return head;
}

// The exit status and the line that says why.
struct Exit {
  int status;
  std::string why;
};

// The exit rules, in order: the first that applies decides.
using ExitRule = std::optional<Exit> (*)(const Tally&, const JudgeOptions&);

std::optional<Exit> node_lost(const Tally&, const JudgeOptions& o) {
  if (o.lost_nodes.empty()) return std::nullopt;
  std::string nodes;
  for (const auto& n : o.lost_nodes) nodes += (nodes.empty() ? "" : ",") + n;
  return Exit{kExitNodeLost,
              "node " + nodes +
                  " was lost (the MPI runtime lost its daemon there, and Open MPI 5.0 then ends "
                  "the whole job); relaunch on the remaining nodes from the last checkpoint "
                  "(ringmend-run --exclude " +
                  nodes + "; docs/slurm.md)"};
}

std::optional<Exit> a_survivor_failed(const Tally& t, const JudgeOptions&) {
  if (t.survivor_status == 0) return std::nullopt;
  return Exit{t.survivor_status, "a rank that finished its work exited with it"};
}

// MPI cannot survive every death while it starts (Open MPI fails MPI_Init
// on the other ranks, or never reports the death): no rank got as far as
// its first epoch. Nothing ran; the job can simply be rerun.
std::optional<Exit> did_not_start(const Tally& t, const JudgeOptions&) {
  if (t.finished > 0 || !t.any_runtime || t.any_started || (t.killed_starting == 0 && t.start_timeouts == 0))
    return std::nullopt;
  return Exit{kExitStartFailed,
              std::string("the job did not start: ") +
                  (t.killed_starting > 0 ? "a rank died while MPI started, which MPI could not survive"
                                         : "no rank completed its start-up within RINGMEND_START_TIMEOUT") +
                  "; start the job again"};
}

// Under srun, a task that dies before it has left srun's PMIx server makes
// Slurm's PMIx plugin kill the whole step, however far the others got (they
// may have started and run their first calls): nothing of the job is left,
// and it can simply be rerun, as after a failed start.
std::optional<Exit> ended_by_slurm(const Tally& t, const JudgeOptions& o) {
  if (t.finished > 0 || !o.step_ended_by_pmix) return std::nullopt;
  return Exit{kExitStartFailed,
              "Slurm ended the step: a task died before it had left srun's PMIx server, and Slurm's "
              "PMIx plugin then kills every task (docs/slurm.md); start the job again"};
}

// Without a word from ringmend's Runtime nothing says what the ranks were
// doing (a start is told from a run by that word alone).
std::optional<Exit> none_finished(const Tally& t, const JudgeOptions& o) {
  if (t.finished > 0) return std::nullopt;
  return Exit{t.lost_status != 0     ? t.lost_status
              : o.mpirun_status != 0 ? o.mpirun_status
                                     : 1,
              std::string("no rank finished normally") +
                  (t.any_runtime ? ""
                                 : ", and none reported reaching ringmend's Runtime (a program that does not "
                                   "use it, or ranks lost before they started it)")};
}

std::optional<Exit> lost_and_failing_on_loss(const Tally& t, const JudgeOptions& o) {
  if (t.lost == 0 || !o.fail_on_loss) return std::nullopt;
  return Exit{3, "ranks were lost and --fail-on-loss was given"};
}

// "normally" only when it is true: a rank whose application saw collective
// errors (and exited 0 all the same) is named.
std::optional<Exit> finished(const Tally& t, const JudgeOptions&) {
  const std::string normally = t.with_errors ? "" : " normally";
  const std::string errors_seen = t.with_errors == 0 ? std::string()
                                                     : " (" + count_of(t.with_errors, "rank", "ranks") +
                                                           " after collective errors their application saw)";
  if (t.lost > 0)
    return Exit{
        0, "the survivors finished" + normally + " after the job recovered from its losses" + errors_seen};
  return Exit{0, "every rank finished" + normally + errors_seen};
}

constexpr ExitRule kExitRules[] = {
    node_lost,                 // 5: the MPI runtime ended the job with the node
    a_survivor_failed,         // N: the application's own verdict
    ended_by_slurm,            // 4: rerun (before did_not_start: under srun no MPI was starting)
    did_not_start,             // 4: rerun
    none_finished,             // 1, or the first status of a lost rank, or mpirun's
    lost_and_failing_on_loss,  // 3: --fail-on-loss
    finished,                  // 0
};

// Not one record: the ranks' stderr went elsewhere (mpirun's
// --output-filename, for one), none started, or the MPI runtime ended them
// all. Nothing says the job succeeded.
Verdict without_records(const std::string& started, const JudgeOptions& o) {
  Verdict v;
  v.exit_status = o.mpirun_status != 0 ? o.mpirun_status : 1;
  v.lines = {started + " ranks started; no rank reported how it ended",
             "exit status " + std::to_string(v.exit_status) +
                 (o.mpirun_status != 0 ? ": mpirun's" : ": the outcome is unknown") +
                 " (is the ranks' stderr redirected, e.g. by --output-filename?)"};
  return v;
}

}  // namespace

Verdict judge(std::vector<RankRecord> records, const JudgeOptions& o) {
  const std::string started =
      std::to_string(o.ranks_started > 0 ? static_cast<std::size_t>(o.ranks_started) : records.size());
  if (records.empty() && o.lost_nodes.empty()) return without_records(started, o);
  std::sort(records.begin(), records.end(),
            [](const RankRecord& a, const RankRecord& b) { return a.member < b.member; });
  Tally t;
  std::vector<bool> seen(static_cast<std::size_t>(std::max(o.ranks_started, 0)), false);
  for (const RankRecord& r : records) {
    if (r.member < static_cast<int>(seen.size())) seen[static_cast<std::size_t>(r.member)] = true;
    count_record(r, o, t);
  }
  count_missing(seen, o, t);

  Verdict v;
  v.lines.push_back(headline(t, started));
  // The shutdown: from the moment the last rank's Runtime began it (its
  // application's last call was done) to mpirun's exit.
  double last_call = 0;
  for (const RankRecord& r : records)
    if (r.runtime_finished())
      last_call = std::max(last_call, std::strtod(r.word(outcome::kShutdownFrom, "0").c_str(), nullptr));
  if (last_call > 0 && o.job_end >= last_call)
    v.lines.push_back("the job ended " + seconds(o.job_end - last_call) + " after the last rank's last call");
  v.lines.insert(v.lines.end(), t.notes.begin(), t.notes.end());
  for (const auto& l : t.losses) v.lines.push_back("  " + l);
  if (t.init_failures > 0 && t.killed_starting > 0)
    v.lines.push_back(
        "  (a process that dies while MPI starts can make MPI_Init fail on others: MPI cannot "
        "connect them to it)");
  for (ExitRule rule : kExitRules)
    if (const std::optional<Exit> e = rule(t, o)) {
      v.exit_status = e->status;
      v.lines.push_back("exit status " + std::to_string(e->status) + ": " + e->why);
      break;
    }
  return v;
}

}  // namespace ringmend::slurm
