#include "runtime/fault_injection.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sstream>
#include <thread>

#include "ringmend/core/error.hpp"
#include "ringmend/core/log.hpp"
#include "ringmend/core/outcome.hpp"
#include "ringmend/core/parse_whole.hpp"

namespace ringmend {
namespace {

[[noreturn]] void bad(const std::string& rule, const std::string& why) {
  throw Error(Errc::BadEnvironment, "RINGMEND_FAULT rule '" + rule + "' is not valid: " + why +
                                        " (expected rank=R,call=C|*,phase=P[,step=S][,epoch=E]"
                                        "[,signal=KILL|SEGV|ABRT|BUS|TERM|STOP|exit=N|stall=SECONDS])");
}

std::int64_t to_int(const std::string& rule, const std::string& key, const std::string& v) {
  const auto out = parse_whole<std::int64_t>(v);
  if (!out || *out < 0) bad(rule, key + " must be a non-negative integer, got '" + v + "'");
  return *out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

FaultPhase to_phase(const std::string& rule, const std::string& v) {
  if (v == "start") return FaultPhase::Start;
  if (v == "reduce_scatter") return FaultPhase::ReduceScatter;
  if (v == "allgather") return FaultPhase::Allgather;
  if (v == "alltoall") return FaultPhase::Alltoall;
  if (v == "broadcast") return FaultPhase::Broadcast;
  if (v == "end") return FaultPhase::End;
  if (v == "recovery") return FaultPhase::Recovery;
  if (v == "rebuild") return FaultPhase::Rebuild;
  if (v == "wireup") return FaultPhase::Wireup;
  if (v == "attach") return FaultPhase::Attach;
  if (v == "admit") return FaultPhase::Admit;
  if (v == "spare") return FaultPhase::Spare;
  if (v == "gpu_copy_in") return FaultPhase::GpuCopyIn;
  if (v == "nccl_reduce_scatter") return FaultPhase::NcclReduceScatter;
  if (v == "nccl_allgather") return FaultPhase::NcclAllgather;
  if (v == "gpu_copy_out") return FaultPhase::GpuCopyOut;
  bad(rule, "unknown phase '" + v +
                "' (start, reduce_scatter, allgather, alltoall, broadcast, end, recovery, rebuild, wireup, "
                "attach, admit, "
                "spare, gpu_copy_in, nccl_reduce_scatter, nccl_allgather, gpu_copy_out)");
}

int to_signal(const std::string& rule, const std::string& v) {
  if (v == "KILL") return SIGKILL;
  if (v == "SEGV") return SIGSEGV;
  if (v == "ABRT") return SIGABRT;
  if (v == "BUS") return SIGBUS;
  if (v == "TERM") return SIGTERM;
  if (v == "STOP") return SIGSTOP;
  bad(rule, "unknown signal '" + v + "' (KILL, SEGV, ABRT, BUS, TERM, STOP)");
}

[[noreturn]] void die(int sig, int exit_status) {
  if (sig == 0) ::_exit(exit_status);
  if (sig == SIGSEGV) {
    // A real invalid access, as a bug would make: the handlers that MPI and
    // UCX install for it run as they would then. (A page without access,
    // not a null pointer, which UBSan would stop at first.)
    void* page = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page != MAP_FAILED) *static_cast<volatile int*>(page) = 1;
  }
  ::kill(::getpid(), sig);
  ::signal(sig, SIG_DFL);  // an application's handler may have returned
  ::kill(::getpid(), sig);
  ::_exit(128 + sig);
}

}  // namespace

std::vector<FaultRule> parse_fault_spec(const std::string& spec) {
  std::vector<FaultRule> rules;
  std::stringstream all(spec);
  std::string rule;
  while (std::getline(all, rule, ';')) {
    if (rule.find_first_not_of(" \t") == std::string::npos) continue;
    FaultRule r;
    bool has_rank = false, has_call = false, has_phase = false;
    std::stringstream fields(rule);
    std::string field;
    while (std::getline(fields, field, ',')) {
      const auto eq = field.find('=');
      if (eq == std::string::npos) bad(rule, "'" + field + "' is not key=value");
      const std::string key = trim(field.substr(0, eq)), value = trim(field.substr(eq + 1));
      if (key == "rank")
        r.rank = static_cast<int>(to_int(rule, key, value)), has_rank = true;
      else if (key == "call")
        r.call = value == "*" ? -1 : to_int(rule, key, value), has_call = true;
      else if (key == "phase")
        r.phase = to_phase(rule, value), has_phase = true;
      else if (key == "step")
        r.step = static_cast<int>(to_int(rule, key, value));
      else if (key == "epoch")
        r.epoch = to_int(rule, key, value);
      else if (key == "signal")
        r.signal = to_signal(rule, value);
      else if (key == "exit") {
        const std::int64_t status = to_int(rule, key, value);
        if (status > 255) bad(rule, "exit must be 0-255");
        r.exit_status = static_cast<int>(status);
        r.signal = 0;
      } else if (key == "stall") {
        const auto seconds = parse_whole<double>(value);
        if (!seconds || !(*seconds > 0 && *seconds <= 86400))
          bad(rule, "stall must be a number of seconds above 0 (at most a day), got '" + value + "'");
        r.stall_seconds = *seconds;
      } else
        bad(rule, "unknown key '" + key + "'");
    }
    if (!has_rank || !has_call || !has_phase) bad(rule, "rank, call and phase are required");
    if (r.stall_seconds > 0 && (r.signal != SIGKILL || r.exit_status != 0))
      bad(rule, "stall cannot be combined with signal or exit");
    rules.push_back(r);
  }
  return rules;
}

FaultInjector::FaultInjector(std::vector<FaultRule> rules, int member, std::string record_file)
    : member_(member), record_file_(std::move(record_file)) {
  for (const FaultRule& r : rules)
    if (r.rank == member) rules_.push_back(r);
  fired_.assign(rules_.size(), false);
}

void FaultInjector::at(FaultPhase phase, std::uint64_t call, int step, std::uint64_t epoch) const {
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    const FaultRule& r = rules_[i];
    if (r.phase != phase || r.step != step) continue;
    if (r.call >= 0 && static_cast<std::uint64_t>(r.call) != call) continue;
    if (r.epoch >= 0 && static_cast<std::uint64_t>(r.epoch) != epoch) continue;
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    char line[128];
    const int len = std::snprintf(line, sizeof line, "%d %lld.%09ld\n", member_,
                                  static_cast<long long>(now.tv_sec), now.tv_nsec);
    if (!record_file_.empty()) {
      int fd = ::open(record_file_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        (void)!::write(fd, line, static_cast<std::size_t>(len));
        ::close(fd);
      }
    }
    fired_[i] = true;
    if (r.stall_seconds > 0) {
      log(LogLevel::Info, "fault injection: member " + std::to_string(member_) + " stalls for " +
                              seconds_text(r.stall_seconds) + " (call " + std::to_string(call) + ", epoch " +
                              std::to_string(epoch) + ")");
      std::this_thread::sleep_for(std::chrono::duration<double>(r.stall_seconds));
      continue;
    }
    const std::string how = r.signal == 0         ? "exits with status " + std::to_string(r.exit_status)
                            : r.signal == SIGKILL ? "SIGKILLs itself"
                            : r.signal == SIGSTOP ? "stops itself (SIGSTOP, for ever: a stuck member)"
                                                  : "dies of " + outcome::signal_name(r.signal);
    log(LogLevel::Info, "fault injection: member " + std::to_string(member_) + " " + how + " (call " +
                            std::to_string(call) + ", epoch " + std::to_string(epoch) + ")");
    std::fflush(stderr);
    die(r.signal, r.exit_status);
  }
}

void FaultInjector::warn_unfired() const {
  // Every rule here is this rank's, and a rule that fires ends the process
  // unless it stalls: any other rule still here at shutdown never matched.
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    if (fired_[i]) continue;
    const FaultRule& r = rules_[i];
    log(LogLevel::Warn, "fault injection: the rule for member " + std::to_string(member_) + " (call " +
                            std::to_string(r.call) + ", step " + std::to_string(r.step) +
                            ") never fired; no collective reached that phase and step");
  }
}

}  // namespace ringmend
