#include "slurm/job_outcome.hpp"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "ringmend/core/outcome.hpp"

namespace ringmend::slurm {
std::string RankRecord::word(const char* key, const std::string& otherwise) const {
  auto it = words.find(key);
  return it == words.end() ? otherwise : it->second;
}

long RankRecord::number(const char* key, long otherwise) const {
  const std::string v = word(key);
  char* stop = nullptr;
  const long n = std::strtol(v.c_str(), &stop, 10);
  return v.empty() || *stop ? otherwise : n;
}

std::string RankRecord::how_it_ended() const {
  if (const std::string by = word(outcome::kExcludedBy); !by.empty())
    return by == "launcher" ? "excluded as stuck (no progress for " + word(outcome::kStuckFor, "?") +
                                  " s) by its launcher, which killed it"
                            // Killed by that member, or by itself on that member's notice
                            // (runtime/hang_notices.hpp): either way that member's wait is the evidence.
                            : "excluded as stuck (no progress for " + word(outcome::kStuckFor, "?") +
                                  " s while member " + by + " waited for it) and killed";
  switch (how) {
    case RankRecord::End::Exited:
      return "exited with status " + std::to_string(code);
    case RankRecord::End::Signaled:
      if (code == SIGKILL) return "killed by SIGKILL";
      if (crash_signal(code))
        return "crashed with " + outcome::signal_name(code) +
               " (a crash is probably a bug, in the program or in ringmend: its output above may hold "
               "a backtrace)";
      return "ended by " + outcome::signal_name(code);
  }
  return "?";
}

bool RankRecord::runtime_finished() const { return word(outcome::kFinished) == "1"; }
bool RankRecord::finalize_timed_out() const { return word(outcome::kFinalizeTimeout) == "1"; }
bool RankRecord::runtime_used() const { return word(outcome::kRuntime) == "1" || runtime_started(); }
bool RankRecord::runtime_started() const { return word(outcome::kStarted) == "1" || runtime_finished(); }
bool RankRecord::start_timed_out() const { return word(outcome::kStartTimeout) == "1"; }
bool RankRecord::recovery_timed_out() const { return word(outcome::kRecoveryTimeout) == "1"; }
bool RankRecord::mpi_init_failed() const { return word(outcome::kMpiInitFailed) == "1"; }
bool RankRecord::unadmitted_spare() const {
  return word(outcome::kSpare) == "1" && word(outcome::kAdmitted) != "1";
}

bool RankRecord::released() const { return word(outcome::kReleased) == "1"; }

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
  r.member = static_cast<int>(r.number("member", -1));
  if (r.member < 0) return std::nullopt;  // not one of ours after all
  r.host = r.word("host", "?");
  r.pid = r.number("pid", 0);
  r.start = std::strtod(r.word("start", "0").c_str(), nullptr);
  r.end = std::strtod(r.word("end", "0").c_str(), nullptr);
  const std::string status = r.word("status");
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

bool pmix_plugin_ends_step(std::string_view line) {
  return line.find("mpi/pmix") != std::string_view::npos &&
         line.find("Error handler invoked") != std::string_view::npos;
}

}  // namespace ringmend::slurm
