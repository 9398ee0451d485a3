// How every wait of ringmend idles: the one spin / yield / sleep / poll policy.
//
// A wait first spins (the common case is a peer a few hundred nanoseconds
// behind), then yields its core between rounds (ranks may outnumber cores,
// and a rank spinning for long would starve the very peer it waits for),
// and once it has waited long (a peer still computing, on another node or
// in the application's own thread beside a non-blocking call) it sleeps
// between rounds: a thread that only yields still takes its share of a core
// from the threads that compute. A sleeping wait answers up to kSleep late,
// small beside the wait already spent.
// All along, from time to time it is time to poll for failures (a dead
// peer, a revoked membership, a deadline), which costs far more than one
// round (a system call and MPI's progress engine), so it is not done every
// round: every so many spins, and while yielding every kPollInterval of
// time, since a yield costs anything from a fraction of a microsecond alone
// on a core to a time slice when ranks outnumber cores (counting yields,
// 16 of them, polled every few microseconds there: 4 ranks on 2 cores took
// 19 us per small allreduce instead of 10). With more ranks on the machine
// than CPUs, spinning only delays the peer: the wait yields almost at once.
#pragma once

#include <sched.h>
#include <time.h>

#include <chrono>

namespace ringmend::transport {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

class Backoff {
 public:
  // Idle rounds spent spinning before the first yield (~tens of
  // microseconds), and how often a spinning / yielding wait polls.
  static constexpr unsigned kSpinRounds = 4096;
  static constexpr unsigned kSpinRoundsOversubscribed = 16;
  static constexpr unsigned kPollEverySpins = 256;
  static constexpr std::chrono::microseconds kPollInterval{100};
  // Yielding rounds before the wait sleeps (~1 ms alone on a core), and the
  // sleep of each round after.
  static constexpr unsigned kYieldRounds = 1024;
  static constexpr long kSleepNanoseconds = 50'000;

  explicit Backoff(bool oversubscribed = false)
      : spin_rounds_(oversubscribed ? kSpinRoundsOversubscribed : kSpinRounds) {}

  // One idle round: spin or yield. True when the caller should now poll
  // for failures.
  bool idle() {
    ++rounds_;
    if (rounds_ < spin_rounds_) {
      cpu_relax();
      return rounds_ % kPollEverySpins == 0;
    }
    if (rounds_ < spin_rounds_ + kYieldRounds) {
      sched_yield();
      const auto now = std::chrono::steady_clock::now();
      if (rounds_ == spin_rounds_) last_poll_ = now;  // the first yield: count from here
      if (now - last_poll_ < kPollInterval) return false;
      last_poll_ = now;
      return true;
    }
    const timespec sleep{0, kSleepNanoseconds};
    nanosleep(&sleep, nullptr);
    return true;
  }
  // Something moved: the next idle round spins again.
  void reset() { rounds_ = 0; }

 private:
  unsigned spin_rounds_;
  unsigned rounds_ = 0;
  std::chrono::steady_clock::time_point last_poll_{};  // while yielding
};

}  // namespace ringmend::transport
