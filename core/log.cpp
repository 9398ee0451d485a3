#include "ringmend/core/log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace ringmend {
namespace {

struct LogState {
  std::mutex mutex;
  LogSink sink;
  int member = -1;
  std::uint64_t epoch = 0;
  std::string host;
};

LogState& state() {
  static LogState s;
  return s;
}

std::atomic<int> g_level{static_cast<int>(LogLevel::Info)};

// UTC, to the millisecond: lines from several nodes sort together.
std::string timestamp() {
  const auto now = std::chrono::system_clock::now();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char text[96];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return text;
}

}  // namespace

const char* name_of(LogLevel level) {
  switch (level) {
    case LogLevel::Error:
      return "error";
    case LogLevel::Warn:
      return "warn";
    case LogLevel::Info:
      return "info";
    case LogLevel::Debug:
      return "debug";
  }
  return "?";
}

void set_log_sink(LogSink sink) {
  std::lock_guard lock(state().mutex);
  state().sink = std::move(sink);
}

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }

bool log_enabled(LogLevel level) { return static_cast<int>(level) <= g_level.load(); }

void set_log_place(int member, std::uint64_t epoch) {
  std::lock_guard lock(state().mutex);
  state().member = member;
  state().epoch = epoch;
}

void log(LogLevel level, const std::string& message) {
  if (!log_enabled(level)) return;
  static const char* const tags[] = {"ERROR", "WARN ", "INFO ", "DEBUG"};
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.host.empty()) s.host = node_name();
  std::string line = timestamp() + " ringmend " + tags[static_cast<int>(level)] + " " + s.host + ":" +
                     std::to_string(::getpid());
  if (s.member >= 0) line += " member " + std::to_string(s.member) + " epoch " + std::to_string(s.epoch);
  line += ": " + message;
  if (s.sink) {
    s.sink(level, line);
    return;
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

std::string node_name() {
  if (const char* slurm = std::getenv("SLURMD_NODENAME"); slurm && *slurm) return slurm;
  char name[256] = "?";
  ::gethostname(name, sizeof name - 1);
  return name;
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

}  // namespace ringmend
