#include <gtest/gtest.h>

#include <chrono>

#include "ringmend/core/error.hpp"
#include "runtime/fault_injection.hpp"

using namespace ringmend;

TEST(FaultSpec, ParsesRules) {
  auto rules = parse_fault_spec("rank=2,call=5,phase=allgather,step=1; rank=0,call=*,phase=recovery,epoch=1");
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].rank, 2);
  EXPECT_EQ(rules[0].call, 5);
  EXPECT_EQ(rules[0].phase, FaultPhase::Allgather);
  EXPECT_EQ(rules[0].step, 1);
  EXPECT_EQ(rules[0].epoch, -1);
  EXPECT_EQ(rules[1].call, -1);
  EXPECT_EQ(rules[1].phase, FaultPhase::Recovery);
  EXPECT_EQ(rules[1].epoch, 1);
}

TEST(FaultSpec, EmptyMeansNoFaults) { EXPECT_TRUE(parse_fault_spec("").empty()); }

TEST(FaultSpec, MalformedRulesAreClearErrors) {
  for (const char* bad :
       {"rank=1", "rank=1,call=2,phase=sometime", "rank=x,call=1,phase=start",
        "rank=1,call=1,phase=start,colour=red", "rank=1 call=1 phase=start", "rank=-1,call=1,phase=start",
        "rank=1,call=1,phase=start,stall=0", "rank=1,call=1,phase=start,stall=soon",
        "rank=1,call=1,phase=start,stall=1e9", "rank=1,call=1,phase=start,exit=2,stall=1"}) {
    try {
      parse_fault_spec(bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::BadEnvironment);
      EXPECT_NE(std::string(e.what()).find("RINGMEND_FAULT"), std::string::npos);
    }
  }
}

TEST(FaultInjector, OnlyThisRanksRulesArm) {
  FaultInjector other(parse_fault_spec("rank=3,call=1,phase=start"), 1, "");
  EXPECT_FALSE(other.armed());
  other.at(FaultPhase::Start, 1, 0, 0);  // must not kill this process
  FaultInjector mine(parse_fault_spec("rank=1,call=1,phase=start"), 1, "");
  EXPECT_TRUE(mine.armed());
}

TEST(FaultInjector, KillsTheProcessAtTheMatchingPoint) {
  FaultInjector f(parse_fault_spec("rank=0,call=4,phase=allgather,step=2"), 0, "");
  f.at(FaultPhase::Allgather, 4, 1, 0);  // wrong step: survives
  f.at(FaultPhase::Allgather, 3, 2, 0);  // wrong call: survives
  EXPECT_EXIT(f.at(FaultPhase::Allgather, 4, 2, 0), ::testing::KilledBySignal(SIGKILL), "");
}

TEST(FaultInjector, AStallSleepsThenGoesOn) {
  const auto rules = parse_fault_spec("rank=0,call=2,phase=recovery,stall=0.2");
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_DOUBLE_EQ(rules[0].stall_seconds, 0.2);
  FaultInjector f(rules, 0, "");
  const auto start = std::chrono::steady_clock::now();
  f.at(FaultPhase::Recovery, 1, 0, 0);  // wrong call: no stall
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(150));
  f.at(FaultPhase::Recovery, 2, 0, 0);  // the process is still here after it
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
}

TEST(FaultInjector, DiesTheWayTheRuleSays) {
  const auto rules = parse_fault_spec(
      "rank=0,call=1,phase=start,signal=SEGV;rank=0,call=2,phase=start,exit=3;rank=0,call=3,phase=start,"
      "signal=TERM");
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0].signal, SIGSEGV);
  EXPECT_EQ(rules[1].signal, 0);
  EXPECT_EQ(rules[1].exit_status, 3);
  FaultInjector f(rules, 0, "");
  // Under AddressSanitizer its own SIGSEGV handler reports and exits: any
  // death counts there.
  EXPECT_DEATH(f.at(FaultPhase::Start, 1, 0, 0), "dies of SIGSEGV");
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_EXIT(f.at(FaultPhase::Start, 1, 0, 0), ::testing::KilledBySignal(SIGSEGV), "dies of SIGSEGV");
#endif
  EXPECT_EXIT(f.at(FaultPhase::Start, 2, 0, 0), ::testing::ExitedWithCode(3), "exits with status 3");
  EXPECT_EXIT(f.at(FaultPhase::Start, 3, 0, 0), ::testing::KilledBySignal(SIGTERM), "dies of SIGTERM");
  for (const char* bad : {"rank=0,call=1,phase=start,signal=HUP", "rank=0,call=1,phase=start,exit=256"})
    EXPECT_THROW(parse_fault_spec(bad), Error) << bad;
}
