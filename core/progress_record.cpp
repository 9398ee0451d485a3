#include "ringmend/core/progress_record.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <sstream>
#include <string_view>

namespace ringmend::progress {

namespace {

constexpr std::uint64_t kMagic = 0x72696e67'70726f67ULL;  // "ringprog"

// What /proc/<pid>/stat says after the command name (which may hold
// spaces and parentheses): field 3 (the state letter) onwards; empty when
// the process is gone. Read with read(2), not a stream: a process that
// dies between the open and the read makes the read fail with ESRCH, and
// libstdc++'s filebuf throws on a failed read whatever the stream's mask.
std::string stat_after_name(pid_t pid) {
  const int fd = ::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text;
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) text.clear();  // gone while being read
    break;
  }
  ::close(fd);
  const auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() ? std::string() : text.substr(close + 2);
}

// The start time in such a text (field 22, clock ticks since boot): with
// the pid, it names one process for ever.
std::uint64_t start_ticks_in(const std::string& fields_text) {
  std::istringstream fields(fields_text);
  std::string field;
  for (int i = 3; i <= 22; ++i)
    if (!(fields >> field)) return 0;
  return std::strtoull(field.c_str(), nullptr, 10);
}

std::uint64_t start_ticks_of(pid_t pid) { return start_ticks_in(stat_after_name(pid)); }

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }
int pidfd_send_signal(int fd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0));
}

}  // namespace

// The shared page. Written by its owner (and, once, by the member that
// excludes it); read by anyone of the machine.
struct RecordPage {
  std::uint64_t magic = kMagic;
  std::int32_t pid = 0;
  std::int32_t reserved = 0;
  std::uint64_t start_ticks = 0;
  std::atomic<std::int32_t> member{-1};
  std::atomic<std::uint32_t> phase{0};
  std::atomic<std::uint64_t> seq{0};
  std::atomic<std::uint64_t> stamp_ns{0};
  std::atomic<std::int32_t> excluded_by{-1};
  std::atomic<std::uint32_t> excluded_after_ms{0};
  // A sequence lock over phase, seq and the call: odd while the owner
  // writes them, so that a reader never pairs a collective number with
  // another collective's call.
  std::atomic<std::uint32_t> version{0};
  std::atomic<std::uint64_t> call_count{0};
  std::atomic<std::uint64_t> call_shape{0};
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free &&
                  std::atomic<std::int32_t>::is_always_lock_free,
              "the record is shared between processes");

const char* name_of(Phase phase) {
  switch (phase) {
    case Phase::Application:
      return "between collectives";
    case Phase::Collective:
      return "in a collective";
    case Phase::Recovery:
      return "in a recovery";
    case Phase::Finishing:
      return "finishing";
  }
  return "?";
}

namespace {

std::uint64_t read_ns(clockid_t clock) {
  timespec t{};
  ::clock_gettime(clock, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(t.tv_nsec);
}

}  // namespace

std::uint64_t monotonic_ns() { return read_ns(CLOCK_MONOTONIC); }

std::uint64_t coarse_monotonic_ns() {
  static const clockid_t clock = [] {
    timespec res{};
    const bool short_ticks =
        ::clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_sec == 0 && res.tv_nsec <= 4'000'000;
    return short_ticks ? CLOCK_MONOTONIC_COARSE : CLOCK_MONOTONIC;
  }();
  return read_ns(clock);
}

namespace {
constexpr std::string_view kRecordPrefix = "ringmend-progress-";  // then the pid
}  // namespace

std::string record_name(pid_t pid) { return "/" + std::string(kRecordPrefix) + std::to_string(pid); }

namespace {

// Records whose process is gone (killed, or ended without its destructor):
// removed by the next process of the machine that makes one.
void remove_stale_records() {
  DIR* dir = ::opendir("/dev/shm");
  if (!dir) return;
  const std::string prefix(kRecordPrefix);
  while (const dirent* e = ::readdir(dir)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(e->d_name + prefix.size(), &end, 10);
    if (pid > 0 && end && *end == 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      ::unlinkat(::dirfd(dir), e->d_name, 0);
  }
  ::closedir(dir);
}

}  // namespace

std::unique_ptr<OwnRecord> OwnRecord::create() {
  remove_stale_records();
  const pid_t pid = ::getpid();
  const std::string name = record_name(pid);
  // A record of an earlier process with this pid is stale: replaced.
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return nullptr;
  void* p = MAP_FAILED;
  if (::ftruncate(fd, sizeof(RecordPage)) == 0)
    p = ::mmap(nullptr, sizeof(RecordPage), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    return nullptr;
  }
  auto* shared = new (p) RecordPage;
  shared->pid = pid;
  shared->start_ticks = start_ticks_of(pid);
  shared->stamp_ns.store(monotonic_ns(), std::memory_order_release);
  return std::unique_ptr<OwnRecord>(new OwnRecord(shared, name));
}

OwnRecord::~OwnRecord() {
  ::munmap(shared_, sizeof(RecordPage));
  ::shm_unlink(name_.c_str());
}

void OwnRecord::set_member(int member) { shared_->member.store(member, std::memory_order_relaxed); }

void OwnRecord::enter(Phase phase, std::uint64_t seq, CallSignature call) {
  const std::uint32_t v = shared_->version.load(std::memory_order_relaxed);
  shared_->version.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  shared_->seq.store(seq, std::memory_order_relaxed);
  shared_->phase.store(static_cast<std::uint32_t>(phase), std::memory_order_relaxed);
  shared_->call_count.store(call.count, std::memory_order_relaxed);
  shared_->call_shape.store(call.shape, std::memory_order_relaxed);
  shared_->version.store(v + 2, std::memory_order_release);
  // Three phases a call (its settling, the collective, the application
  // after it): the coarse clock keeps that off the small calls' latency.
  shared_->stamp_ns.store(coarse_monotonic_ns(), std::memory_order_release);
}

void OwnRecord::stamp(std::uint64_t now_ns) { shared_->stamp_ns.store(now_ns, std::memory_order_release); }

namespace {

// Maps `pid`'s record read-write (exclude() writes into it); nothing when
// absent or not a record.
RecordPage* map_record(pid_t pid, bool writable) {
  const int fd = ::shm_open(record_name(pid).c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  // A record its owner has created but not sized yet (between its shm_open
  // and its ftruncate, at the process's start) has no page: reading the
  // mapping would raise SIGBUS in the reader (seen: ringmend-rank, which
  // watches its child from the start, crashed so). Not a record yet.
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(RecordPage))) {
    ::close(fd);
    return nullptr;
  }
  void* p =
      ::mmap(nullptr, sizeof(RecordPage), writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return nullptr;
  auto* shared = static_cast<RecordPage*>(p);
  if (shared->magic != kMagic || shared->pid != pid) {
    ::munmap(p, sizeof(RecordPage));
    return nullptr;
  }
  return shared;
}

struct Unmap {
  RecordPage* p;
  ~Unmap() {
    if (p) ::munmap(p, sizeof(RecordPage));
  }
};

}  // namespace

std::optional<Observation> observe(pid_t pid) {
  RecordPage* shared = map_record(pid, false);
  if (!shared) return std::nullopt;
  const Unmap unmap{shared};
  // Size 0 after a truncation by a new owner reads as a bus error; the
  // magic above was read from a full page, so the fields are there.
  const std::uint64_t ticks = start_ticks_of(pid);
  if (ticks != 0 && shared->start_ticks != 0 && ticks != shared->start_ticks) return std::nullopt;
  Observation o;
  o.pid = pid;
  o.member = shared->member.load(std::memory_order_relaxed);
  // The sequence lock's read side: retried while the owner writes (it
  // writes a few words, rarely), given up after a few tries (the call then
  // reads as not known; phase and seq as last read).
  for (int attempt = 0; attempt < 8; ++attempt) {
    const std::uint32_t before = shared->version.load(std::memory_order_acquire);
    o.phase = static_cast<Phase>(shared->phase.load(std::memory_order_relaxed));
    o.seq = shared->seq.load(std::memory_order_relaxed);
    const CallSignature call{shared->call_count.load(std::memory_order_relaxed),
                             shared->call_shape.load(std::memory_order_relaxed)};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (before % 2 == 0 && shared->version.load(std::memory_order_relaxed) == before) {
      o.call = call;
      break;
    }
  }
  const std::uint64_t stamp = shared->stamp_ns.load(std::memory_order_acquire);
  const std::uint64_t now = monotonic_ns();
  o.idle_seconds = now > stamp ? static_cast<double>(now - stamp) / 1e9 : 0.0;
  o.stamp_ns = stamp;
  o.excluded_by = shared->excluded_by.load(std::memory_order_relaxed);
  o.excluded_after = shared->excluded_after_ms.load(std::memory_order_relaxed) / 1000.0;
  return o;
}

bool is_stuck(const Observation& seen, std::uint64_t seq, double waited, double hang_timeout) {
  if (hang_timeout <= 0 || waited < hang_timeout || seen.idle_seconds < hang_timeout) return false;
  switch (seen.phase) {
    case Phase::Collective:
      return true;  // inside a collective, it shows no progress
    case Phase::Application:
      return seen.seq < seq;  // it has not come to the collective the judge waits in
    case Phase::Recovery:
    case Phase::Finishing:
      return false;
  }
  return false;
}

double StillInCollective::look(const std::optional<Observation>& seen, double dt) {
  const bool still = seen && seen->phase == Phase::Collective && seen->stamp_ns == stamp_;
  seconds_ = still ? seconds_ + dt : 0;
  stamp_ = seen ? seen->stamp_ns : 0;
  return seconds_;
}

bool is_stuck_in_collective(const Observation& seen, double hang_timeout) {
  return hang_timeout > 0 && seen.phase == Phase::Collective && seen.idle_seconds >= hang_timeout;
}

char process_state(pid_t pid) {
  const std::string fields = stat_after_name(pid);
  return fields.empty() ? '\0' : fields[0];
}

bool exclude(pid_t pid, int by, double idle_seconds, std::string& why) {
  const int fd = pidfd_open(pid);
  if (fd < 0) {
    why = errno == ESRCH ? "already gone" : std::string("pidfd_open: ") + std::strerror(errno);
    return false;
  }
  bool killed = false;
  {
    // The pidfd names one process; the record names it too when its start
    // time is that of the live `pid` (checked after the pidfd was opened,
    // so that the pid cannot be reused in between).
    RecordPage* shared = map_record(pid, true);
    const Unmap unmap{shared};
    if (!shared) {
      why = "it has no progress record";
    } else if (const std::string fields = stat_after_name(pid);
               fields.empty() || fields[0] == 'Z' || fields[0] == 'X') {
      why = "already gone";
    } else if (shared->start_ticks != start_ticks_in(fields)) {
      why = "the pid belongs to another process now";
    } else {
      shared->excluded_after_ms.store(static_cast<std::uint32_t>(idle_seconds * 1000),
                                      std::memory_order_relaxed);
      shared->excluded_by.store(by, std::memory_order_release);
      killed = pidfd_send_signal(fd, SIGKILL) == 0;
      if (!killed)
        why = errno == ESRCH ? "already gone" : std::string("pidfd_send_signal: ") + std::strerror(errno);
    }
  }
  ::close(fd);
  return killed;
}

void remove_record(pid_t pid) { ::shm_unlink(record_name(pid).c_str()); }

}  // namespace ringmend::progress
