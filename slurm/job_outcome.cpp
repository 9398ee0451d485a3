#include "slurm/job_outcome.hpp"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>

#include "ringmend/core/outcome.hpp"

namespace ringmend::slurm {
namespace {

std::string word(const RankRecord& r, const char* key, const std::string& otherwise = "") {
  auto it = r.words.find(key);
  return it == r.words.end() ? otherwise : it->second;
}

long number(const RankRecord& r, const char* key, long otherwise) {
  const std::string v = word(r, key);
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  return v.empty() || *end ? otherwise : n;
}

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

// A rank that shut its Runtime down and exited 0 (a program without a
// Runtime: that exited 0).
bool finished_normally(const RankRecord& r) { return r.how == RankRecord::End::Exited && r.code == 0; }

// A survivor that finished its work, then exited non-zero: the
// application's own verdict, which the job's status passes on.
bool survivor_failed(const RankRecord& r) {
  return r.runtime_finished() && r.how == RankRecord::End::Exited && r.code != 0;
}

std::string how_it_ended(const RankRecord& r) {
  if (const std::string by = word(r, outcome::kExcludedBy); !by.empty())
    return "excluded as stuck (no progress for " + word(r, outcome::kStuckFor, "?") + " s) by " +
           (by == "launcher" ? std::string("its launcher") : "member " + by) + ", which killed it";
  switch (r.how) {
    case RankRecord::End::Exited:
      return "exited with status " + std::to_string(r.code);
    case RankRecord::End::Signaled:
      if (r.code == SIGKILL) return "killed by SIGKILL";
      if (crash_signal(r.code))
        return "crashed with " + outcome::signal_name(r.code) +
               " (a crash is probably a bug, in the program or in ringmend: its output above may hold "
               "a backtrace)";
      return "ended by " + outcome::signal_name(r.code);
  }
  return "?";
}

}  // namespace

bool RankRecord::runtime_finished() const { return word(*this, outcome::kFinished) == "1"; }
bool RankRecord::finalize_timed_out() const { return word(*this, outcome::kFinalizeTimeout) == "1"; }
bool RankRecord::runtime_used() const { return word(*this, outcome::kRuntime) == "1" || runtime_started(); }
bool RankRecord::runtime_started() const {
  return word(*this, outcome::kStarted) == "1" || runtime_finished();
}
bool RankRecord::start_timed_out() const { return word(*this, outcome::kStartTimeout) == "1"; }
bool RankRecord::recovery_timed_out() const { return word(*this, outcome::kRecoveryTimeout) == "1"; }
bool RankRecord::mpi_init_failed() const { return word(*this, outcome::kMpiInitFailed) == "1"; }
bool RankRecord::unadmitted_spare() const {
  return word(*this, outcome::kSpare) == "1" && word(*this, outcome::kAdmitted) != "1";
}

bool RankRecord::released() const { return word(*this, outcome::kReleased) == "1"; }

bool crash_signal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGABRT ||
         sig == SIGSYS || sig == SIGTRAP;
}

std::string rank_record(const RankRecord& r, const std::string& runtime_words) {
  char head[256];
  const std::string status =
      (r.how == RankRecord::End::Signaled ? "signal:" : "exit:") + std::to_string(r.code);
  std::snprintf(head, sizeof head, " member=%d host=%s pid=%ld start=%.3f end=%.3f status=%s", r.member,
                r.host.empty() ? "?" : r.host.c_str(), r.pid, r.start, r.end, status.c_str());
  std::string line = std::string(kRecordMarker) + head;
  // The Runtime's words, on one line; anything without '=' is dropped.
  std::istringstream in(runtime_words);
  for (std::string w; in >> w;)
    if (w.find('=') != std::string::npos && w.find('=') > 0) line += " " + w;
  return line;
}

std::optional<TakenRecord> take_record(std::string_view line) {
  const std::size_t at = line.find(kRecordMarker);
  if (at == std::string_view::npos) return std::nullopt;
  TakenRecord t;
  t.text_before = std::string(line.substr(0, at));
  std::istringstream in(std::string(line.substr(at + kRecordMarker.size())));
  for (std::string w; in >> w;) {
    const std::size_t eq = w.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    t.record.words[w.substr(0, eq)] = w.substr(eq + 1);
  }
  RankRecord& r = t.record;
  r.member = static_cast<int>(number(r, "member", -1));
  if (r.member < 0) return std::nullopt;  // not one of ours after all
  r.host = word(r, "host", "?");
  r.pid = number(r, "pid", 0);
  r.start = std::strtod(word(r, "start", "0").c_str(), nullptr);
  r.end = std::strtod(word(r, "end", "0").c_str(), nullptr);
  const std::string status = word(r, "status");
  if (status.rfind("signal:", 0) == 0) {
    r.how = RankRecord::End::Signaled;
    r.code = std::atoi(status.c_str() + 7);
  } else if (status.rfind("exit:", 0) == 0) {
    r.code = std::atoi(status.c_str() + 5);
  } else {
    return std::nullopt;
  }
  return t;
}

std::optional<std::string> lost_daemon_node(std::string_view line) {
  const std::size_t daemon = line.find("Remote daemon:");
  if (daemon == std::string_view::npos) return std::nullopt;
  constexpr std::string_view kOnNode = " on node ";
  const std::size_t on = line.find(kOnNode, daemon);
  if (on == std::string_view::npos) return std::nullopt;
  std::string_view name = line.substr(on + kOnNode.size());
  name = name.substr(0, name.find_first_of(" \t\r\n"));
  if (name.empty()) return std::nullopt;
  return std::string(name);
}

Verdict judge(std::vector<RankRecord> records, const JudgeOptions& o) {
  std::string nodes_lost;
  for (const auto& n : o.lost_nodes) nodes_lost += (nodes_lost.empty() ? "" : ",") + n;
  const std::string node_loss_line =
      "exit status " + std::to_string(kExitNodeLost) + ": node " + nodes_lost +
      " was lost (the MPI runtime lost its daemon there, and Open MPI 5.0 then ends the whole job); relaunch "
      "on the remaining nodes from the last checkpoint (ringmend-run --exclude " +
      nodes_lost + "; docs/slurm.md)";
  const std::string started =
      o.ranks_started > 0 ? std::to_string(o.ranks_started) : std::to_string(records.size());
  if (records.empty() && o.lost_nodes.empty()) {
    // Not one record: the ranks' stderr went elsewhere (mpirun's
    // --output-filename, for one), none started, or the MPI runtime ended
    // them all. Nothing says the job succeeded.
    Verdict v;
    v.lines = {started + " ranks started; no rank reported how it ended"};
    v.exit_status = o.mpirun_status != 0 ? o.mpirun_status : 1;
    v.lines.push_back("exit status " + std::to_string(v.exit_status) +
                      (o.mpirun_status != 0 ? ": mpirun's" : ": the outcome is unknown") +
                      " (is the ranks' stderr redirected, e.g. by --output-filename?)");
    return v;
  }
  std::sort(records.begin(), records.end(),
            [](const RankRecord& a, const RankRecord& b) { return a.member < b.member; });
  Verdict v;
  int finished = 0, lost = 0, survivor_status = 0, lost_status = 0, killed_starting = 0, start_timeouts = 0,
      init_failures = 0;
  bool any_started = false, any_runtime = false;
  long epoch = -1, size = -1, recoveries = 0;
  int spares = 0, spares_admitted = 0, spares_unused = 0, released = 0, released_stragglers = 0,
      with_errors = 0, stuck = 0;
  std::vector<std::string> losses;
  std::vector<bool> seen(static_cast<std::size_t>(std::max(o.ranks_started, 0)), false);
  for (const RankRecord& r : records) {
    if (r.member < static_cast<int>(seen.size())) seen[static_cast<std::size_t>(r.member)] = true;
    const std::string where = "member " + std::to_string(r.member) + " on " + r.host;
    const double after = r.end - (o.job_start > 0 ? o.job_start : r.start);
    if (r.runtime_started()) any_started = true;
    if (r.runtime_used()) any_runtime = true;
    if (r.start_timed_out()) {
      ++start_timeouts;
      v.lines.push_back(where + ": start-up did not complete in time; the start-up watchdog ended it " +
                        "(RINGMEND_START_TIMEOUT)");
    }
    if (r.recovery_timed_out())
      v.lines.push_back(where +
                        ": stuck in a call to MPI during a recovery or a change of membership; the recovery "
                        "watchdog ended it "
                        "(RINGMEND_RECOVERY_TIMEOUT; docs/troubleshooting.md)");
    // A crash is a bug, which another start would meet again: not counted.
    if (r.how == RankRecord::End::Signaled && !r.runtime_started() && !crash_signal(r.code))
      ++killed_starting;
    if (word(r, outcome::kSpare) == "1") ++spares;
    if (word(r, outcome::kAdmitted) == "1") ++spares_admitted;
    if (r.unadmitted_spare()) {
      // Not a member: neither a rank that finished nor one the job lost.
      if (word(r, outcome::kSpareUnused) == "1" && r.how == RankRecord::End::Exited && r.code == 0) {
        ++spares_unused;
      } else {
        losses.push_back("spare " + std::to_string(r.member) + " on " + r.host + ": " + how_it_ended(r) +
                         " before it was needed, " + seconds(after) + " after the start");
      }
      continue;
    }
    // Found a straggler: the share of their time the others waited for it.
    const std::string straggler = word(r, outcome::kStraggler);
    const std::string waited_for =
        straggler.empty()
            ? std::string()
            : "the others waited for it up to " +
                  std::to_string(static_cast<int>(std::strtod(straggler.c_str(), nullptr) * 100 + 0.5)) +
                  "% of their time";
    // A member released on request left the job early, then exited 0.
    if (r.released() && finished_normally(r)) {
      ++released;
      if (!straggler.empty()) {
        ++released_stragglers;
        v.lines.push_back(where + ": released as a straggler (" + waited_for + ")");
      }
      continue;
    }
    if (!straggler.empty() && finished_normally(r))
      v.lines.push_back(where + ": a straggler (" + waited_for +
                        "), kept: RINGMEND_STRAGGLER_POLICY=release would have released it");
    if (r.finalize_timed_out())
      v.lines.push_back(where + ": MPI_Finalize did not return in time; the shutdown watchdog ended it " +
                        "(RINGMEND_MPI_FINALIZE_TIMEOUT, RINGMEND_FINALIZE_TIMEOUT)");
    if (finished_normally(r)) {
      ++finished;
      if (const long errors = number(r, outcome::kErrors, 0); errors > 0) {
        ++with_errors;
        v.lines.push_back(where + ": finished, exit status 0, after " + std::to_string(errors) +
                          " collective error" + (errors == 1 ? "" : "s") + " its application saw");
      }
      if (number(r, outcome::kEpoch, -1) > epoch) {
        epoch = number(r, outcome::kEpoch, -1);
        size = number(r, outcome::kSize, -1);
      }
      recoveries = std::max(recoveries, number(r, outcome::kRecoveries, 0));
      continue;
    }
    if (survivor_failed(r)) {
      if (survivor_status == 0) survivor_status = r.code;
      losses.push_back(where + ": finished its work, then exited with status " + std::to_string(r.code));
      continue;
    }
    ++lost;
    if (!word(r, outcome::kExcludedBy).empty()) ++stuck;
    if (r.how == RankRecord::End::Exited && lost_status == 0) lost_status = r.code;
    if (r.mpi_init_failed()) ++init_failures;
    losses.push_back(where + ": " + (r.mpi_init_failed() ? "its MPI_Init failed; it " : "") +
                     how_it_ended(r) + (r.runtime_finished() ? " after finishing its work" : "") + ", " +
                     seconds(after) + " after the start (" + clock_time(r.end) + ", pid " +
                     std::to_string(r.pid) + ")");
  }
  for (std::size_t m = 0; m < seen.size(); ++m)
    if (!seen[m]) {
      ++lost;
      const std::string host = m < o.member_hosts.size() ? o.member_hosts[m] : "";
      const bool node_lost = std::find(o.lost_nodes.begin(), o.lost_nodes.end(), host) != o.lost_nodes.end();
      losses.push_back("member " + std::to_string(m) + (host.empty() ? "" : " on " + host) +
                       (node_lost ? ": lost with its node"
                        : !o.lost_nodes.empty()
                            ? ": ended with the job by the MPI runtime"
                            : ": no record of how it ended (its node may have been lost, or "
                              "its launcher killed)"));
    }

  std::string head =
      started + " ranks started" +
      (spares > 0 ? " (" + std::to_string(spares) + (spares == 1 ? " spare: " : " spares: ") +
                        std::to_string(spares_admitted) + " admitted, " + std::to_string(spares_unused) +
                        " not needed)"
                  : std::string()) +
      ", " + std::to_string(finished - with_errors) + " finished normally, " +
      (with_errors > 0 ? std::to_string(with_errors) + " finished after collective errors, "
                       : std::string()) +
      (released > 0 ? std::to_string(released) + " released" +
                          (released_stragglers > 0
                               ? " (" + std::to_string(released_stragglers) +
                                     (released_stragglers == 1 ? " as a straggler)" : " as stragglers)")
                               : std::string()) +
                          ", "
                    : std::string()) +
      std::to_string(lost) + " lost" +
      (stuck > 0 ? " (" + std::to_string(stuck) + " of them excluded as stuck)" : std::string());
  if (epoch >= 0)
    head += "; " + std::to_string(recoveries) + (recoveries == 1 ? " recovery" : " recoveries") +
            ", final size " + std::to_string(size) + " (epoch " + std::to_string(epoch) + ")";
  v.lines.insert(v.lines.begin(), head);
  // The shutdown: from the moment the last rank's Runtime began it (its
  // application's last call was done) to mpirun's exit.
  double last_call = 0;
  for (const RankRecord& r : records)
    if (r.runtime_finished())
      last_call = std::max(last_call, std::strtod(word(r, outcome::kShutdownFrom, "0").c_str(), nullptr));
  if (last_call > 0 && o.job_end >= last_call)
    v.lines.insert(v.lines.begin() + 1,
                   "the job ended " + seconds(o.job_end - last_call) + " after the last rank's last call");
  for (const auto& l : losses) v.lines.push_back("  " + l);
  if (init_failures > 0 && killed_starting > 0)
    v.lines.push_back(
        "  (a process that dies while MPI starts can make MPI_Init fail on others: MPI cannot "
        "connect them to it)");

  if (!o.lost_nodes.empty()) {
    v.exit_status = kExitNodeLost;
    v.lines.push_back(node_loss_line);
  } else if (survivor_status != 0) {
    v.exit_status = survivor_status;
    v.lines.push_back("exit status " + std::to_string(v.exit_status) +
                      ": a rank that finished its work exited with it");
  } else if (finished == 0 && any_runtime && !any_started && (killed_starting > 0 || start_timeouts > 0)) {
    // MPI cannot survive every death while it starts (Open MPI fails
    // MPI_Init on the other ranks, or never reports the death): no rank got
    // as far as its first epoch. Nothing ran; the job can simply be rerun.
    v.exit_status = kExitStartFailed;
    v.lines.push_back("exit status " + std::to_string(v.exit_status) + ": the job did not start: " +
                      (killed_starting > 0 ? "a rank died while MPI started, which MPI could not survive"
                                           : "no rank completed its start-up within RINGMEND_START_TIMEOUT") +
                      "; start the job again");
  } else if (finished == 0) {
    // Without a word from ringmend's Runtime nothing says what the ranks
    // were doing (a start is told from a run by that word alone).
    v.exit_status = lost_status != 0 ? lost_status : o.mpirun_status != 0 ? o.mpirun_status : 1;
    v.lines.push_back("exit status " + std::to_string(v.exit_status) + ": no rank finished normally" +
                      (any_runtime
                           ? ""
                           : ", and none reported reaching ringmend's Runtime (a program that does not "
                             "use it, or ranks lost before they started it)"));
  } else if (lost > 0 && o.fail_on_loss) {
    v.exit_status = 3;
    v.lines.push_back("exit status 3: ranks were lost and --fail-on-loss was given");
  } else {
    // "normally" only when it is true: a rank whose application saw
    // collective errors (and exited 0 all the same) is named.
    const std::string errors_seen = with_errors == 0 ? std::string()
                                                     : " (" + std::to_string(with_errors) +
                                                           (with_errors == 1 ? " rank" : " ranks") +
                                                           " after collective errors their application saw)";
    if (lost > 0)
      v.lines.push_back("exit status 0: the survivors finished" +
                        std::string(with_errors ? "" : " normally") +
                        " after the job recovered from its losses" + errors_seen);
    else
      v.lines.push_back("exit status 0: every rank finished" + std::string(with_errors ? "" : " normally") +
                        errors_seen);
  }
  return v;
}

}  // namespace ringmend::slurm
