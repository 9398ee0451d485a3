// How a member's run ended, as it tells the process that launched it.
//
// ringmend-run starts every rank through a small launcher (ringmend-rank)
// that sees the rank's exit status and signal, which MPI's launcher does not
// pass on under fault tolerance. The launcher opens a pipe and names its
// write end in RINGMEND_OUTCOME_FD; the Runtime writes there, as key=value
// words, what only the rank knows: that it finished normally, in which
// epoch and at which size, and whom it saw lost. Without the variable (any
// other launcher) nothing is written.
#pragma once

#include <string.h>

#include <string>

namespace ringmend::outcome {

// "SIGSEGV", for the log and the launcher's summary alike.
inline std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

inline constexpr const char* kFdVariable = "RINGMEND_OUTCOME_FD";

// The words (key=value, space-separated; values have no spaces).
inline constexpr const char* kRuntime = "runtime";             // 1: the Runtime is starting (before MPI_Init)
inline constexpr const char* kStarted = "started";             // 1: the Runtime started
inline constexpr const char* kStartTimeout = "start_timeout";  // 1: the start-up watchdog fired
inline constexpr const char* kMpiInitFailed = "mpi_init_failed";     // 1: this process's MPI_Init failed
inline constexpr const char* kRecoveryTimeout = "recovery_timeout";  // 1: the recovery watchdog fired
inline constexpr const char* kFinished = "finished";                 // 1: the Runtime shut down normally
inline constexpr const char* kEpoch = "epoch";                       // the last epoch
inline constexpr const char* kSize = "size";                         // ranks in it
inline constexpr const char* kRecoveries = "recoveries";             // membership changes seen
inline constexpr const char* kLost = "lost";                         // member ids, comma-separated, or -
inline constexpr const char* kFinalizeTimeout = "finalize_timeout";  // 1: the shutdown watchdog fired
inline constexpr const char* kShutdownFrom = "shutdown_from";  // when the shutdown began (s since the epoch)
inline constexpr const char* kSpare = "spare";                 // 1: started as a spare
inline constexpr const char* kAdmitted = "admitted";           // 1: a spare admitted as a member
inline constexpr const char* kSpareUnused = "spare_unused";    // 1: a spare the job ended without needing
inline constexpr const char* kReleased = "released";           // 1: a member released (it left the job)
inline constexpr const char* kErrors = "errors";               // collective errors its application saw
// Found a straggler (runtime/straggler_watch.hpp): the largest share of
// the comparison's time the others waited for it.
inline constexpr const char* kStraggler = "straggler";
// Written by ringmend-rank, not the Runtime: the process was excluded as
// stuck (core/progress_record.hpp) by this member, or by "launcher", after
// kStuckFor seconds without progress.
inline constexpr const char* kExcludedBy = "excluded_by";
inline constexpr const char* kStuckFor = "stuck_for";

// The exit status of a process whose start-up watchdog fired.
inline constexpr int kStartTimeoutStatus = 70;
// The exit status of a process whose recovery watchdog fired.
inline constexpr int kRecoveryTimeoutStatus = 71;

}  // namespace ringmend::outcome
