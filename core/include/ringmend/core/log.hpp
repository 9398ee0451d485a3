// The log: one line per event, for operators (part of the bottom layer).
//
//   2026-11-23T16:30:01.123Z ringmend INFO  node7:41233 member 2 epoch 1: <message>
//
// Levels: error (the job or this rank cannot go on as asked), warn (it goes
// on, degraded: a fallback, a watchdog), info (what changed: one line per
// recovery; the default level), debug (each step, for developers).
// RINGMEND_LOG sets the level (RINGMEND_VERBOSE=1 means debug). Lines go to
// stderr, or to the application's sink (set_log_sink) instead.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ringmend {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };
const char* name_of(LogLevel level);  // "error", "warn", "info", "debug"

// Takes every line that passes the level, whole (without a newline), in
// place of stderr. Called from the thread that logs, one line at a time.
using LogSink = std::function<void(LogLevel level, const std::string& line)>;
void set_log_sink(LogSink sink);  // an empty function: stderr again

void set_log_level(LogLevel level);
bool log_enabled(LogLevel level);

// Where this process stands, for every following line (the runtime sets it
// for each epoch; -1: not known yet).
void set_log_place(int member, std::uint64_t epoch);

void log(LogLevel level, const std::string& message);

// "2.5 s": a duration in a message.
std::string seconds_text(double seconds);

// Where this process runs, as an operator names it: Slurm's node name
// (SLURMD_NODENAME) when there is one, else the host name.
std::string node_name();

}  // namespace ringmend
