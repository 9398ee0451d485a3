// What a process of a job is doing, readable by the other processes of its
// machine: the evidence of the hang detector (docs/recovery.md, "Stuck
// members").
//
// Every process of a job keeps one small record in shared memory
// (/dev/shm/ringmend-progress-<pid>): where it is (between collectives, in
// one, in a recovery), which collective it last entered, and when it last
// showed progress (a wait of the runtime's data path stamps it as it
// polls). The record outlives a stop: a process stopped by SIGSTOP, hung in
// a driver or livelocked in its own code leaves a stamp that ages, and its
// node mates (and its launcher, ringmend-rank) read the age. A reader that
// judges the process stuck kills it through a pidfd, checked against the
// process's start time, so that a reused pid is never hit, and writes into
// the record who excluded it (the launcher's summary names it).
//
// Plain POSIX, no library: the runtime writes records, ringmend-rank reads
// them.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace ringmend::progress {

enum class Phase : std::uint32_t {
  Application = 0,  // between collectives: the application's own code
  Collective = 1,   // inside a collective call (its waits stamp the record)
  Recovery = 2,     // in a membership change (bounded by its own timeouts)
  Finishing = 3,    // shutting down
};
const char* name_of(Phase phase);

// The collective a process is in, as exact numbers (no hash): the element
// (or byte) count, and the kind, type, operation and root packed by the
// runtime. Node mates waiting in the same collective compare them: two
// processes in the same collective number with different calls will never
// meet (an application that called a barrier on one rank and a broadcast
// on another), and say so at once instead of at the call's timeout.
// All zero: not known.
struct CallSignature {
  std::uint64_t count = 0;
  std::uint64_t shape = 0;
  bool known() const { return count != 0 || shape != 0; }
  bool operator==(const CallSignature&) const = default;
};

// CLOCK_MONOTONIC in nanoseconds: one clock for every process of a machine.
std::uint64_t monotonic_ns();
// The same clock read at the kernel's tick (CLOCK_MONOTONIC_COARSE, at
// most 4 ms behind; CLOCK_MONOTONIC where its ticks are longer): a few
// nanoseconds instead of tens, for stamps judged in seconds.
std::uint64_t coarse_monotonic_ns();

// The name of process `pid`'s record (for shm_open).
std::string record_name(pid_t pid);

struct RecordPage;  // the shared page (progress_record.cpp)

// This process's record: created when the Runtime starts, removed when the
// process ends normally (the launcher removes what a killed one leaves).
class OwnRecord {
 public:
  // Nothing when /dev/shm cannot be used (the detector is then blind to
  // this process, which it says once).
  static std::unique_ptr<OwnRecord> create();
  ~OwnRecord();
  OwnRecord(const OwnRecord&) = delete;
  OwnRecord& operator=(const OwnRecord&) = delete;

  void set_member(int member);
  // Enters `phase` (at collective `seq`, whose call is `call`); stamps.
  void enter(Phase phase, std::uint64_t seq, CallSignature call = {});
  // Progress now (`now_ns`: monotonic_ns()).
  void stamp(std::uint64_t now_ns);

 private:
  OwnRecord(RecordPage* shared, std::string name) : shared_(shared), name_(std::move(name)) {}
  RecordPage* shared_;
  std::string name_;
};

// What a reader sees of another process's record.
struct Observation {
  pid_t pid = 0;
  int member = -1;
  Phase phase = Phase::Application;
  std::uint64_t seq = 0;       // the last collective it entered
  CallSignature call;          // ... and its call (when the process said it)
  double idle_seconds = 0;     // since its last stamp
  std::uint64_t stamp_ns = 0;  // the last stamp itself (a new one: progress)
  int excluded_by = -1;        // the member that excluded it as stuck, kByLauncher, or -1
  double excluded_after = 0;   // ... after this many seconds without progress
};

// Reads process `pid`'s record; nothing when it has none, or when the
// record belongs to an earlier process of the same pid.
std::optional<Observation> observe(pid_t pid);

// Whether a process whose record reads `seen` is stuck, as judged by a
// member that has waited `waited` seconds in collective `seq`: it has not
// reached that collective, or shows no progress inside one, for
// `hang_timeout` seconds while the judge waited as long. A process in a
// recovery or finishing is left to those steps' own bounds.
bool is_stuck(const Observation& seen, std::uint64_t seq, double waited, double hang_timeout);
// The same for a process's own launcher, which sees no collective: stuck
// when inside a collective without progress for `hang_timeout`.
bool is_stuck_in_collective(const Observation& seen, double hang_timeout);

// The `by` of an exclusion by the process's own launcher (ringmend-rank).
inline constexpr int kByLauncher = -2;

// The launcher's rule, look after look: how long a process has stayed
// inside a collective with the same stamp. It compares the stamps, not
// their ages: a process that stamps every 20 ms, looked at every 100 ms,
// shows ages that can grow for many looks in a row while it progresses.
class StillInCollective {
 public:
  // One look, `dt` seconds after the previous one (`seen`: nothing when
  // the process has no record); returns the seconds without progress.
  double look(const std::optional<Observation>& seen, double dt);

 private:
  double seconds_ = 0;
  std::uint64_t stamp_ = 0;
};

// Writes into `pid`'s record that member `by` excluded it after
// `idle_seconds` without progress, then kills it with SIGKILL through a
// pidfd (after checking that the pidfd names the process of the record).
// False when it was already gone or could not be killed (`why` says).
bool exclude(pid_t pid, int by, double idle_seconds, std::string& why);

// The state letter of process `pid` in /proc/PID/stat (R, S, D, T for
// stopped, t for traced, Z for a zombie, ...), or 0 when it is gone.
char process_state(pid_t pid);

// Removes a record left by a process that ended (its launcher's clean-up).
void remove_record(pid_t pid);

}  // namespace ringmend::progress
