// PeerWatch: a watched process that dies is reported, before its pidfd is
// readable when it dies of a signal (the kernel still releasing its
// memory), and a process whose main thread ended while its other threads
// run on is not taken for a dead one.
#include "transport/peer_watch.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

namespace ringmend::transport {
namespace {

pid_t sleeping_child() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

// A child that runs `body` (which writes a byte to the fd it is given once
// it is ready, then waits), returned once the child is ready.
template <class Body>
pid_t ready_child(Body body) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    body(ready[1]);
    ::_exit(0);
  }
  ::close(ready[1]);
  char c;
  const bool ok = ::read(ready[0], &c, 1) == 1;
  ::close(ready[0]);
  return ok ? pid : -1;
}

// The index exited() reports within `seconds`, or -1.
int exited_within(const PeerWatch& watch, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (const int i = watch.exited(); i >= 0) return i;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return -1;
}

bool pidfd_readable(pid_t pid) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return true;  // gone
  pollfd p{fd, POLLIN, 0};
  const bool readable = ::poll(&p, 1, 0) > 0;
  ::close(fd);
  return readable;
}

TEST(PeerWatch, ReportsAKilledProcessAndSkipsItselfAndEmptySlots) {
  const pid_t a = sleeping_child(), b = sleeping_child();
  PeerWatch watch({0, ::getpid(), a, b});
  ASSERT_TRUE(watch.available());
  EXPECT_EQ(watch.descriptors().size(), 2u);
  EXPECT_EQ(exited_within(watch, 0.01), -1);
  ASSERT_EQ(::kill(b, SIGKILL), 0);
  EXPECT_EQ(exited_within(watch, 5), 3);
  EXPECT_TRUE(watch.has_exited(3));
  EXPECT_FALSE(watch.has_exited(2));
  EXPECT_EQ(watch.describe_exit(3), "process " + std::to_string(b) + " exited");
  ::kill(a, SIGKILL);
  ::waitpid(a, nullptr, 0);
  ::waitpid(b, nullptr, 0);
}

TEST(PeerWatch, ReportsAKilledProcessBeforeItsPidfdIsReadable) {
  // A child holding 1 GiB: the kernel takes milliseconds to release it
  // after the SIGKILL (a process that imported torch: 25-50 ms), and only
  // then is its pidfd readable.
  const pid_t child = ready_child([](int ready) {
    constexpr std::size_t kBytes = std::size_t{1} << 30;
    void* p = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) ::_exit(1);
    // Small pages, as most of a process's heap: a huge page is released at
    // once, 262144 small ones take milliseconds.
    ::madvise(p, kBytes, MADV_NOHUGEPAGE);
    std::memset(p, 1, kBytes);
    (void)::write(ready, "x", 1);
    ::pause();
  });
  ASSERT_GT(child, 0);
  PeerWatch watch({child});
  EXPECT_EQ(exited_within(watch, 0.002), -1);  // also lets the /proc period pass
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int reported = -1;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (reported < 0 && std::chrono::steady_clock::now() < end) reported = watch.exited();
  // Looked at after the report: a pidfd, once readable, stays so.
  const bool pidfd_readable_at_report = pidfd_readable(child);
  EXPECT_EQ(reported, 0);
  EXPECT_FALSE(pidfd_readable_at_report) << "reported only once the process had finished its exit";
  ::waitpid(child, nullptr, 0);
}

TEST(PeerWatch, AProcessWhoseMainThreadEndedIsAliveWhileItsOtherThreadsRun) {
  // The main thread ended (pthread_exit): a zombie with exit code 0, the
  // process alive; not to be taken for a process dying of a signal.
  const pid_t child = ready_child([](int ready) {
    static int fd;
    fd = ready;
    pthread_t t;
    ::pthread_create(
        &t, nullptr,
        [](void*) -> void* {
          (void)::write(fd, "x", 1);
          ::pause();
          return nullptr;
        },
        nullptr);
    // What pthread_exit() does, without its unwinding through the test's
    // frames: the calling thread alone ends.
    ::syscall(SYS_exit, 0);
  });
  ASSERT_GT(child, 0);
  PeerWatch watch({child});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the main thread has ended
  EXPECT_EQ(exited_within(watch, 0.05), -1);
  EXPECT_FALSE(watch.has_exited(0));
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  EXPECT_EQ(exited_within(watch, 5), 0);
  ::waitpid(child, nullptr, 0);
}

TEST(PeerWatch, AProcessRunningNormallyIsNotTakenForAnExitingOne) {
  const pid_t a = sleeping_child();
  PeerWatch watch({a});
  // Longer than many /proc check periods.
  EXPECT_EQ(exited_within(watch, 0.05), -1);
  EXPECT_FALSE(watch.has_exited(0));
  ::kill(a, SIGKILL);
  ::waitpid(a, nullptr, 0);
}

}  // namespace
}  // namespace ringmend::transport
